"""The text of HTML elements, read whole (lxml elements): rule rows with their numbers and heading paths, lists and
table rows kept whole, navigation, stamps and hidden text dropped. :mod:`rirag.data.ingest.html_page` reads a page
as it is parsed and hands each element here once it has ended.

HTML pages of the PRA Rulebook layout (``div.part-content`` holding ``div.chapter-section`` and ``div.row-block``,
the rule number in ``span.rule-number``) are read by that structure; any other page by its headings and blocks.
Navigation, headers and footers, scripts, forms, "effective date" stamps (``row-block__info``), export links
(``page-utilities``), hidden text and tooltips are never part of a passage."""

from __future__ import annotations

import re

from rirag.constants import INGEST_SUBHEADING_MAX_WORDS
from rirag.data.ingest.raw import RULE_NUMBER, Dropped, RawDocument, RawPassage

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


def _flush(buf: list[str], out: list[str]) -> None:
    line = " ".join("".join(buf).split())
    if line:
        out.append(line)
    buf.clear()


def block_lines(el, skip=frozenset()) -> list[str]:
    """The text of ``el``: one line per paragraph, list item and table row; hidden text left out."""
    out: list[str] = []
    buf: list[str] = []
    _lines(el, out, buf, skip)
    _flush(buf, out)
    return out


def _lines(el, out: list[str], buf: list[str], skip) -> None:
    if el.text:
        buf.append(el.text)
    for child in el:
        tag = tag_of(child)
        if tag is None or child in skip or is_hidden(child):
            pass
        elif tag == "br":
            _flush(buf, out)
        elif tag in LIST_TAGS:
            _flush(buf, out)
            _list_lines(child, out, skip)
        elif tag == "table":
            _flush(buf, out)
            out.extend(table_lines(child))
        elif tag in BLOCK_TAGS or tag in NAV_TAGS:
            _flush(buf, out)
            _lines(child, out, buf, skip)
            _flush(buf, out)
        elif tag == "sup" and (any(tag_of(a) == "a" for a in child.iter())
                               or "".join(child.itertext()).strip().isdigit()):
            buf.append(" ")  # a footnote mark stays a word of its own ("Code 4", not "Code4")
            _lines(child, out, buf, skip)
            buf.append(" ")
        else:  # inline
            _lines(child, out, buf, skip)
        if child.tail:
            buf.append(child.tail)


def _list_lines(lst, out: list[str], skip) -> None:
    for item in lst:
        tag = tag_of(item)
        if tag is None or is_hidden(item) or item in skip:
            continue
        if tag in LIST_TAGS:  # a list nested directly in a list (ol > ol)
            _list_lines(item, out, skip)
            continue
        buf: list[str] = []
        _lines(item, out, buf, skip)
        _flush(buf, out)


def _cell_text(cell) -> str:
    return " ".join(block_lines(cell))


def table_lines(table) -> list[str]:
    """One line per row; data rows carry the header ("Header: cell; Header: cell"), a header row is not repeated."""
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
        lines = block_lines(child)
        if lines:
            doc.passages.append(RawPassage("", path, lines))
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
    lines = block_lines(col2, skip=frozenset(notes))
    heads = path + (subheading,) if subheading else path
    if not lines:
        if not notes:
            dropped.add("empty", f"{doc.source}: {number or 'unnumbered row'}")
    elif _is_subheading(block, col2, number, lines):
        return lines[0]  # an in-text heading (h1-h6, or no closing stop): it heads the rules after it
    else:
        doc.passages.append(RawPassage(number, heads, lines))
    for note in notes:
        for item in note.iter("li"):
            text = _footnote(item)
            if text:
                mark = text.split()[0].rstrip(".")
                doc.passages.append(RawPassage(f"footnote {mark}", heads, [text]))
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
            self.attach(block_lines(child) if tag in LIST_TAGS else table_lines(child))
        elif _is_paragraph(child, tag):
            self.paragraph(block_lines(child))
        else:
            self.walk(child)

    def heading(self, el, level: int) -> None:
        text = " ".join(block_lines(el))
        for k in [k for k in self.heads if k >= level]:
            del self.heads[k]
        if text and level > 1:
            self.heads[level] = text
        self.current = None

    def attach(self, lines: list[str]) -> None:
        """A list or table: it joins the paragraph before it, else it is a passage of its own."""
        if not lines:
            return
        if self.current is not None:
            self.current.lines.extend(lines)
        else:
            self.current = RawPassage("", self.path(), lines)
            self.doc.passages.append(self.current)

    def paragraph(self, lines: list[str]) -> None:
        if not lines:
            return
        m = RULE_NUMBER.match(lines[0])
        self.current = RawPassage(m.group(1) if m else "", self.path(), lines)
        self.doc.passages.append(self.current)
