"""The reader of Word files (``.docx``; ``python-docx`` opens the package, its body is read as the document's XML in
order): what Word itself knows of each paragraph makes the structure.

- Style "Title", then "Heading 1".."Heading 9": the title (the first heading before any text) and the heading path;
  a table of contents (a content control, or paragraphs in the "TOC" styles) is dropped.
- A paragraph with list numbering (``w:numPr``) or in a list style is a list item, its depth Word's list level + 1;
  its label is the one its text opens with ("(a)"), as the HTML reader reads it (numbers Word adds are not text).
- Tables: one line a row, cells joined by `` | ``, a header row (Word's repeated header, or a first row all bold)
  carried by the rows after it ("Header: cell; ...").
- Footnotes: a reference is its number, a word of its own in the text (``FootnoteMarks``), and the footnote a passage
  after the paragraph ("footnote 3"); a superscript number is a mark too, and a paragraph that opens with a mark's
  number ("3. ...") is its footnote (footnotes typed as text, as converters from HTML write them).
- Deleted text of tracked changes is not read; inserted text is.

:mod:`rirag.data.ingest.blocks` makes the passages (rule numbers, in-text headings in bold, lists and tables joining
the rule before them). A file that is not a Word package, or a damaged one, is refused naming the file."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Iterator

from rirag.data.ingest.blocks import CELL_SEPARATOR, FOOTNOTE, HEADING, ITEM, PARAGRAPH, ROW, Block, document_passages
from rirag.data.ingest.raw import Dropped, RawDocument, RawPassage, document_key
from rirag.errors import DataError
from rirag.io import check_input_size

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
FOOTNOTES_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes"
LIST_STYLES = ("list", "bullet")  # a style name that makes a paragraph a list item without numbering


def _open(path: Path):
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    check_input_size(path)
    try:
        return docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as err:
        raise DataError(f"{path}: not a readable Word (.docx) file ({err or type(err).__name__})") from None
    except Exception as err:  # lxml's XMLSyntaxError and the like: a damaged package
        raise DataError(f"{path}: a damaged Word (.docx) file ({type(err).__name__}: {err})") from None


def read_docx_file(path: Path, root: Path, dropped: Dropped) -> Iterator[tuple[RawDocument, RawPassage]]:
    """One document of the file, keyed by its file stem less any capture-date suffix."""
    document = _open(path)
    key = document_key(path.stem)
    doc = RawDocument(key, (document.core_properties.title or "").strip() or key, path.relative_to(root).as_posix())
    if doc.title != key:
        doc.title = " ".join(doc.title.split())
    yield from document_passages(doc, _Body(document, dropped, path.name).blocks(), dropped, path)


def _styles(document) -> dict[str, str]:
    """Style id -> its name, lower case ("heading 2")."""
    return {s.style_id: (s.name or "").lower() for s in document.styles}


def _footnotes(document) -> dict[str, str]:
    """Footnote id -> its text (the separators Word keeps as footnotes -1 and 0 left out)."""
    from lxml import etree

    for rel in document.part.rels.values():
        if rel.reltype == FOOTNOTES_REL and not rel.is_external:
            root = etree.fromstring(rel.target_part.blob)
            notes = {}
            for note in root.iter(f"{W}footnote"):
                if note.get(f"{W}type") in (None, "normal"):
                    text = " ".join(" ".join(_text(p)[0] for p in note.iter(f"{W}p")).split())
                    notes[note.get(f"{W}id")] = text
            return notes
    return {}


def _on(props, name: str) -> bool:
    """Whether a run property (``w:b``, ...) is on: present and not ``w:val="0"``/``"false"``."""
    el = props.find(f"{W}{name}") if props is not None else None
    return el is not None and el.get(f"{W}val") not in ("0", "false")


def _text(p, notes: dict[str, str] | None = None, refs: list[str] | None = None) -> tuple[str, list, bool]:
    """A paragraph's text, its marks (start, end) and whether all its text is bold. A footnote reference is its
    number (counted in ``refs``, its id appended there), a superscript number a mark."""
    out: list[str] = []
    marks: list[tuple[int, int]] = []
    bold = True
    for run in p.iter(f"{W}r"):
        if any(a.tag == f"{W}del" for a in run.iterancestors()):
            continue
        props = run.find(f"{W}rPr")
        sup = props is not None and any(v.get(f"{W}val") == "superscript" for v in props.iter(f"{W}vertAlign"))
        for el in run:
            if el.tag == f"{W}t" and el.text:
                if sup and el.text.strip().isdigit():
                    _mark(out, marks, el.text.strip())
                else:
                    out.append(el.text)
                    bold = bold and (_on(props, "b") or not el.text.strip())
            elif el.tag in (f"{W}tab", f"{W}br", f"{W}cr"):
                out.append(" ")
            elif el.tag == f"{W}footnoteReference" and refs is not None and el.get(f"{W}id") in (notes or {}):
                refs.append(el.get(f"{W}id"))
                _mark(out, marks, str(len(refs)))
    text = "".join(out)
    return text, marks, bold and bool(text.strip())


def _mark(out: list[str], marks: list, mark: str) -> None:
    """``mark`` added to ``out`` as a word of its own."""
    if out and not out[-1].endswith(" "):
        out.append(" ")
    at = sum(map(len, out))
    out.append(mark + " ")
    marks.append((at, at + len(mark)))


def _normalised(text: str, marks: list) -> tuple[str, list]:
    """Whitespace collapsed, the marks moved with their text."""
    out, spans, at = [], [], 0
    starts = {a: b for a, b in marks}
    for i, word in _words(text):
        if out:
            at += 1
        if i in starts:
            spans.append((at, at + starts[i] - i))
        out.append(word)
        at += len(word)
    return " ".join(out), spans


def _words(text: str) -> Iterator[tuple[int, str]]:
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        j = i
        while j < n and not text[j].isspace():
            j += 1
        if j > i:
            yield i, text[i:j]
        i = j


class _Body:
    """The blocks of a Word document's body, in order."""

    def __init__(self, document, dropped: Dropped, name: str) -> None:
        self.document, self.dropped, self.name = document, dropped, name
        self.styles = _styles(document)
        self.notes = _footnotes(document)
        self.refs: list[str] = []
        self.marked: set[str] = set()  # superscript numbers seen: a paragraph opening with one is that footnote

    def blocks(self) -> Iterator[Block]:
        for child in self.document.element.body.iterchildren():
            if child.tag == f"{W}p":
                yield from self.paragraph(child)
            elif child.tag == f"{W}tbl":
                yield from self.table(child)
            elif child.tag == f"{W}sdt":
                self.dropped.add("table of contents", f"{self.name}: a content control")

    def style(self, p) -> str:
        el = p.find(f"{W}pPr/{W}pStyle")
        return self.styles.get(el.get(f"{W}val"), "") if el is not None else ""

    def paragraph(self, p) -> Iterator[Block]:
        style = self.style(p)
        if style.startswith("toc"):
            self.dropped.add("table of contents", f"{self.name}: {style}")
            return
        first = len(self.refs)
        raw, raw_marks, bold = _text(p, self.notes, self.refs)
        text, marks = _normalised(raw, raw_marks)
        if text:
            yield self._block(p, style, text, marks, bold)
        for n, ref in enumerate(self.refs[first:], first + 1):
            yield Block(FOOTNOTE, f"{n} {self.notes[ref]}", note=str(n))

    def _block(self, p, style: str, text: str, marks: list, bold: bool) -> Block:
        self.marked.update(text[a:b] for a, b in marks)
        if style == "title":
            return Block(HEADING, text, level=0)
        if style.startswith("heading ") and style[8:].strip().isdigit():
            return Block(HEADING, text, level=int(style[8:]))
        note = text.split(" ", 1)[0].rstrip(".")
        if note in self.marked and text.split(" ", 1)[0] in (note, f"{note}."):
            self.marked.discard(note)
            return Block(FOOTNOTE, text, marks=marks, note=note)
        level = p.find(f"{W}pPr/{W}numPr/{W}ilvl")
        if level is not None or p.find(f"{W}pPr/{W}numPr") is not None:
            depth = int(level.get(f"{W}val", "0")) + 1 if level is not None else 1
            return Block(ITEM, text, level=depth, marks=marks)
        if any(s in style for s in LIST_STYLES):  # "List Number 2": a list style's level is its number
            last = style.rsplit(" ", 1)[-1]
            return Block(ITEM, text, level=int(last) if last.isdigit() else 1, marks=marks)
        return Block(PARAGRAPH, text, marks=marks, strong=bold)

    def table(self, tbl) -> Iterator[Block]:
        header: list[str] | None = None
        rows = [tr for tr in tbl.iter(f"{W}tr")]
        for i, tr in enumerate(rows):
            cells, bolds = [], []
            for tc in tr.iter(f"{W}tc"):
                parts = [_text(p) for p in tc.iter(f"{W}p")]
                cells.append(" ".join(" ".join(t for t, _, _ in parts).split()))
                bolds.append(all(b for t, _, b in parts if t.strip()))
            if not any(cells):
                continue
            repeated = tr.find(f"{W}trPr/{W}tblHeader") is not None
            if header is None and i == 0 and (repeated or all(bolds)) and len(rows) > 1:
                header = cells
                continue
            if header and len(header) == len(cells):
                yield Block(ROW, "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c))
            else:
                yield Block(ROW, CELL_SEPARATOR.join(c for c in cells if c))
