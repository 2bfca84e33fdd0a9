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
from pathlib import Path
from typing import Callable, Iterable, Iterator

from rirag.constants import (
    INGEST_HTML_SUFFIXES,
    INGEST_ID_NAMESPACE,
    INGEST_MAX_PASSAGE_WORDS,
    INGEST_PART_WORDS,
    INGEST_RECORD_SUFFIXES,
    INGEST_REPORT_FILE,
    INGEST_TERM_MAX_WORDS,
    INGEST_TEXT_SUFFIXES,
)
from rirag.data.ingest_html import (
    BARE_NUMBER,
    HEADING_REF,
    RULE_NUMBER,
    Dropped,
    RawDocument,
    RawPassage,
    _read_text,
    read_html_page,
)
from rirag.data.obliqa import DOCUMENT_MAP_FILE
from rirag.errors import DataError, UsageError

logger = logging.getLogger(__name__)
#: Passages that are only a deletion or blank-provision note.
DELETED_TEXT = re.compile(r"^\[?\s*(deleted|note:\s*provision left blank|this rule has been deleted)\s*\.?\s*\]?\.?$",
                          re.IGNORECASE)








# ====================================================================================================================
# HTML pages
# ====================================================================================================================






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
