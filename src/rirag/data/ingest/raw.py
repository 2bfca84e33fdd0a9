"""The raw records every reader of :mod:`rirag.data.ingest` yields (documents, passages, what was dropped and why),
the text patterns they share (rule numbers, heading references) and the decoding of a source file's bytes."""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rirag.errors import DataError
from rirag.io import read_input_bytes


@dataclass
class RawPassage:
    rule: str  # the number as printed ("" when none)
    headings: tuple[str, ...]
    lines: list[str]
    label: str = ""  # PassageID, set when the document's passages are numbered
    given_id: str | None = None  # the id a record gave it (JSONL/CSV ``id``), else a UUID5 is made

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class RawDocument:
    key: str  # stable document key (source file stem less any capture-date suffix)
    title: str
    source: str  # file name (and record range) it came from
    passages: list[RawPassage] = field(default_factory=list)
    labelled: bool = False  # the reader numbered its passages itself (records: their ids are checked on the labels)


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


def read_text(path: Path, declared: Callable[[bytes], str | None] | None = None) -> str:
    """The text of a source file, in this order: by its byte-order mark (UTF-8, UTF-16, UTF-32); as UTF-8 when it
    decodes as such; by the charset it declares (``declared``: a reader's look at its first bytes, e.g. an HTML
    ``<meta charset>``); else as Windows-1252 (Latin-1). A file with NUL bytes and no byte-order mark is not text;
    a file over the input limit (:func:`rirag.io.max_input_bytes`, ``--max-input-bytes``) is refused unread."""
    data = read_input_bytes(path)  # bounded: a file over the input limit is refused before a byte is read
    for bom, codec in BYTE_ORDER_MARKS:
        if data.startswith(bom):
            return _decode(data, codec, path, "its byte-order mark")
    if b"\x00" in data:
        raise DataError(f"{path}: not text (NUL bytes and no byte-order mark)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    charset = declared(data) if declared is not None else None
    if charset:
        return _decode(data, charset, path, f"its declared charset {charset!r}")
    return _decode(data, FALLBACK_CODEC, path, "neither UTF-8 nor a declared charset: Windows-1252")


def _decode(data: bytes, codec: str, path: Path, why: str) -> str:
    try:
        name = codecs.lookup(codec).name
    except LookupError:
        raise DataError(f"{path}: unknown charset {codec!r} ({why})") from None
    if name in LATIN_CODECS:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return data.decode("latin-1")  # every byte decodes
    try:
        return data.decode(name)
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not {name} text as {why} says (byte {err.start}: {err.reason})") from None


#: A leading rule or paragraph number in text (plain text, never markup): "1.2", "1.2.3A", "12.", "(3)".
RULE_NUMBER = re.compile(r"^(\d+(?:\.\d+)*[A-Z]?\.?|\(\w{1,4}\))\s+(?=\S)")
#: The short reference of a heading, used to qualify a rule number that repeats in a document ("Article 277a").
HEADING_REF = re.compile(r"^((?:Article|Section|Chapter|Part|Annex|Schedule|Regulation|Rule|Appendix)\s+[\w.]+)",
                         re.IGNORECASE)
#: A paragraph number that means something only inside its article or section: "2.", "3", "(4)", "(b)".
BARE_NUMBER = re.compile(r"^\(?[0-9A-Za-z]{1,4}\)?\.?$")
