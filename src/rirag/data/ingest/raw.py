"""The raw records every reader of :mod:`rirag.data.ingest` yields (documents, passages, what was dropped and why),
the text patterns they share (rule numbers, heading references) and the decoding of a source file's bytes."""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from rirag.errors import DataError
from rirag.io import check_input_size, read_input_bytes, read_input_chunks


@dataclass
class RawPassage:
    rule: str  # the number as printed ("" when none)
    headings: tuple[str, ...]
    lines: list[str]
    label: str = ""  # PassageID, set when the document's passages are numbered
    given_id: str | None = None  # the id a record gave it (JSONL/CSV ``id``), else a UUID5 is made
    #: Whether its reader read the source's structure (HTML): the marks below are then all it has, and are written.
    structured: bool = False
    #: Footnote marks: (line, start, end, target) -- characters ``start:end`` of ``lines[line]``, and the id in the
    #: page of the footnote the mark links to ("" when it links nowhere in the page).
    marks: list[tuple[int, int, int, str]] = field(default_factory=list)
    #: List items: (line, level, label) -- ``lines[line]`` opens an item nested ``level`` lists deep (1: a list
    #: of the passage's own), labelled ``label`` in its text ("(a)"; "" when its text has no label).
    items: list[tuple[int, int, str]] = field(default_factory=list)
    anchor: str = ""  # a footnote's id in its page ("footnote-16"): what a mark's target names

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def extend(self, other: "RawPassage") -> None:
        """``other``'s lines (a list or table that joins this passage) added after this passage's own."""
        n = len(self.lines)
        self.lines.extend(other.lines)
        self.marks.extend((line + n, a, b, t) for line, a, b, t in other.marks)
        self.items.extend((line + n, level, label) for line, level, label in other.items)

    def part(self, first: int, last: int, label: str) -> "RawPassage":
        """Lines ``first:last`` as a passage of their own (a part of a long passage), its marks kept."""
        return RawPassage(self.rule, self.headings, self.lines[first:last], label, structured=self.structured,
                          marks=[(line - first, a, b, t) for line, a, b, t in self.marks if first <= line < last],
                          items=[(line - first, v, x) for line, v, x in self.items if first <= line < last],
                          anchor=self.anchor)

    def fields(self) -> dict:
        """The record fields of what the structure says (written for a structured passage only): ``FootnoteMarks``
        ({start, end, mark, target}: offsets into the passage text), ``ListItems`` ({start, level, label}: the
        offset of the item's line), ``FootnoteId`` (a footnote's id in its page, "" for any other passage)."""
        starts, at = [], 0
        for line in self.lines:
            starts.append(at)
            at += len(line) + 1
        return {
            "FootnoteMarks": [{"start": starts[line] + a, "end": starts[line] + b, "mark": self.lines[line][a:b],
                               "target": target} for line, a, b, target in self.marks],
            "ListItems": [{"start": starts[line], "level": level, "label": label}
                          for line, level, label in self.items],
            "FootnoteId": self.anchor,
        }


#: What opens a list item's text as its label: a bracket, a closing mark, or a bullet.
BULLETS = frozenset("•·▪–-*")


def item_label(line: str) -> str:
    """The label a list item's text opens with ("(a)", "ii.", "1.2", "•"), "" when it has none: a number, one or two
    letters or a roman numeral (five characters at most) that a bracket or a full stop closes, a dotted number, or a
    bullet."""
    first = line.split(" ", 1)[0]
    if first in BULLETS:
        return first
    core = first.removeprefix("(").removesuffix(")").removesuffix(".")
    if not 0 < len(core) <= 5:
        return ""
    if core.isalnum():
        counted = core.isdigit() or len(core) <= 2 or not core.strip("ivxlcIVXLC")  # a number, letter or roman
        return first if first != core and counted else ""
    return first if all(part.isdigit() for part in core.split(".")) else ""


@dataclass
class RawDocument:
    key: str  # stable document key (source file stem less any capture-date suffix)
    title: str
    source: str  # file name (and record range) it came from
    passages: list[RawPassage] = field(default_factory=list)  # a reader that builds the document whole fills it
    whole: bool = False  # its passages are never cut into parts (records: a record is the user's passage)


@dataclass
class Dropped:
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, where: str, n: int = 1) -> None:
        self.counts[reason] += n
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(where)


def document_key(stem: str) -> str:
    """The file stem less a trailing capture-date-and-hash suffix ("_21-01-2026__4611300738")."""
    return re.sub(r"_\d{2}-\d{2}-\d{4}(?:__[0-9a-f]+)?$", "", stem)


#: Byte-order marks and their codecs (UTF-32 before UTF-16: FF FE 00 00 starts with FF FE).
BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
                    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
#: The codec of a file that is neither UTF-8 nor declares its charset: Windows-1252, the superset of Latin-1 that
#: WHATWG decodes "iso-8859-1" as (Latin-1 itself for the five bytes Windows-1252 leaves undefined).
FALLBACK_CODEC = "cp1252"
LATIN_CODECS = frozenset({"iso8859-1", "cp1252", "ascii"})


#: Bytes read (and decoded) at a time: a source is never held whole.
CHUNK_BYTES = 1 << 20
#: What ``str.splitlines`` breaks a line at (text files), and what a record file's lines end with (CSV, JSONL).
LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
NEWLINES = re.compile("\r\n|[\n\r]")


class SourceText:
    """A source file's text, decoded as it is read, chunk by chunk, as many times as a reader needs; its codec
    chosen in this order: by its byte-order mark (UTF-8, UTF-16, UTF-32); UTF-8 when every byte decodes as such;
    the charset it declares (``declared``: a reader's look at its first 4 KiB, e.g. an HTML ``<meta charset>``);
    else Windows-1252 (Latin-1). A file with NUL bytes and no byte-order mark is not text; a file over the input
    limit (:func:`rirag.io.max_input_bytes`, ``--max-input-bytes``) is refused unread. A pipe is read once, bounded,
    and held; a file never is."""

    def __init__(self, path: Path, declared: Callable[[bytes], str | None] | None = None) -> None:
        self.path = Path(path)
        self._data = None if check_input_size(self.path) or self.path.is_file() else read_input_bytes(self.path)
        self.codec = self._codec(declared)

    def chunks(self) -> Iterator[bytes]:
        if self._data is not None:
            return (self._data[i:i + CHUNK_BYTES] for i in range(0, len(self._data), CHUNK_BYTES))
        return read_input_chunks(self.path, CHUNK_BYTES)

    def _head(self, size: int = 4096) -> bytes:
        """The file's first ``size`` bytes (or all of a shorter file): its byte-order mark, its declared charset."""
        head = b""
        for chunk in self.chunks():
            head += chunk
            if len(head) >= size:
                break
        return head[:size]

    def _codec(self, declared) -> str:
        head = self._head()
        for bom, codec in BYTE_ORDER_MARKS:
            if head.startswith(bom):
                return self._checked(codec, "its byte-order mark")
        utf8, nul = codecs.getincrementaldecoder("utf-8")(), False
        ok = True
        for chunk in self.chunks():
            if b"\x00" in chunk:
                nul = True
                break
            if ok:
                try:
                    utf8.decode(chunk)
                except UnicodeDecodeError:
                    ok = False
        if nul:
            raise DataError(f"{self.path}: not text (NUL bytes and no byte-order mark)")
        if ok:
            try:
                utf8.decode(b"", final=True)
                return "utf-8"
            except UnicodeDecodeError:
                pass
        charset = declared(head) if declared is not None else None
        if charset:
            return self._checked(charset, f"its declared charset {charset!r}")
        return self._checked(FALLBACK_CODEC, "neither UTF-8 nor a declared charset: Windows-1252")

    def _checked(self, codec: str, why: str) -> str:
        """The codec's name once every byte of the file decodes by it (a Latin codec: Windows-1252, else Latin-1,
        which decodes every byte)."""
        try:
            name = codecs.lookup(codec).name
        except LookupError:
            raise DataError(f"{self.path}: unknown charset {codec!r} ({why})") from None
        if name in LATIN_CODECS:
            name = "cp1252"
            try:
                self._decode_all(name)
            except UnicodeDecodeError:
                return "latin-1"
            return name
        try:
            self._decode_all(name)
        except UnicodeDecodeError as err:
            raise DataError(f"{self.path}: not {name} text as {why} says (byte {err.start}: {err.reason})") from None
        return name

    def _decode_all(self, name: str) -> None:
        """Decode the whole file by ``name``, keeping nothing; an error's ``start`` is its offset in the file."""
        decoder, offset = codecs.getincrementaldecoder(name)(), 0
        for chunk in self.chunks():
            pending = len(decoder.getstate()[0])
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                err.start += offset - pending
                raise
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as err:
            err.start += offset - len(decoder.getstate()[0])
            raise

    def text_chunks(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder(self.codec)()
        for chunk in self.chunks():
            text = decoder.decode(chunk)
            if text:
                yield text
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest

    def utf8_chunks(self) -> Iterator[bytes]:
        """The text re-encoded as UTF-8, chunk by chunk (what a parser told ``encoding="utf-8"`` reads)."""
        return (text.encode("utf-8") for text in self.text_chunks())

    def lines(self, breaks: re.Pattern = LINE_BREAKS, keepends: bool = False) -> Iterator[str]:
        """The text's lines as ``str.splitlines`` gives them (``breaks``: :data:`LINE_BREAKS`), or as a file opened
        with ``newline=""`` does (:data:`NEWLINES`), never holding more than one line and one chunk."""
        held, parts = "", []
        for text in self.text_chunks():
            text, held = held + text, ""
            if text.endswith("\r"):  # a \r\n may span the seam: the \r waits for the next chunk
                text, held = text[:-1], "\r"
            start = 0
            for m in breaks.finditer(text):
                parts.append(text[start:m.end() if keepends else m.start()])
                yield "".join(parts)
                parts.clear()
                start = m.end()
            if start < len(text):
                parts.append(text[start:])
        if held:
            parts.append(held if keepends else "")
        if parts:
            yield "".join(parts)


def read_text(path: Path, declared: Callable[[bytes], str | None] | None = None) -> str:
    """The whole text of a source file (:class:`SourceText`): for a reader that needs it whole (docutils)."""
    return "".join(SourceText(path, declared).text_chunks())


#: A leading rule or paragraph number in text (plain text, never markup): "1.2", "1.2.3A", "3A.1", "50.ZA", "12.",
#: "(3)", and the
#: hyphenated and lettered article numbers of civil-law codes: "313-1" (numbers of 1-3 digits either side of the
#: hyphen, so a year range "2019-20" is never one), "4A", "10a".
RULE_NUMBER = re.compile(
    r"^((?:\d{1,3}(?:-\d{1,3})+|\d+[A-Z]{0,2}(?:\.(?:\d+[A-Z]{0,2}|[A-Z]{1,2}))*)[a-z]?\.?|\(\w{1,4}\))\s+(?=\S)")
#: The short reference of a heading, used to qualify a rule number that repeats in a document ("Article 277a").
HEADING_REF = re.compile(
    r"^((?:Article|Section|Chapter|Part|Annex|Schedule|Regulation|Rule|Appendix)\s+[\w.]+(?:-\w+)*)", re.IGNORECASE)
#: A paragraph number that means something only inside its article or section: "2.", "3", "(4)", "(b)".
BARE_NUMBER = re.compile(r"^\(?[0-9A-Za-z]{1,4}\)?\.?$")
