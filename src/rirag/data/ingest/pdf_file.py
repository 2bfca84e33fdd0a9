"""The reader of PDF files (``.pdf``; PDFium through ``pypdfium2``): the text layer read line by line with each line's
place, font size and weight, and the document's structure recovered from the layout, never from patterns over
characters alone:

- running headers and footers (a line in the top or bottom tenth of a page whose place and first words, digits
  aside, are there on at least half of the pages and on two; on a one-page file a line there in a smaller font than
  the text; any line within 4 % of the page's top or bottom edge), page numbers ("3", "3/27", "Page 3 of 27") and
  a table of contents' lines (a dot leader and a page number) are dropped;
- two columns are read column by column (lines wholly left and wholly right of the page's middle, between lines that
  cross it);
- lines are joined into paragraphs (a new one at a wider gap than the line spacing, a change of font size, an outdent,
  a rule number at the left margin or a list label); a word hyphenated at a line's end is joined, its hyphen kept only
  where the document writes the word with one elsewhere (or never without);
- a heading is a line in a font larger than the text's (its level by its size; the first one is the title), a bold
  line a little larger than the text an in-text heading where the rules are numbered; a
  superscript number is a footnote mark, a paragraph in a smaller font that opens with a number is that footnote;
- a line of cells (wide gaps between its words) is a table row; a list item is an indented paragraph that opens with a
  label ("(a)", "ii.", "•"), its depth by its indent.

:mod:`rirag.data.ingest.blocks` makes the passages of these blocks. A file without a text layer (a scan) is refused as
such (OCR is out of scope), an encrypted or damaged file with PDFium's reason; neither stops the folder."""

from __future__ import annotations

import ctypes
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from rirag.data.ingest.blocks import (
    CELL_SEPARATOR,
    FOOTNOTE,
    HEADING,
    ITEM,
    PARAGRAPH,
    ROW,
    Block,
    document_passages,
    split_rule,
)
from rirag.data.ingest.raw import Dropped, RawDocument, RawPassage, document_key, item_label
from rirag.errors import DataError
from rirag.io import check_input_size

#: A line that is only a page number: "3", "- 3 -", "3/27", "3 of 27", "Page 3", "Page 3 of 27".
PAGE_NUMBER = re.compile(r"^(?:page\s+)?[-–—]?\s*\d{1,4}\s*(?:(?:/|of)\s*\d{1,4})?\s*[-–—]?$", re.IGNORECASE)
#: A line of a table of contents: a dot leader and a page number ("1 Application ........ 3").
TOC_LINE = re.compile(r"(?:\.\s?){4,}\s*\d{1,4}$|…\s*\d{1,4}$")
#: The share of a page's height, at its top and at its bottom, where running headers and footers are looked for.
MARGIN_BAND = 0.1
#: A gap between two words wider than this many font sizes separates table cells (or a number from its text).
CELL_GAP = 0.75
#: A heading's font is at least this much larger than the text's; a footnote's or a mark's this much smaller.
HEADING_RATIO, SMALL_RATIO = 1.15, 0.85
#: A hyphen at a line's end, until the document's words say whether it is part of the word (PDFium marks it so).
SOFT = "\x02"
HYPHENATED = re.compile(r"(\w+)\x02\s*(\w*)")
#: A bold paragraph in a font at least this much larger than the text's may be an in-text heading (one in the text's
#: size is a table's header or a caption as often: the PRA's bold "Table 1: ..." inside a rule).
STRONG_RATIO = 1.04
#: A gap between lines wider than this many font sizes (baseline to baseline) starts a new paragraph.
PARAGRAPH_GAP = 1.6


@dataclass
class Line:
    text: str  # cells or a number apart from its text separated by "\t"
    x0: float
    x1: float
    top: float
    bottom: float  # PDF space: y grows upwards
    size: float
    bold: bool
    page: int
    marks: list[tuple[int, int]] = field(default_factory=list)


def _open(path: Path):
    import pypdfium2 as pdfium

    check_input_size(path)
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as err:
        why = str(err)
        if "password" in why.lower():
            raise DataError(f"{path}: encrypted PDF (a password is needed to read it)") from None
        raise DataError(f"{path}: not a readable PDF ({why})") from None


def read_pdf_file(path: Path, root: Path, dropped: Dropped) -> Iterator[tuple[RawDocument, RawPassage]]:
    """One document of the file, keyed by its file stem less any capture-date suffix, its passages once the whole
    file is read (headers and footers are known only from all its pages)."""
    pdf = _open(path)
    try:
        pages = [_page_lines(pdf, i) for i in range(len(pdf))]
    finally:
        pdf.close()
    if not any(lines for lines, _, _ in pages):
        raise DataError(f"{path}: no text layer (a scanned PDF? OCR is not done here)"
                        if pages else f"{path}: no pages")
    lines = _body(pages, dropped, path.name)
    key = document_key(path.stem)
    doc = RawDocument(key, key, path.relative_to(root).as_posix())
    yield from document_passages(doc, _blocks(lines), dropped, path)


# -- lines of a page ---------------------------------------------------------------------------------------------------

def _page_lines(pdf, index: int) -> tuple[list[Line], float, float]:
    """A page's lines in PDFium's order (superscript numbers made marks of the line they belong to), its width and
    height."""
    import pypdfium2.raw as pdfium_c

    page = pdf[index]
    width, height = page.get_size()
    textpage = page.get_textpage()
    try:
        raw, n = textpage.raw, textpage.count_chars()
        text = textpage.get_text_range() if n else ""
        if len(text) != n:  # characters outside the BMP: one UTF-16 pair each in the text, one character in PDFium
            text = "".join(chr(pdfium_c.FPDFText_GetUnicode(raw, i)) for i in range(n))
        lines: list[Line] = []
        start = 0
        for end, skip in _breaks(raw, text):
            line = _line(raw, text, start, end, index)
            if line is not None:
                _place(lines, line)
            start = end + skip
    finally:
        textpage.close()
        page.close()
    return lines, width, height


def _breaks(raw, text: str) -> Iterator[tuple[int, int]]:
    """Where the page's lines end, and the characters the break takes: PDFium's line breaks, and a hyphen at a
    line's end that PDFium joined to whatever the page draws next (a URL cut at a page's end runs into the next
    page's running header otherwise)."""
    for m in re.finditer("\r\n|\n|[\ufffe\x02]", text):
        if m.group(0) in "\ufffe\x02":
            if m.end() < len(text) and not text[m.end()].isspace() \
                    and abs(_box(raw, m.start() - 1)[2] - _box(raw, m.end())[2]) > 2:
                yield m.end(), 0  # the hyphen stays with its line
            continue
        yield m.start(), len(m.group(0))
    yield len(text), 0


_BOX = tuple(ctypes.c_double() for _ in range(4))


def _box(raw, i: int) -> tuple[float, float, float, float]:
    import pypdfium2.raw as pdfium_c

    left, right, bottom, top = _BOX
    pdfium_c.FPDFText_GetCharBox(raw, i, left, right, bottom, top)
    return left.value, right.value, bottom.value, top.value


_FONT_NAME = ctypes.create_string_buffer(256)
_FONT_FLAGS = ctypes.c_int()
#: What a bold font's name says (subset fonts report their weight unreliably: DejaVu Serif Bold as 455).
BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demi")


def _bold(raw, i: int) -> bool:
    import pypdfium2.raw as pdfium_c

    if pdfium_c.FPDFText_GetFontWeight(raw, i) >= 600:
        return True
    pdfium_c.FPDFText_GetFontInfo(raw, i, _FONT_NAME, 256, ctypes.byref(_FONT_FLAGS))
    name = _FONT_NAME.value.decode("latin-1").lower()
    return any(b in name for b in BOLD_NAMES)


def _line(raw, text: str, start: int, end: int, page: int) -> Line | None:
    """Characters ``start:end`` of a page as a line: its box from its first and last characters, its font from its
    start, middle and end (a superscript mark may open or close it), its text from :func:`_line_text`."""
    import pypdfium2.raw as pdfium_c

    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start >= end:
        return None
    size = max(pdfium_c.FPDFText_GetFontSize(raw, i) for i in (start, (start + end) // 2, end - 1)) or 1.0
    x0, _, bottom, top = _box(raw, start)
    _, x1, last_bottom, last_top = _box(raw, end - 1)
    out, marks = _line_text(raw, text, start, end, size)
    bold = _bold(raw, start) and _bold(raw, end - 1)
    line, marks = _paired(out, marks)
    return Line(line, x0, x1, max(top, last_top), min(bottom, last_bottom), size, bold, page, marks)


def _line_text(raw, text: str, start: int, end: int, size: float) -> tuple[str, list[tuple[int, int]]]:
    """A line's text: a tab at each gap wider than :data:`CELL_GAP` font sizes (never before a superscript), a
    superscript number a word of its own (its place kept as a mark), a line-end hyphen PDFium marks as :data:`SOFT`."""
    import pypdfium2.raw as pdfium_c

    out: list[str] = []
    marks: list[tuple[int, int]] = []
    i = start
    while i < end:
        c = text[i]
        j = i + 1
        if c.isspace():
            while j < end and text[j].isspace():
                j += 1
            gap = _box(raw, j)[0] - _box(raw, i - 1)[1]
            wide = gap > CELL_GAP * size and pdfium_c.FPDFText_GetFontSize(raw, j) >= SMALL_RATIO * size
            out.append("\t" if wide else " ")
        elif c.isdigit() and pdfium_c.FPDFText_GetFontSize(raw, i) < SMALL_RATIO * size:  # a superscript mark
            while j < end and text[j].isdigit():
                j += 1
            if out and out[-1] not in " \t":
                out.append(" ")
            at = sum(map(len, out))
            out.append(text[i:j])
            marks.append((at, at + j - i))
            if j < end and not text[j].isspace():
                out.append(" ")
        else:
            out.append(SOFT if c in "\ufffe\x02\u00ad" else c)  # PDFium's mark of a hyphen at a line's end
        i = j
    return "".join(out), marks


def _paired(text: str, marks: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with the UTF-16 surrogate pairs PDFium gives for a character outside the BMP made that character
    (a lone one replaced), its marks moved with it."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text, marks
    out, at, moved = [], 0, {}
    i = 0
    while i < len(text):
        moved[i] = at
        pair = text[i:i + 2]
        if len(pair) == 2 and "\ud800" <= pair[0] <= "\udbff" and "\udc00" <= pair[1] <= "\udfff":
            out.append(pair.encode("utf-16-le", "surrogatepass").decode("utf-16-le"))
            i += 2
        else:
            out.append("\ufffd" if "\ud800" <= pair[0] <= "\udfff" else pair[0])
            i += 1
        at += 1
    moved[len(text)] = at
    return "".join(out), [(moved[a], moved[b]) for a, b in marks]


def _place(lines: list[Line], line: Line) -> None:
    """Add ``line`` after ``lines``: a superscript number becomes a mark at the end of the line it is raised above,
    and the rest of a line PDFium broke at that mark joins it again."""
    last = lines[-1] if lines else None
    if last is not None and len(line.text) <= 4 and line.text.replace(",", "").isdigit() \
            and line.size < SMALL_RATIO * last.size and line.bottom > last.bottom and line.bottom < last.top:
        at = len(last.text) + 1
        last.text += " " + line.text
        last.marks.append((at, at + len(line.text)))
        last.x1 = max(last.x1, line.x1)
        return
    if last is not None and abs(line.bottom - last.bottom) < 0.3 * last.size and line.x0 >= last.x1 - 1 \
            and abs(line.size - last.size) < 0.5:
        gap = line.x0 - last.x1
        at = len(last.text) + 1
        last.text += ("\t" if gap > CELL_GAP * last.size else " ") + line.text
        last.marks.extend((a + at, b + at) for a, b in line.marks)
        last.x1 = line.x1
        return
    lines.append(line)


# -- the document's body -----------------------------------------------------------------------------------------------

#: The share of a page's height at its top and bottom edges that is the printer's, never a page's text (Chromium's
#: running header and footer lie there).
EDGE = 0.04
#: How much of a margin line's text (digits aside) must repeat: a printer truncates a long running footer to make
#: room for its page number ("...scheme_21-0… 9/14", "...scheme_21-… 10/14").
SHAPE_CHARS = 24


def _shape(line: Line) -> tuple[int, str]:
    """What a running header or footer keeps from page to page: its place and its text, digits aside."""
    return round(line.bottom), re.sub(r"\d+", "#", " ".join(line.text.split()))[:SHAPE_CHARS]


def _body(pages: list[tuple[list[Line], float, float]], dropped: Dropped, name: str) -> list[Line]:
    """Every page's lines less running headers, footers and page numbers, each page in reading order."""
    body_size = _body_size(line for lines, _, _ in pages for line in lines)
    seen: Counter = Counter()
    for lines, _, height in pages:
        seen.update({_shape(line) for line in lines if _in_margin(line, height)})
    repeated = max(2, (len(pages) + 1) // 2)
    out: list[Line] = []
    for lines, width, height in pages:
        kept = []
        for line in lines:
            margin = _in_margin(line, height)
            if line.top < EDGE * height or line.bottom > (1 - EDGE) * height \
                    or (margin and (seen[_shape(line)] >= repeated or (len(pages) == 1 and line.size < body_size))) \
                    or (margin and PAGE_NUMBER.match(line.text.strip())):
                dropped.add("header or footer", f"{name}: page {line.page + 1}")
            elif TOC_LINE.search(line.text):
                dropped.add("table of contents", f"{name}: page {line.page + 1}")
            else:
                kept.append(line)
        out.extend(_columns(kept, width))
    return out


def _in_margin(line: Line, height: float) -> bool:
    return line.bottom > (1 - MARGIN_BAND) * height or line.top < MARGIN_BAND * height


def _body_size(lines) -> float:
    sizes: Counter = Counter()
    for line in lines:
        sizes[round(line.size * 2) / 2] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 1.0


def _columns(lines: list[Line], width: float) -> list[Line]:
    """A page's lines in reading order: where lines lie wholly left and wholly right of the page's middle (two
    columns, five lines each at least), each stretch between lines that cross it is read left column, then right."""
    mid = width / 2
    left = [ln for ln in lines if ln.x1 < mid]
    right = [ln for ln in lines if ln.x0 > mid]
    if len(left) < 5 or len(right) < 5:
        return lines
    out: list[Line] = []
    stretch: list[Line] = []
    for line in sorted(lines, key=lambda ln: -ln.top):
        if line.x0 <= mid <= line.x1:
            out += [ln for ln in stretch if ln.x1 < mid] + [ln for ln in stretch if ln.x1 >= mid]
            stretch = []
            out.append(line)
        else:
            stretch.append(line)
    return out + [ln for ln in stretch if ln.x1 < mid] + [ln for ln in stretch if ln.x1 >= mid]


# -- blocks ------------------------------------------------------------------------------------------------------------

@dataclass
class _Para:
    lines: list[Line]
    kind: str = PARAGRAPH
    level: int = 0


def _blocks(lines: list[Line]) -> Iterator[Block]:
    """The document's blocks from its body lines."""
    if not lines:
        return
    body = _body_size(lines)
    sized = [ln.x0 for ln in lines if abs(ln.size - body) < 0.5]
    maker = _Blocks(body, min(sized or [ln.x0 for ln in lines]),
                    sorted({round(ln.size, 1) for ln in lines if ln.size >= HEADING_RATIO * body}, reverse=True))
    paras = _paragraphs(lines, body, maker.margin)
    if len(paras) == 1 and all(ln.bold for ln in paras[0].lines):  # a page that is its title alone
        paras[0].kind = HEADING
    words = _vocabulary(paras)
    for para in paras:
        text, marks = _joined(para.lines, words)
        block = maker.block(para, text, marks)
        if block is not None:
            yield block


class _Blocks:
    """What each paragraph is: the document's text size, left margin and heading sizes, the list indents and the
    table being read."""

    def __init__(self, body: float, margin: float, heading_sizes: list[float]) -> None:
        self.body, self.margin, self.heading_sizes = body, margin, heading_sizes
        self.indents: list[float] = []
        self.header: list[str] | None = None  # the table's header cells (a first row in bold)
        self.first_row = ""  # the table's first row as printed (printed again atop a page: dropped)

    def block(self, para: _Para, text: str, marks: list[tuple[int, int]]) -> Block | None:
        first = para.lines[0]
        if para.kind == HEADING:
            size = round(first.size, 1)
            level = self.heading_sizes.index(size) if size in self.heading_sizes else 1
            return Block(HEADING, text.replace("\t", " "), level=level)
        if first.size < SMALL_RATIO * self.body and text.split(" ", 1)[0].rstrip(".").isdigit():
            return Block(FOOTNOTE, text.replace("\t", " "), marks=marks, note=text.split(" ", 1)[0].rstrip("."))
        if abs(first.x0 - self.margin) < 2 and split_rule(text.replace("\t", " ", 1))[0]:
            self.indents, self.header, self.first_row = [], None, ""
            return Block(PARAGRAPH, text.replace("\t", " "), marks=marks)
        if _cells(first):
            return self.row(text, first.bold)
        self.header, self.first_row = None, ""
        strong = all(ln.bold for ln in para.lines) and first.size > STRONG_RATIO * self.body
        if item_label(text) and first.x0 > self.margin + 2 and not strong:
            while self.indents and first.x0 < self.indents[-1] - 2:
                self.indents.pop()
            if not self.indents or first.x0 > self.indents[-1] + 2:
                self.indents.append(first.x0)
            return Block(ITEM, text, level=len(self.indents), marks=marks)
        return Block(PARAGRAPH, text.replace("\t", " "), marks=marks, strong=strong)

    def row(self, text: str, bold: bool) -> Block | None:
        """A table row: a first row in bold is the header the rows after it carry ("Header: cell; ...", as the
        HTML reader writes them); the first row printed again atop a page is dropped."""
        cells = [c.strip() for c in text.split("\t") if c.strip()]
        if text == self.first_row:
            return None
        if not self.first_row:
            self.first_row = text
            if bold:
                self.header = cells
                return None
        if self.header and len(self.header) == len(cells):
            return Block(ROW, "; ".join(f"{h}: {c}" for h, c in zip(self.header, cells)))
        return Block(ROW, CELL_SEPARATOR.join(cells))


def _cells(line: Line) -> bool:
    """Whether the line is a row of cells (a gap after a leading rule number aside)."""
    text = line.text
    if split_rule(text.replace("\t", " ", 1))[0] and text.index("\t") < 16 if "\t" in text else False:
        text = text.replace("\t", " ", 1)
    return "\t" in text


def _starts_paragraph(line: Line, prev: Line, para: _Para, body: float, margin: float, right: float) -> bool:
    if abs(line.size - prev.size) > 0.5 or line.page != prev.page and para.kind == HEADING:
        return True
    if line.bold and prev.bold and STRONG_RATIO * body < prev.size < HEADING_RATIO * body \
            and prev.x1 < margin + 0.7 * (right - margin):
        return True  # two headings in a row ("Independent expert", then "Qualifications"), not one wrapped
    if line.page == prev.page and prev.bottom - line.bottom > PARAGRAPH_GAP * prev.size:
        return True
    text = line.text.replace("\t", " ")
    if abs(line.x0 - margin) < 2 and split_rule(text)[0]:
        return True
    if item_label(text) and (prev.text.rstrip().endswith((".", ";", ":", " and", " or"))
                             or abs(line.x0 - prev.x0) > 2):
        return True
    if _cells(line) or _cells(prev) or line.bold != prev.bold:
        return True
    return line.x0 < para.lines[0].x0 - 2


def _paragraphs(lines: list[Line], body: float, margin: float) -> list[_Para]:
    paras: list[_Para] = []
    right = max(ln.x1 for ln in lines)
    for line in lines:
        para = paras[-1] if paras else None
        if para is None or _starts_paragraph(line, para.lines[-1], para, body, margin, right):
            paras.append(_Para([line], HEADING if line.size >= HEADING_RATIO * body else PARAGRAPH))
        else:
            para.lines.append(line)
    return paras


def _vocabulary(paras: list[_Para]) -> set[str]:
    return {w.lower().strip(".,;:()") for p in paras for ln in p.lines for w in ln.text.split() if SOFT not in w}


def _joined(lines: list[Line], words: set[str]) -> tuple[str, list[tuple[int, int]]]:
    """A paragraph's lines as one text, its marks moved to their places in it; a word hyphenated at a line's end
    joined (its hyphen kept where the document writes it so, or never writes the word without it)."""
    text, marks = "", []
    for line in lines:
        if text and not text.endswith(SOFT):
            text += " "
        marks.extend((a + len(text), b + len(text)) for a, b in line.marks)
        text += line.text
    if SOFT not in text:
        return text, marks

    def join(m: re.Match) -> str:
        head, tail = m.group(1), m.group(2)
        whole = f"{head}{tail}".lower()
        return f"{head}{tail}" if whole in words and f"{head}-{tail}".lower() not in words else f"{head}-{tail}"

    out, at, shifted = [], 0, []
    for m in HYPHENATED.finditer(text):
        out.append(text[at:m.start()])
        new = join(m)
        shifted.append((m.end(), len(m.group(0)) - len(new)))
        out.append(new)
        at = m.end()
    out.append(text[at:])
    moved = [(a - sum(d for e, d in shifted if e <= a), b - sum(d for e, d in shifted if e <= a)) for a, b in marks]
    return "".join(out).replace(SOFT, "-"), moved
