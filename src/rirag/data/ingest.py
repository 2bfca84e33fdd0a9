"""Corpus ingestion: a regulator's rulebook (saved HTML pages, JSONL/CSV passages, or text/Markdown files) into a
corpus folder in the ObliQA layout, which :func:`rirag.data.obliqa.load_obliqa` reads like ObliQA itself.

Written to ``--out`` (atomically: a failure leaves it untouched)::

    documents/1.json ... documents/N.json   lists of {ID, DocumentID, PassageID, Passage, Rule, Headings, Source}
    document_map.json                       DocumentID -> [source file, title]
    ingest_report.json                      documents, passages, dropped passages by reason, length distribution

Each passage keeps its document, its rule or paragraph number (``PassageID``; ``Rule`` is the number as the source
prints it, empty when it has none), its heading path (``Headings``) and its text, one line per paragraph, list item
and table row (a row carries its table's header: ``Header: cell; Header: cell``).

Ids are stable: ``ID`` is a UUID5 of the document key and the ``PassageID`` (never of run order or of the folder the
input lies in), documents are numbered in the order of their keys, and the same input gives byte-identical output.

HTML pages of the PRA Rulebook layout (``div.part-content`` holding ``div.chapter-section`` and ``div.row-block``,
the rule number in ``span.rule-number``) are read by that structure; any other page by its headings and blocks.
Navigation, headers and footers, scripts, forms, "effective date" stamps (``row-block__info``), export links
(``page-utilities``), hidden text and tooltips are never part of a passage.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import statistics
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from rirag.constants import (
    INGEST_HTML_SUFFIXES,
    INGEST_ID_NAMESPACE,
    INGEST_MAX_PASSAGE_WORDS,
    INGEST_PART_WORDS,
    INGEST_RECORD_SUFFIXES,
    INGEST_REPORT_FILE,
    INGEST_SUBHEADING_MAX_WORDS,
    INGEST_TERM_MAX_WORDS,
    INGEST_TEXT_SUFFIXES,
)
from rirag.data.obliqa import DOCUMENT_MAP_FILE
from rirag.errors import DataError, UsageError

logger = logging.getLogger(__name__)

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
#: Passages that are only a deletion or blank-provision note.
DELETED_TEXT = re.compile(r"^\[?\s*(deleted|note:\s*provision left blank|this rule has been deleted)\s*\.?\s*\]?\.?$",
                          re.IGNORECASE)


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


# ====================================================================================================================
# HTML pages
# ====================================================================================================================


def document_key(stem: str) -> str:
    """The file stem less a trailing capture-date-and-hash suffix ("_21-01-2026__4611300738")."""
    return re.sub(r"_\d{2}-\d{2}-\d{4}(?:__[0-9a-f]+)?$", "", stem)


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from err


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


# ====================================================================================================================
# Text and Markdown files
# ====================================================================================================================


def read_text_file(path: Path, root: Path) -> RawDocument:
    text = _read_text(path)
    key = path.relative_to(root).with_suffix("").as_posix()
    markdown = path.suffix.lower() in (".md", ".markdown")
    doc = RawDocument(key, key, path.relative_to(root).as_posix())
    heads: dict[int, str] = {}
    block: list[str] = []
    table: list[list[str]] = []

    def path_now() -> tuple[str, ...]:
        return (doc.title,) + tuple(heads[k] for k in sorted(heads))

    def flush() -> None:
        lines = list(block)
        only_table = bool(table) and not block
        if table:
            lines.extend(_markdown_table(table))
            table.clear()
        block.clear()
        if not lines:
            return
        is_list = _list_item(lines[0])
        if (is_list or only_table) and doc.passages and doc.passages[-1].headings == path_now():
            doc.passages[-1].lines.extend(lines)  # a list or table joins the paragraph that introduces it
            return
        m = RULE_NUMBER.match(lines[0])
        doc.passages.append(RawPassage(m.group(1) if m and not is_list else "", path_now(), lines))

    for raw in text.splitlines():
        line = raw.strip()
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*$", line) if markdown else None
        if heading:
            flush()
            level = len(heading.group(1))
            for k in [k for k in heads if k >= level]:
                del heads[k]
            if level == 1 and not doc.passages and doc.title == key:
                doc.title = heading.group(2)
            else:
                heads[level] = heading.group(2)
            continue
        if not line:
            flush()
            continue
        if markdown and line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                table.append(cells)
            continue
        if block and not _list_item(line) and not _list_item(block[-1]) and not markdown:
            block[-1] = f"{block[-1]} {line}"  # a wrapped line of a plain-text paragraph
        elif block and markdown and not _list_item(line):
            block[-1] = f"{block[-1]} {line}"
        else:
            block.append(line)
    flush()
    if not doc.passages:
        raise DataError(f"{path}: no text")
    return doc


def _list_item(line: str) -> bool:
    return bool(re.match(r"^([-*+•]|\d+[.)]|\([a-z0-9]{1,4}\))\s+", line))


def _markdown_table(rows: list[list[str]]) -> list[str]:
    header, body = rows[0], rows[1:]
    if not body:
        return [" | ".join(header)]
    out = []
    for cells in body:
        if len(cells) == len(header):
            out.append("; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c))
        else:
            out.append(" | ".join(c for c in cells if c))
    return out


# ====================================================================================================================
# JSONL and CSV records
# ====================================================================================================================

RECORD_TEXT_FIELDS = ("text", "Passage", "passage")
RECORD_DOCUMENT_FIELDS = ("document", "DocumentID", "document_id", "doc")
RECORD_RULE_FIELDS = ("rule", "rule_id", "rule id", "PassageID", "passage_id", "paragraph")
RECORD_ID_FIELDS = ("id", "ID")
RECORD_HEADING_FIELDS = ("headings", "heading", "Headings", "section")


def _field(rec: dict, names: Iterable[str]):
    for name in names:
        if name in rec and rec[name] is not None:
            return rec[name]
    return None


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    text = _read_text(path)
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            for rec in reader:
                yield reader.line_num, rec  # the line the record ends on (the header is line 1)
        except csv.Error as err:
            raise DataError(f"{path}: line {reader.line_num}: malformed CSV ({err})") from err
        return
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}: line {i}: malformed JSON ({err.msg})") from err
        if not isinstance(rec, dict):
            raise DataError(f"{path}: line {i}: expected an object, got {type(rec).__name__}")
        yield i, rec


def read_records(path: Path) -> tuple[list[RawDocument], dict[tuple[str, str], str]]:
    """Documents from a JSONL/CSV of passages, and the ids the records give ((document, label) -> id)."""
    docs: dict[str, RawDocument] = {}
    pending: list[tuple[RawPassage, str | None, int, str]] = []
    for line, rec in _records(path):
        rid = _field(rec, RECORD_ID_FIELDS)
        where = f"{path}: line {line}" + (f" (id {rid})" if rid else "")
        text = _field(rec, RECORD_TEXT_FIELDS)
        if text is None:
            raise DataError(f"{where}: missing field 'text'")
        if not isinstance(text, str):
            raise DataError(f"{where}: field 'text' must be a string, got {type(text).__name__}")
        if not text.strip():
            raise DataError(f"{where}: field 'text' is empty")
        document = _field(rec, RECORD_DOCUMENT_FIELDS)
        if document is None or not str(document).strip():
            raise DataError(f"{where}: missing field 'document'")
        document = str(document).strip()
        rule = _field(rec, RECORD_RULE_FIELDS)
        heads = _field(rec, RECORD_HEADING_FIELDS)
        if isinstance(heads, str):
            heads = [h.strip() for h in heads.split(">") if h.strip()]
        doc = docs.setdefault(document, RawDocument(document, document, path.name))
        lines = [" ".join(x.split()) for x in text.splitlines() if x.strip()]
        p = RawPassage(str(rule).strip() if rule is not None else "", (document, *(heads or ())), lines)
        doc.passages.append(p)
        if rid is not None:
            rid = str(rid).strip()
            if not rid or any(c.isspace() for c in rid):
                raise DataError(f"{where}: field 'id' must be a non-empty string without spaces")
            pending.append((p, rid, line, document))
    ids: dict[tuple[str, str], str] = {}
    for doc in docs.values():
        _label(doc)
    seen: dict[str, int] = {}
    for p, rid, line, document in pending:
        if rid in seen:
            raise DataError(f"{path}: line {line} (id {rid}): id already used on line {seen[rid]}")
        seen[rid] = line
        ids[(document, p.label)] = rid
    return sorted(docs.values(), key=lambda d: d.key), ids


# ====================================================================================================================
# Assembling the corpus
# ====================================================================================================================


def _label(doc: RawDocument) -> None:
    """Give each passage a PassageID unique in its document, from its rule number (qualified by its heading's
    reference where the number repeats or is a bare paragraph number: "Article 277 2.") and never from its position
    alone, unless it has no number at all ("Article 72", then "Article 72 #2")."""
    def ref(p: RawPassage) -> str:
        for h in reversed(p.headings[1:] or p.headings):
            m = HEADING_REF.match(h)
            if m:
                return m.group(1)
        return p.headings[-1] if len(p.headings) > 1 else ""

    raw = Counter(p.rule for p in doc.passages if p.rule)
    used: Counter = Counter()
    for p in doc.passages:
        if p.rule and raw[p.rule] == 1 and not (BARE_NUMBER.match(p.rule) and ref(p)):
            label = p.rule
        elif p.rule:
            label = " ".join(x for x in (ref(p), p.rule) if x)
        else:
            label = ref(p) or "text"
        used[label] += 1
        p.label = label if used[label] == 1 else f"{label} #{used[label]}"
    # a qualified label may still collide with a plain one: number the later ones
    final: Counter = Counter()
    for p in doc.passages:
        final[p.label] += 1
        if final[p.label] > 1:
            p.label = f"{p.label} #{final[p.label]}"


#: A line that continues the unit before it when a long passage is cut: a lettered or roman item ("(a)", "(iv)").
SUB_ITEM = re.compile(r"^\(?[a-z]{1,4}\)\s")


def _units(lines: list[str]) -> list[list[str]]:
    """Lines grouped into units never cut apart: an item with its lettered sub-items, a short term line (a
    definition's term, a row of a heading) with the line after it."""
    units: list[list[str]] = []
    joins_next = False
    for line in lines:
        if units and (joins_next or SUB_ITEM.match(line)):
            units[-1].append(line)
        else:
            units.append([line])
        joins_next = len(line.split()) <= INGEST_TERM_MAX_WORDS and not line.rstrip().endswith((".", ";", ":"))
    return units


def split_long(p: RawPassage, limit: int = INGEST_MAX_PASSAGE_WORDS,
               size: int = INGEST_PART_WORDS) -> list[RawPassage]:
    """A passage over ``limit`` words as parts of about ``size`` words, cut between units (:func:`_units`; a line
    is never cut): "1.2", "1.2 (part 2)", ..."""
    if len(p.text.split()) <= limit or len(p.lines) < 2:
        return [p]
    parts: list[list[str]] = [[]]
    count = 0
    for unit in _units(p.lines):
        n = sum(len(line.split()) for line in unit)
        if parts[-1] and count + n > size:
            parts.append([])
            count = 0
        parts[-1].extend(unit)
        count += n
    return [RawPassage(p.rule, p.headings, lines, p.label if i == 0 else f"{p.label} (part {i + 1})")
            for i, lines in enumerate(parts)]


def passage_uuid(document_key: str, label: str) -> str:
    return str(uuid.uuid5(uuid.UUID(INGEST_ID_NAMESPACE), f"{document_key}\x1f{label}"))


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def read_source(source: Path) -> tuple[list[RawDocument], Dropped, dict[tuple[str, str], str], str]:
    """Parse ``source`` (a folder of pages or text files, or a JSONL/CSV file) into documents."""
    dropped = Dropped()
    if source.is_file():
        if source.suffix.lower() not in INGEST_RECORD_SUFFIXES:
            raise DataError(f"{source}: not a folder of pages or text files, nor a .jsonl/.csv of passages")
        docs, ids = read_records(source)
        return docs, dropped, ids, "records"
    if not source.is_dir():
        raise DataError(f"{source}: no such file or folder")
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))
    pages = [p for p in files if p.suffix.lower() in INGEST_HTML_SUFFIXES]
    texts = [p for p in files if p.suffix.lower() in INGEST_TEXT_SUFFIXES and p.name != "SOURCE.md"]
    if pages:
        docs = [d for d in (read_html_page(p, dropped) for p in pages) if d.passages]
        if not docs:
            raise DataError(f"{source}: no page has content beside navigation ({len(pages)} pages read)")
        kind = "html"
    elif texts:
        docs = [read_text_file(p, source) for p in texts]
        kind = "text"
    else:
        raise DataError(f"{source}: no parsable page (no .html/.htm, .txt or .md file)")
    keys = Counter(d.key for d in docs)
    for d in docs:
        if keys[d.key] > 1:  # two captures of one page: keep the file name apart
            d.key = Path(d.source).stem
    docs.sort(key=lambda d: d.key)
    for d in docs:
        _label(d)
        d.passages = [part for p in d.passages for part in split_long(p)]
    return docs, dropped, {}, kind


def build_corpus(source: Path) -> tuple[dict[int, list[dict]], dict[str, list[str]], dict]:
    """The corpus records per DocumentID, the document map and the build report (nothing written)."""
    docs, dropped, given_ids, kind = read_source(source)
    documents: dict[int, list[dict]] = {}
    doc_map: dict[str, list[str]] = {}
    seen_text: dict[str, str] = {}
    lengths = []
    for n, doc in enumerate(docs, 1):
        records = []
        for p in doc.passages:
            text = p.text
            if not text.strip():
                dropped.add("empty", f"{doc.source}: {p.label}")
                continue
            if DELETED_TEXT.match(text.strip()):
                dropped.add("deleted", f"{doc.source}: {p.label}")
                continue
            norm = _normalise(text)
            pid = given_ids.get((doc.key, p.label)) or passage_uuid(doc.key, p.label)
            if norm in seen_text:
                dropped.add("duplicate", f"{doc.source}: {p.label} (same text as {seen_text[norm]})")
                continue
            seen_text[norm] = pid
            records.append({"ID": pid, "DocumentID": n, "PassageID": p.label, "Passage": text, "Rule": p.rule,
                            "Headings": list(p.headings), "Source": doc.source})
            lengths.append(len(text.split()))
        if records:
            documents[n] = records
            doc_map[str(n)] = [doc.source, doc.title]
    if not documents:
        raise DataError(f"{source}: no passage left after dropping empty, navigation and duplicate ones")
    ids = Counter(r["ID"] for rs in documents.values() for r in rs)
    clash = [i for i, c in ids.items() if c > 1]
    if clash:
        raise DataError(f"{source}: passage id {clash[0]!r} is used by two passages")
    report = {
        "source": source.name,
        "kind": kind,
        "documents": len(documents),
        "passages": sum(len(rs) for rs in documents.values()),
        "dropped": dict(sorted(dropped.counts.items())),
        "dropped_examples": {k: v for k, v in sorted(dropped.examples.items())},
        "length_words": _distribution(lengths),
    }
    return documents, doc_map, report


def _distribution(values: list[int]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"min": ordered[0], "median": ordered[(len(ordered) - 1) // 2], "p95": p95, "max": ordered[-1],
            "mean": round(statistics.fmean(ordered), 1)}


def _dump(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def check_out(out: str | Path) -> Path:
    """``--out`` may be new, empty or a corpus this command wrote (it is replaced as a whole): any other folder is
    refused, so that nothing else is ever deleted."""
    out = Path(out)
    if out.is_dir() and any(out.iterdir()) and not (out / INGEST_REPORT_FILE).is_file():
        raise UsageError(f"--out {out}: a folder that is not empty and holds no {INGEST_REPORT_FILE} (not a corpus "
                         "this command wrote); pass a new or empty folder")
    return out


def ingest(source: str | Path, out: str | Path, check: Callable[[Path], dict] | None = None) -> dict:
    """Ingest ``source`` into the corpus folder ``out`` (replaced atomically: on any error it is left as it was);
    returns the build report. ``check``, given the corpus folder before it replaces ``out``, returns what the report
    keeps under ``"questions"`` (``rirag data ingest --questions``: how a question file's gold maps)."""
    from rirag.io import atomic_dir

    source, out = Path(source), check_out(out)
    documents, doc_map, report = build_corpus(source)
    with atomic_dir(out) as tmp:
        (tmp / "documents").mkdir()
        for n, records in documents.items():
            (tmp / "documents" / f"{n}.json").write_text(_dump(records), encoding="utf-8")
        (tmp / DOCUMENT_MAP_FILE).write_text(_dump(doc_map), encoding="utf-8")
        if check is not None:
            report["questions"] = check(tmp)
        (tmp / INGEST_REPORT_FILE).write_text(_dump(report), encoding="utf-8")
    logger.info("ingested %s: %d passages of %d documents", source, report["passages"], report["documents"])
    return report
