"""Assembling a corpus folder from the documents the readers give (:mod:`rirag.data.ingest.readers`): numbering,
dropping empty, deleted and duplicate passages, the build report, and the atomic write of ``--out``."""

from __future__ import annotations

import json
import logging
import re
import statistics
import uuid
from collections import Counter
from pathlib import Path
from typing import Callable

from rirag.constants import INGEST_ID_NAMESPACE, INGEST_REPORT_FILE
from rirag.data.ingest.labels import label_passages, split_long
from rirag.data.ingest.raw import Dropped, RawDocument
from rirag.data.ingest.readers import HTML, RECORDS, TEXT, reader_for
from rirag.data.obliqa import DOCUMENT_MAP_FILE
from rirag.errors import DataError, UsageError

logger = logging.getLogger(__name__)
#: Passages that are only a deletion or blank-provision note.
DELETED_TEXT = re.compile(r"^\[?\s*(deleted|note:\s*provision left blank|this rule has been deleted)\s*\.?\s*\]?\.?$",
                          re.IGNORECASE)


def passage_uuid(document_key: str, label: str) -> str:
    return str(uuid.uuid5(uuid.UUID(INGEST_ID_NAMESPACE), f"{document_key}\x1f{label}"))


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def read_source(source: Path) -> tuple[list[RawDocument], Dropped, str]:
    """Parse ``source`` (a folder of pages or text files, or a JSONL/CSV file) into documents, each read by the
    reader of its suffix (:data:`rirag.data.ingest.readers.READERS`)."""
    dropped = Dropped()
    if source.is_file():
        if reader_for(source) is not RECORDS:
            raise DataError(f"{source}: not a folder of pages or text files, nor a .jsonl/.csv of passages")
        return RECORDS.read(source, source.parent, dropped), dropped, RECORDS.kind
    if not source.is_dir():
        raise DataError(f"{source}: no such file or folder")
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))
    pages = [p for p in files if reader_for(p) is HTML]
    texts = [p for p in files if reader_for(p) is TEXT and p.name != "SOURCE.md"]
    if pages:
        docs = [d for p in pages for d in HTML.read(p, source, dropped)]
        if not docs:
            raise DataError(f"{source}: no page has content beside navigation ({len(pages)} pages read)")
        kind = HTML.kind
    elif texts:
        docs = [d for p in texts for d in TEXT.read(p, source, dropped)]
        kind = TEXT.kind
    else:
        raise DataError(f"{source}: no parsable page (no .html/.htm, .txt or .md file)")
    return _numbered(docs), dropped, kind


def _numbered(docs: list[RawDocument]) -> list[RawDocument]:
    """The documents in key order (two captures of one page kept apart by file name), their passages labelled and
    long ones cut (unless the reader labelled them)."""
    keys = Counter(d.key for d in docs)
    for d in docs:
        if keys[d.key] > 1:  # two captures of one page: keep the file name apart
            d.key = Path(d.source).stem
    docs.sort(key=lambda d: d.key)
    for d in docs:
        if not d.labelled:
            label_passages(d)
            d.passages = [part for p in d.passages for part in split_long(p)]
    return docs


def build_corpus(source: Path) -> tuple[dict[int, list[dict]], dict[str, list[str]], dict]:
    """The corpus records per DocumentID, the document map and the build report (nothing written)."""
    docs, dropped, kind = read_source(source)
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
            pid = p.given_id or passage_uuid(doc.key, p.label)
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
