"""Assembling a corpus folder from the documents the readers give (:mod:`rirag.data.ingest.readers`): numbering,
dropping empty, deleted and duplicate passages, the build report, and the atomic write of ``--out``."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import statistics
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from rirag.constants import INGEST_ID_NAMESPACE, INGEST_REPORT_FILE, MAX_INPUT_BYTES
from rirag.data.ingest.labels import label_passages, split_long
from rirag.data.ingest.raw import Dropped, RawDocument
from rirag.data.ingest.readers import READERS, reader_for
from rirag.data.obliqa import DOCUMENT_MAP_FILE
from rirag.errors import DataError, UsageError

logger = logging.getLogger(__name__)
#: Passages that are only a deletion or blank-provision note.
DELETED_TEXT = re.compile(r"^\[?\s*(deleted|note:\s*provision left blank|this rule has been deleted)\s*\.?\s*\]?\.?$",
                          re.IGNORECASE)


def passage_uuid(document_key: str, label: str) -> str:
    return str(uuid.uuid5(uuid.UUID(INGEST_ID_NAMESPACE), f"{document_key}\x1f{label}"))


def _text_key(text: str) -> bytes:
    """What two passages of the same text share (whitespace and case aside): a 16-byte digest, not a copy."""
    return hashlib.blake2b(" ".join(text.split()).casefold().encode("utf-8"), digest_size=16).digest()


#: A file of a rulebook capture that is about the capture, not rulebook text.
PROVENANCE_NOTE = "SOURCE.md"


@dataclass
class Source:
    """What was read of a source: its documents, the passages dropped, each file skipped with its reason, and the
    kinds of reader used."""

    docs: list[RawDocument] = field(default_factory=list)
    dropped: Dropped = field(default_factory=Dropped)
    skipped: list[dict[str, str]] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    @property
    def kind(self) -> str:
        return "+".join(sorted(self.kinds))

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append({"file": name, "reason": reason})


def read_source(source: Path, out: Path | None = None) -> Source:
    """Parse ``source`` (a folder, or one file) into documents, each file read by the reader of its suffix
    (:data:`rirag.data.ingest.readers.READERS`). In a folder every file is read or skipped with its reason (no reader
    for its suffix, hidden, this command's own output, a file the reader refuses); ``out``, and any corpus folder
    this command wrote, is never read back as a source."""
    found = Source()
    if source.is_file():
        reader = reader_for(source)
        if reader is None:
            raise DataError(f"{source}: not a folder of pages or text files, nor a .jsonl/.csv of passages "
                            f"(formats: {', '.join(READERS)})")
        found.docs, found.kinds = reader.read(source, source.parent, found.dropped), {reader.kind}
        return found
    if not source.is_dir():
        raise DataError(f"{source}: no such file or folder")
    tried = 0
    for path, reason in _files(source, out):
        name = path.relative_to(source).as_posix()
        if reason:
            found.skip(name, reason)
            continue
        reader = reader_for(path)
        tried += 1
        try:
            found.docs.extend(reader.read(path, source, found.dropped))
        except DataError as err:  # one bad file is reported and skipped, never the folder aborted
            logger.warning("skipped %s", err)
            found.skip(name, str(err).removeprefix(f"{path}: "))
            continue
        found.kinds.add(reader.kind)
    if not found.docs:
        why = "; ".join(f"{s['file']}: {s['reason']}" for s in found.skipped[:5])
        what = f"no file has content ({tried} read)" if tried else "no parsable page"
        raise DataError(f"{source}: {what} (formats: {', '.join(READERS)}){'; skipped ' + why if why else ''}")
    found.docs = _numbered(found.docs)
    return found


def _files(source: Path, out: Path | None) -> Iterator[tuple[Path, str]]:
    """Every file under ``source`` in path order, with the reason it is skipped ("" when it is read); a hidden
    folder, ``out`` and a corpus folder this command wrote are one skipped entry each, never walked into."""
    out = out.resolve() if out is not None else None
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        for d in list(dirs):
            sub = here / d
            reason = ("hidden folder" if d.startswith(".")
                      else "the --out folder of this ingest" if out is not None and sub.resolve() == out
                      else f"a corpus folder (holds {INGEST_REPORT_FILE})" if (sub / INGEST_REPORT_FILE).is_file()
                      else "")
            if reason:
                dirs.remove(d)
                yield sub, reason
        dirs.sort()
        for f in sorted(files):
            path = here / f
            yield path, _file_reason(path)


def _file_reason(path: Path) -> str:
    if path.name.startswith("."):
        return "hidden file"
    if path.name == PROVENANCE_NOTE:
        return "the capture's provenance note, not rulebook text"
    if reader_for(path) is None:
        return f"no reader for {path.suffix or 'a file without suffix'}"
    return ""


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


#: A passage that is only a footnote's mark and a link ("2. https://www.eiopa.europa.eu/..."): no rule text.
LINK_ONLY = re.compile(r"^(?:footnote\s+)?(?:\(?\w{1,4}[.)]?\s+)?(?:https?://|www\.)\S+$", re.IGNORECASE)
#: A passage with no letter or digit at all (".", "—").
NO_WORDS = re.compile(r"^\W*$")


def drop_reason(text: str) -> str:
    """Why a passage's text is not a passage ("" when it is one)."""
    text = text.strip()
    if not text:
        return "empty"
    if DELETED_TEXT.match(text):
        return "deleted"
    if NO_WORDS.match(text):
        return "no words"
    if LINK_ONLY.match(text):
        return "link only"
    return ""


def build_corpus(source: Path, out: Path | None = None) -> tuple[dict[int, list[dict]], dict[str, list[str]], dict]:
    """The corpus records per DocumentID, the document map and the build report (nothing written); ``out`` is never
    read as part of ``source``."""
    found = read_source(source, out)
    dropped = found.dropped
    documents: dict[int, list[dict]] = {}
    doc_map: dict[str, list[str]] = {}
    seen_text: dict[str, str] = {}
    for n, doc in enumerate(found.docs, 1):
        records = []
        for p in doc.passages:
            reason = drop_reason(p.text)
            pid = p.given_id or passage_uuid(doc.key, p.label)
            norm = _text_key(p.text)
            if not reason and norm in seen_text:
                reason = "duplicate"
                dropped.add(reason, f"{doc.source}: {p.label} (same text as {seen_text[norm]})")
            elif reason:
                dropped.add(reason, f"{doc.source}: {p.label}")
            else:
                seen_text[norm] = pid
                records.append({"ID": pid, "DocumentID": n, "PassageID": p.label, "Passage": p.text, "Rule": p.rule,
                                "Headings": list(p.headings), "Source": doc.source})
        doc.passages = []  # read into records: the raw copy is freed as the corpus is built
        size = _oversize(records)
        if size:
            found.skip(doc.source, f"its passages come to {size} bytes of JSON, over the {CORPUS_FILE_LIMIT}-byte "
                                   "corpus file every command reads: split the page into smaller files")
            logger.warning("skipped %s: %s", doc.source, found.skipped[-1]["reason"])
        elif records:
            documents[n] = records
            doc_map[str(n)] = [doc.source, doc.title]
    if not documents:
        why = "; ".join(f"{s['file']}: {s['reason']}" for s in found.skipped[:5])
        raise DataError(f"{source}: no passage left after dropping empty, navigation and duplicate ones"
                        + (f"; skipped {why}" if why else ""))
    ids = Counter(r["ID"] for rs in documents.values() for r in rs)
    clash = [i for i, c in ids.items() if c > 1]
    if clash:
        raise DataError(f"{source}: passage id {clash[0]!r} is used by two passages")
    report = {
        "source": source.name,
        "kind": found.kind,
        "documents": len(documents),
        "passages": sum(len(rs) for rs in documents.values()),
        "dropped": dict(sorted(dropped.counts.items())),
        "dropped_examples": {k: v for k, v in sorted(dropped.examples.items())},
        "length_words": _distribution([len(r["Passage"].split()) for rs in documents.values() for r in rs]),
    }
    if found.skipped:
        report["skipped"] = found.skipped
    return documents, doc_map, report


def _oversize(records: list[dict]) -> int:
    """The bytes of a document's corpus file when over :data:`CORPUS_FILE_LIMIT`, else 0 (it is serialised only when
    a bound of 6 bytes a character, a JSON escape's most, could pass the limit)."""
    bound = sum(6 * sum(len(str(v)) + 8 for v in r.values()) + 6 * sum(len(h) for h in r["Headings"]) + 16
                for r in records)
    if bound <= CORPUS_FILE_LIMIT:
        return 0
    size = len(_dump(records).encode("utf-8"))
    return size if size > CORPUS_FILE_LIMIT else 0


def _distribution(values: list[int]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"min": ordered[0], "median": ordered[(len(ordered) - 1) // 2], "p95": p95, "max": ordered[-1],
            "mean": round(statistics.fmean(ordered), 1)}


def _write_json(path: Path, obj) -> None:
    """``obj`` as :func:`_dump` writes it, encoded as it is written (no copy of the whole text in memory)."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def _dump(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


#: The largest corpus file written: what every command reads by default (``rirag ask`` has no --max-input-bytes).
CORPUS_FILE_LIMIT = MAX_INPUT_BYTES

#: The files and folders of a corpus this command writes: the only ones a re-ingest replaces.
CORPUS_FILES = ("documents", DOCUMENT_MAP_FILE, INGEST_REPORT_FILE)


def check_out(out: str | Path) -> Path:
    """``--out`` may be new, empty or a corpus this command wrote (its own files are replaced, anything else in it
    kept): any other folder is refused."""
    out = Path(out)
    if out.is_dir() and any(out.iterdir()) and not (out / INGEST_REPORT_FILE).is_file():
        raise UsageError(f"--out {out}: a folder that is not empty and holds no {INGEST_REPORT_FILE} (not a corpus "
                         "this command wrote); pass a new or empty folder")
    return out


def _replaced(out: Path) -> list[str]:
    """The corpus files of ``out`` that a new ingest replaces, as the report lists them."""
    names = []
    for name in sorted(CORPUS_FILES):
        path = out / name
        if path.is_dir():
            names.append(f"{name}/ ({sum(1 for p in path.rglob('*') if p.is_file())} files)")
        elif path.exists():
            names.append(name)
    return names


def ingest(source: str | Path, out: str | Path, check: Callable[[Path], dict] | None = None) -> dict:
    """Ingest ``source`` into the corpus folder ``out``; returns the build report. A new or empty ``out`` is written
    atomically; in a corpus this command wrote only its own files (:data:`CORPUS_FILES`) are replaced, each in one
    rename, the report last, and listed under ``"replaced"``; anything else there (``xref/``, a user's notes) is kept.
    On any error before the renames ``out`` is left as it was. ``check``, given the new corpus folder before it is
    moved in, returns what the report keeps under ``"questions"`` (``rirag data ingest --questions``)."""
    source, out = Path(source), check_out(out)
    documents, doc_map, report = build_corpus(source, out)
    replaced = _replaced(out) if out.is_dir() else []
    if replaced:
        report["replaced"] = replaced
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        (tmp / "documents").mkdir()
        for n, records in documents.items():
            _write_json(tmp / "documents" / f"{n}.json", records)
        (tmp / DOCUMENT_MAP_FILE).write_text(_dump(doc_map), encoding="utf-8")
        if check is not None:
            report["questions"] = check(tmp)
        (tmp / INGEST_REPORT_FILE).write_text(_dump(report), encoding="utf-8")
        _move_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logger.info("ingested %s: %d passages of %d documents", source, report["passages"], report["documents"])
    return report


def _move_in(tmp: Path, out: Path) -> None:
    """The corpus files written in ``tmp`` into ``out``: the whole folder when ``out`` is new or empty, else each
    corpus file in one rename (the old ``documents/`` set aside in ``tmp`` first), the report last."""
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        os.replace(tmp, out)
        return
    if (out / "documents").exists():
        os.replace(out / "documents", tmp / ".old-documents")
    for name in CORPUS_FILES:
        os.replace(tmp / name, out / name)
    kept = sorted(p.name for p in out.iterdir() if p.name not in CORPUS_FILES)
    if kept:
        logger.warning("kept in %s what is not this command's: %s%s", out, ", ".join(kept),
                       f" (xref/ is the graph of the corpus before: rerun `rirag data xref --data {out}`)"
                       if "xref" in kept else "")
