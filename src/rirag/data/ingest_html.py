"""The raw records of an ingested rulebook (documents, passages, what was dropped and why) and the reading of saved
HTML pages into them (lxml): rule rows with their numbers and heading paths, lists and table rows kept whole,
navigation, stamps and hidden text dropped."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rirag.constants import (
    INGEST_SUBHEADING_MAX_WORDS,
)
from rirag.errors import DataError


@dataclass
class RawPassage:
    rule: str  # the number as printed ("" when none)
    headings: tuple[str, ...]
    lines: list[str]
    label: str = ""  # PassageID, set when the document's passages are numbered

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class RawDocument:
    key: str  # stable document key (source file stem less any capture-date suffix)
    title: str
    source: str  # file name (and record range) it came from
    passages: list[RawPassage] = field(default_factory=list)


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


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from err


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

#: A leading rule or paragraph number in text (plain text, never markup): "1.2", "1.2.3A", "12.", "(3)".
RULE_NUMBER = re.compile(r"^(\d+(?:\.\d+)*[A-Z]?\.?|\(\w{1,4}\))\s+(?=\S)")
#: The short reference of a heading, used to qualify a rule number that repeats in a document ("Article 277a").
HEADING_REF = re.compile(r"^((?:Article|Section|Chapter|Part|Annex|Schedule|Regulation|Rule|Appendix)\s+[\w.]+)",
                         re.IGNORECASE)
#: A paragraph number that means something only inside its article or section: "2.", "3", "(4)", "(b)".
BARE_NUMBER = re.compile(r"^\(?[0-9A-Za-z]{1,4}\)?\.?$")


# ====================================================================================================================
# Text of HTML blocks
# ====================================================================================================================


def _classes(el) -> set[str]:
    return set((el.get("class") or "").split())


def _tag(el) -> str | None:
    return el.tag.lower() if isinstance(el.tag, str) else None


def _hidden(el) -> bool:
    tag = _tag(el)
    if tag in SKIP_TAGS:
        return True
    if _classes(el) & HIDDEN_CLASSES:
        return True
    if el.get("role") == "tooltip" or el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    style = (el.get("style") or "").replace(" ", "").lower()
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
        tag = _tag(child)
        if tag is None or child in skip or _hidden(child):
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
        elif tag == "sup" and (any(_tag(a) == "a" for a in child.iter())
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
        tag = _tag(item)
        if tag is None or _hidden(item) or item in skip:
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
        if _hidden(tr):
            continue
        cells = [c for c in tr if _tag(c) in ("td", "th") and not _hidden(c)]
        if cells:
            in_head = any(_tag(a) == "thead" for a in tr.iterancestors())
            rows.append((in_head or all(_tag(c) == "th" for c in cells), [_cell_text(c) for c in cells]))
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


def _parse_html(path: Path):
    from lxml import etree, html

    text = _read_text(path)
    try:
        root = html.document_fromstring(text.encode("utf-8"), parser=html.HTMLParser(encoding="utf-8"))
    except (etree.ParserError, ValueError) as err:
        raise DataError(f"{path}: not a parsable HTML page ({err})") from err
    return root


def _first(root, cls: str):
    for el in root.iter():
        if isinstance(el.tag, str) and cls in _classes(el):
            return el
    return None


def _page_title(root, fallback: str) -> str:
    for h1 in root.iter("h1"):
        if not any(_tag(a) in NAV_TAGS for a in h1.iterancestors()):
            text = " ".join(block_lines(h1))
            if text:
                return text
    title = root.find(".//title")
    if title is not None and (title.text or "").strip():
        return " ".join(title.text.split("|")[0].split())
    return fallback


def read_html_page(path: Path, dropped: Dropped) -> RawDocument:
    root = _parse_html(path)
    key = document_key(path.stem)
    doc = RawDocument(key, _page_title(root, key), path.name)
    part = _first(root, "part-content")
    if part is not None:
        _rulebook_section(part, (doc.title,), doc, dropped)
    else:
        _generic_page(root, doc, dropped)
    if not doc.passages:
        if not " ".join(root.text_content().split()):
            raise DataError(f"{path}: no text")
        dropped.add("empty page", f"{doc.source}: no content beside navigation")
    return doc


def _rule_number(row) -> str:
    for col in row:
        if "div-row__col-1" in _classes(col):
            for el in col.iter():
                if isinstance(el.tag, str) and "rule-number" in _classes(el):
                    return " ".join("".join(el.itertext()).split())
    return ""


def _col2(row):
    for col in row:
        if _tag(col) and "div-row__col-2" in _classes(col):
            return col
    return None


def _rulebook_section(container, path: tuple[str, ...], doc: RawDocument, dropped: Dropped) -> None:
    """A PRA-Rulebook ``part-content`` or ``chapter-section``: rules in ``row-block``s, sub-sections nested."""
    subheading: str | None = None
    for child in container:
        cls = _classes(child)
        if _tag(child) is None:
            continue
        if "chapter-section" in cls:
            head = next((c for c in child if "div-row" in _classes(c)), None)
            label = ""
            if head is not None:
                number = _rule_number(head)
                col2 = _col2(head)
                heading = " ".join(block_lines(col2)) if col2 is not None else ""
                label = " ".join(x for x in (number, heading) if x)
            _rulebook_section(child, path + (label,) if label else path, doc, dropped)
        elif "row-block" in cls:
            row = next((c for c in child if "div-row" in _classes(c)), None)
            col2 = _col2(row) if row is not None else None
            if col2 is None:
                dropped.add("empty", f"{doc.source}: row without content")
                continue
            number = _rule_number(row)
            notes = [el for el in col2.iter() if isinstance(el.tag, str) and "rb-footnotes" in _classes(el)]
            lines = block_lines(col2, skip=frozenset(notes))
            has_info = any("row-block__info" in _classes(c) for c in child)
            if not lines:
                if not notes:
                    dropped.add("empty", f"{doc.source}: {number or 'unnumbered row'}")
            elif (not number and not has_info and len(lines) == 1
                  and len(lines[0].split()) <= INGEST_SUBHEADING_MAX_WORDS
                  and (any(_tag(c) in HEADING_TAGS for c in col2) or not lines[0].endswith((".", ";", ":")))):
                subheading = lines[0]  # an in-text heading (h1-h6, or no closing stop): it heads the rules after it
                continue
            else:
                heads = path + (subheading,) if subheading else path
                doc.passages.append(RawPassage(number, heads, lines))
            for note in notes:
                for item in note.iter("li"):
                    text = _footnote(item)
                    if text:
                        mark = text.split()[0].rstrip(".")
                        heads = path + (subheading,) if subheading else path
                        doc.passages.append(RawPassage(f"footnote {mark}", heads, [text]))
        elif cls & NAV_CLASSES:
            dropped.add("navigation", f"{doc.source}: {' '.join(sorted(cls & NAV_CLASSES))}")
        elif "div-row" in cls:
            continue  # the section's own heading row, read above
        else:
            lines = block_lines(child)
            if lines:
                doc.passages.append(RawPassage("", path, lines))


def _footnote(item) -> str:
    return " ".join(" ".join(block_lines(item)).split())


def _generic_page(root, doc: RawDocument, dropped: Dropped) -> None:
    """Any other page: headings give the path, each paragraph starts a passage, lists and tables join the paragraph
    before them; whatever lies in nav/header/footer/aside is dropped as navigation."""
    body = root.find("body")
    if body is None:
        body = root
    main = next((el for el in body.iter("main", "article") if not _hidden(el)), body)
    heads: dict[int, str] = {}
    current: list[RawPassage] = []

    def path() -> tuple[str, ...]:
        return tuple(heads[k] for k in sorted(heads))

    def walk(el) -> None:
        for child in el:
            tag = _tag(child)
            if tag is None or _hidden(child):
                continue
            if tag in NAV_TAGS or _classes(child) & NAV_CLASSES:
                if "".join(child.itertext()).strip():
                    dropped.add("navigation", f"{doc.source}: <{tag}>")
                continue
            if tag in HEADING_TAGS:
                level = HEADING_TAGS[tag]
                text = " ".join(block_lines(child))
                for k in [k for k in heads if k >= level]:
                    del heads[k]
                if text and level > 1:
                    heads[level] = text
                current.clear()
            elif tag in LIST_TAGS or tag == "table":
                lines = block_lines(child) if tag in LIST_TAGS else table_lines(child)
                if not lines:
                    continue
                if current:
                    current[-1].lines.extend(lines)
                else:
                    p = RawPassage("", (doc.title,) + path(), lines)
                    doc.passages.append(p)
                    current.append(p)
            elif tag in ("p", "pre", "blockquote", "dd", "dt", "figcaption") or (
                    tag in BLOCK_TAGS and not any(_tag(c) in BLOCK_TAGS | LIST_TAGS | {"table"} | HEADING_TAGS.keys()
                                                  for c in child.iter() if c is not child)):
                lines = block_lines(child)
                if not lines:
                    continue
                m = RULE_NUMBER.match(lines[0])
                rule = m.group(1) if m else ""
                p = RawPassage(rule, (doc.title,) + path(), lines)
                doc.passages.append(p)
                current[:] = [p]
            else:
                walk(child)

    walk(main)

