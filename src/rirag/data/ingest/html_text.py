"""The text of HTML elements, read whole (lxml elements): rule rows with their numbers and heading paths, lists and
table rows kept whole, navigation, stamps and hidden text dropped. :mod:`rirag.data.ingest.html_page` reads a page
as it is parsed and hands each element here once it has ended.

HTML pages of the PRA Rulebook layout (``div.part-content`` holding ``div.chapter-section`` and ``div.row-block``,
the rule number in ``span.rule-number``) are read by that structure; any other page by its headings and blocks.
Navigation, headers and footers, scripts, forms, "effective date" stamps (``row-block__info``), export links
(``page-utilities``), hidden text and tooltips are never part of a passage."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rirag.constants import INGEST_SUBHEADING_MAX_WORDS
from rirag.data.ingest.raw import RULE_NUMBER, Dropped, RawDocument, RawPassage, item_label

# -- HTML vocabulary (element names and class names, never patterns over markup) ----------------------------------
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "button", "form", "input", "select", "textarea",
                       "svg", "iframe", "del", "img", "head", "title", "meta", "link"})
NAV_TAGS = frozenset({"nav", "header", "footer", "aside"})
HIDDEN_CLASSES = frozenset({"visually-hidden", "sr-only", "screen-reader-text", "tooltip", "tooltiptext",
                            "tooltip-content", "hidden", "d-none"})
NAV_CLASSES = frozenset({"page-utilities", "row-block__info", "list-breadcrumbs", "breadcrumb", "breadcrumbs",
                         "cookie-notice", "nav-bypass", "side-bar", "nav-sticky", "pagination", "skip-link"})
BLOCK_TAGS = frozenset({"p", "div", "section", "article", "main", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5",
                        "h6", "li", "dt", "dd", "figure", "figcaption", "caption", "address", "center", "tr", "td",
                        "th", "tbody", "thead", "tfoot", "body"})
LIST_TAGS = frozenset({"ol", "ul", "dl", "menu"})
HEADING_TAGS = {f"h{i}": i for i in range(1, 7)}

# ====================================================================================================================
# Text of HTML blocks
# ====================================================================================================================


def classes_of(el) -> set[str]:
    return set((el.get("class") or "").split())


def tag_of(el) -> str | None:
    return el.tag.lower() if isinstance(el.tag, str) else None


def is_hidden(el) -> bool:
    return hidden(tag_of(el), el.attrib)


def hidden(tag: str | None, attrib) -> bool:
    """An element (its tag and attributes, all a start tag says) whose text is never read."""
    if tag in SKIP_TAGS:
        return True
    if set((attrib.get("class") or "").split()) & HIDDEN_CLASSES:
        return True
    if attrib.get("role") == "tooltip" or attrib.get("hidden") is not None or attrib.get("aria-hidden") == "true":
        return True
    style = (attrib.get("style") or "").replace(" ", "").lower()
    return "display:none" in style


# -- what a line's structure says, carried through the walk as private-use characters (never in a page's text) ----
#: A footnote mark: OPEN target SEP mark CLOSE; a list item's line opens with ITEM level ITEM_END.
OPEN, SEP, CLOSE, ITEM, ITEM_END = "\ue000", "\ue001", "\ue002", "\ue003", "\ue004"
#: Those characters where a page has them itself: taken out of its text (what they would say is the walk's).
_NOT_TEXT = dict.fromkeys(map(ord, OPEN + SEP + CLOSE + ITEM + ITEM_END))


@dataclass
class Line:
    """One line of a block: its text (whitespace-normalised), its footnote marks (start, end, target) and, for a
    list item's line, how many lists deep it is (0: not an item)."""

    text: str
    marks: list[tuple[int, int, str]] = field(default_factory=list)
    level: int = 0

    @classmethod
    def parse(cls, raw: str) -> "Line":
        """The line a walk's buffer holds: its text as ``" ".join(text.split())`` gives it, the structure
        characters taken out and read."""
        if OPEN not in raw and ITEM not in raw and CLOSE not in raw:  # most lines: no mark, no item (same split)
            return cls(" ".join(raw.split()))
        out: list[str] = []
        size, space, at = 0, False, 0
        line = cls("")
        mark: list | None = None  # [start, target] of the mark being read
        while at < len(raw):
            c = raw[at]
            if c == OPEN or c == ITEM:
                stop = raw.index(SEP if c == OPEN else ITEM_END, at)
                if c == OPEN:
                    mark = [None, raw[at + 1:stop]]
                else:
                    line.level = int(raw[at + 1:stop])
                at = stop + 1
                continue
            at += 1
            if c == CLOSE:
                if mark is not None and mark[0] is not None:
                    line.marks.append((mark[0], size, mark[1]))
                mark = None
            elif c.isspace():
                space = size > 0
            else:
                if space:
                    out.append(" ")
                    size += 1
                    space = False
                if mark is not None and mark[0] is None:
                    mark[0] = size
                out.append(c)
                size += 1
        line.text = "".join(out)
        return line

    def raw(self) -> str:
        """The line with its marks as a walk's buffer holds them (what :meth:`parse` reads back)."""
        parts, at = [], 0
        for a, b, target in self.marks:
            parts += [self.text[at:a], OPEN, target, SEP, self.text[a:b], CLOSE]
            at = b
        return "".join(parts) + self.text[at:]


def _flush(buf: list[str], out: list[Line]) -> None:
    line = Line.parse("".join(buf))
    buf.clear()
    if line.text:
        out.append(line)
    elif line.level:  # an item whose text starts in a block inside it: that text's line opens the item
        buf.append(f"{ITEM}{line.level}{ITEM_END}")


@dataclass
class Block:
    """An element's lines and what its structure says of them: footnote marks (line, start, end, target) and list
    items (line, level, label)."""

    lines: list[str]
    marks: list[tuple[int, int, int, str]]
    items: list[tuple[int, int, str]]

    def passage(self, rule: str, headings: tuple[str, ...]) -> RawPassage:
        return RawPassage(rule, headings, self.lines, structured=True, marks=self.marks, items=self.items)


def _read(el, skip=frozenset()) -> list[Line]:
    out: list[Line] = []
    buf: list[str] = []
    _lines(el, out, buf, skip, 0)
    _flush(buf, out)
    return out


def read_block(el, skip=frozenset()) -> Block:
    """The text of ``el`` (one line per paragraph, list item and table row; hidden text left out), its footnote
    marks (a ``sup`` holding a link or a number) and its list items with their nesting."""
    return _block(_read(el, skip))


def table_block(table) -> Block:
    """A table's rows (:func:`table_lines`) and their footnote marks."""
    return _block([Line.parse(row) for row in table_lines(table)])


def _block(out: list[Line]) -> Block:
    return Block([line.text for line in out],
                 [(i, a, b, target) for i, line in enumerate(out) for a, b, target in line.marks],
                 [(i, line.level, item_label(line.text)) for i, line in enumerate(out) if line.level])


def block_lines(el, skip=frozenset()) -> list[str]:
    """The text of ``el``: one line per paragraph, list item and table row; hidden text left out."""
    return read_block(el, skip).lines


def _mark_target(sup) -> str:
    """The id in the page a footnote mark links to ("#footnote-16" -> "footnote-16": a link in the mark or around
    it), "" when none."""
    for a in [*sup.iter("a"), *sup.iterancestors("a")]:
        href = (a.get("href") or "").strip()
        if href.startswith("#") and len(href) > 1:
            return "".join(href[1:].split())
    return ""


def _lines(el, out: list[Line], buf: list[str], skip, depth: int) -> None:
    if el.text:
        buf.append(el.text.translate(_NOT_TEXT))
    for child in el:
        tag = tag_of(child)
        if tag is None or child in skip or is_hidden(child):
            pass
        elif tag == "br":
            _flush(buf, out)
        elif tag in LIST_TAGS:
            _flush(buf, out)
            _list_lines(child, out, skip, depth + 1)
        elif tag == "table":
            _flush(buf, out)
            out.extend(Line.parse(row) for row in table_lines(child))
        elif tag in BLOCK_TAGS or tag in NAV_TAGS:
            _block_lines(el, child, out, buf, skip, depth)
        elif tag == "sup" and _is_mark(child):
            # a footnote mark stays a word of its own ("Code 4", not "Code4"), its place and target kept
            buf.append(f" {OPEN}{_mark_target(child)}{SEP}")
            _lines(child, out, buf, skip, depth)
            buf.append(f"{CLOSE} ")
        else:  # inline
            _lines(child, out, buf, skip, depth)
        if child.tail:
            buf.append(child.tail.translate(_NOT_TEXT))


def _is_mark(sup) -> bool:
    """A ``sup`` that is a footnote mark: it holds a link, or its text is a number."""
    return any(tag_of(a) == "a" for a in sup.iter()) or "".join(sup.itertext()).strip().isdigit()


def _block_lines(el, child, out: list[Line], buf: list[str], skip, depth: int) -> None:
    """A block ``child`` of ``el`` read on lines of its own; an ``li`` of a list read as a block (a page's list read
    whole) opens an item one list deeper."""
    _flush(buf, out)
    item = tag_of(child) == "li" and tag_of(el) in LIST_TAGS
    if item:
        buf.append(f"{ITEM}{depth + 1}{ITEM_END}")
    _lines(child, out, buf, skip, depth + item)
    _flush(buf, out)
    if item:
        buf.clear()  # an item with no text: its mark ends with it


def _list_lines(lst, out: list[Line], skip, depth: int) -> None:
    for item in lst:
        tag = tag_of(item)
        if tag is None or is_hidden(item) or item in skip:
            continue
        if tag in LIST_TAGS:  # a list nested directly in a list (ol > ol)
            _list_lines(item, out, skip, depth + 1)
            continue
        buf: list[str] = [f"{ITEM}{depth}{ITEM_END}"]
        _lines(item, out, buf, skip, depth)
        _flush(buf, out)


def _cell_text(cell) -> str:
    return " ".join(line.raw() for line in _read(cell))


def table_lines(table) -> list[str]:
    """One line per row; data rows carry the header ("Header: cell; Header: cell"), a header row is not repeated.
    A cell's footnote marks are kept as a walk's buffer holds them (:meth:`Line.parse` reads them)."""
    rows = []
    for tr in table.iter("tr"):
        if is_hidden(tr):
            continue
        cells = [c for c in tr if tag_of(c) in ("td", "th") and not is_hidden(c)]
        if cells:
            in_head = any(tag_of(a) == "thead" for a in tr.iterancestors())
            rows.append((in_head or all(tag_of(c) == "th" for c in cells), [_cell_text(c) for c in cells]))
    header: list[str] | None = None
    out = []
    for is_header, cells in rows:
        if not any(cells):
            continue
        if is_header and header is None:
            header = cells
            continue
        if header and len(header) == len(cells):
            parts = [f"{h}: {c}" if h else c for h, c in zip(header, cells) if c]
            out.append("; ".join(parts))
        else:
            out.append(" | ".join(c for c in cells if c))
    if header and not out:  # a table of headers only
        out.append(" | ".join(h for h in header if h))
    return out


#: A charset an HTML page declares in its first bytes: ``<meta charset="...">``, ``<meta http-equiv="Content-Type"
#: content="text/html; charset=...">`` or an XML declaration's ``encoding="..."``.
DECLARED_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)"""
                              rb"""|<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def declared_charset(data: bytes) -> str | None:
    m = DECLARED_CHARSET.search(data[:4096])
    return (m.group(1) or m.group(2)).decode("ascii") if m else None


def _rule_number(row) -> str:
    for col in row:
        if "div-row__col-1" in classes_of(col):
            for el in col.iter():
                if isinstance(el.tag, str) and "rule-number" in classes_of(el):
                    return " ".join("".join(el.itertext()).split())
    return ""


def _col2(row):
    for col in row:
        if tag_of(col) and "div-row__col-2" in classes_of(col):
            return col
    return None


def _rulebook_section(container, path: tuple[str, ...], doc: RawDocument, dropped: Dropped) -> None:
    """A PRA-Rulebook ``part-content`` or ``chapter-section``: rules in ``row-block``s, sub-sections nested."""
    subheading: str | None = None
    for child in container:
        subheading = section_child(child, path, subheading, doc, dropped)


def section_child(child, path: tuple[str, ...], subheading: str | None, doc: RawDocument,
                   dropped: Dropped) -> str | None:
    """One child of a section read whole; returns the in-text heading in force after it."""
    cls = classes_of(child)
    if tag_of(child) is None:
        return subheading
    if "chapter-section" in cls:
        _rulebook_section(child, path + _section_label(child), doc, dropped)
    elif "row-block" in cls:
        subheading = _row_block(child, path, subheading, doc, dropped)
    elif cls & NAV_CLASSES:
        dropped.add("navigation", f"{doc.source}: {' '.join(sorted(cls & NAV_CLASSES))}")
    elif "div-row" not in cls:  # a "div-row" is the section's own heading row, read by _section_label
        read = read_block(child)
        if read.lines:
            doc.passages.append(read.passage("", path))
    return subheading


def _section_label(section) -> tuple[str, ...]:
    """The heading path step of a ``chapter-section``: its number and heading (none when it has neither)."""
    head = next((c for c in section if "div-row" in classes_of(c)), None)
    return () if head is None else section_label_of(head)


def section_label_of(head) -> tuple[str, ...]:
    """The heading path step a section's heading row (its first ``div-row``) gives."""
    col2 = _col2(head)
    heading = " ".join(block_lines(col2)) if col2 is not None else ""
    label = " ".join(x for x in (_rule_number(head), heading) if x)
    return (label,) if label else ()


def _row_block(block, path: tuple[str, ...], subheading: str | None, doc: RawDocument, dropped: Dropped) -> str | None:
    """One rule row: its passage and its footnotes' passages; returns the in-text heading in force after it."""
    row = next((c for c in block if "div-row" in classes_of(c)), None)
    col2 = _col2(row) if row is not None else None
    if col2 is None:
        dropped.add("empty", f"{doc.source}: row without content")
        return subheading
    number = _rule_number(row)
    notes = [el for el in col2.iter() if isinstance(el.tag, str) and "rb-footnotes" in classes_of(el)]
    read = read_block(col2, skip=frozenset(notes))
    lines = read.lines
    heads = path + (subheading,) if subheading else path
    if not lines:
        if not notes:
            dropped.add("empty", f"{doc.source}: {number or 'unnumbered row'}")
    elif _is_subheading(block, col2, number, lines):
        return lines[0]  # an in-text heading (h1-h6, or no closing stop): it heads the rules after it
    else:
        doc.passages.append(read.passage(number, heads))
    for note in notes:
        for item in note.iter("li"):
            text = _footnote(item)
            if text:
                mark = text.split()[0].rstrip(".")
                doc.passages.append(RawPassage(f"footnote {mark}", heads, [text], structured=True,
                                               anchor="".join((item.get("id") or "").split())))
    return subheading


def _is_subheading(block, col2, number: str, lines: list[str]) -> bool:
    """An unnumbered, unstamped row of one short line that is a heading element or has no closing stop."""
    if number or len(lines) != 1 or len(lines[0].split()) > INGEST_SUBHEADING_MAX_WORDS:
        return False
    if any("row-block__info" in classes_of(c) for c in block):
        return False
    return any(tag_of(c) in HEADING_TAGS for c in col2) or not lines[0].endswith((".", ";", ":"))


def _footnote(item) -> str:
    return " ".join(" ".join(block_lines(item)).split())


#: Elements whose presence inside a block makes it a container to walk into, not a paragraph.
CONTAINER_TAGS = BLOCK_TAGS | LIST_TAGS | {"table"} | set(HEADING_TAGS)
#: Elements that are always one paragraph.
PARAGRAPH_TAGS = frozenset({"p", "pre", "blockquote", "dd", "dt", "figcaption"})


def _is_paragraph(el, tag: str) -> bool:
    return tag in PARAGRAPH_TAGS or (
        tag in BLOCK_TAGS and not any(tag_of(c) in CONTAINER_TAGS for c in el.iter() if c is not el))


class GenericPage:
    """The walk over a generic page: the heading path in force and the passage a list or table joins."""

    def __init__(self, doc: RawDocument, dropped: Dropped) -> None:
        self.doc, self.dropped = doc, dropped
        self.heads: dict[int, str] = {}
        self.current: RawPassage | None = None

    def path(self) -> tuple[str, ...]:
        return (self.doc.title,) + tuple(self.heads[k] for k in sorted(self.heads))

    def walk(self, el) -> None:
        for child in el:
            self.dispatch(child)

    def dispatch(self, child) -> None:
        """One child of the element walked, read whole."""
        tag = tag_of(child)
        if tag is None or is_hidden(child):
            return
        if tag in NAV_TAGS or classes_of(child) & NAV_CLASSES:
            if "".join(child.itertext()).strip():
                self.dropped.add("navigation", f"{self.doc.source}: <{tag}>")
        elif tag in HEADING_TAGS:
            self.heading(child, HEADING_TAGS[tag])
        elif tag in LIST_TAGS or tag == "table":
            self.attach(read_block(child) if tag in LIST_TAGS else table_block(child))
        elif _is_paragraph(child, tag):
            self.paragraph(read_block(child))
        else:
            self.walk(child)

    def heading(self, el, level: int) -> None:
        text = " ".join(block_lines(el))
        for k in [k for k in self.heads if k >= level]:
            del self.heads[k]
        if text and level > 1:
            self.heads[level] = text
        self.current = None

    def attach(self, read: Block) -> None:
        """A list or table: it joins the paragraph before it, else it is a passage of its own."""
        if not read.lines:
            return
        if self.current is not None:
            self.current.extend(read.passage("", ()))
        else:
            self.current = read.passage("", self.path())
            self.doc.passages.append(self.current)

    def paragraph(self, read: Block) -> None:
        if not read.lines:
            return
        m = RULE_NUMBER.match(read.lines[0])
        self.current = read.passage(m.group(1) if m else "", self.path())
        self.doc.passages.append(self.current)
