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
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from tqdm.auto import tqdm

from rirag.constants import INGEST_ID_NAMESPACE, INGEST_REPORT_FILE, MAX_INPUT_BYTES
from rirag.data.ingest.digests import DigestMap
from rirag.data.ingest.labels import label_plan, labelled, split_long
from rirag.data.ingest.raw import Dropped, RawDocument, RawPassage
from rirag.data.ingest.readers import READERS, reader_for
from rirag.data.obliqa import DOCUMENT_MAP_FILE
from rirag.errors import DataError, UsageError
from rirag.io import RAISE_LIMIT_HINT, max_input_bytes

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


class Spool:
    """The passages read, on disk until their document's turn (one JSON line each, in ``folder``): a source is
    never held in memory, and a document's passages are read back in order (three times: to count its rule
    numbers, to count its labels, to label and write them)."""

    NAME = ".passages.spool"

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / self.NAME
        self._fh = open(self.path, "w+b")

    def add(self, p: RawPassage) -> int:
        offset = self._fh.seek(0, os.SEEK_END)
        row = [p.rule, p.headings, p.lines, p.given_id]
        if p.structured:
            row.append([p.marks, p.items, p.anchor])
        self._fh.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
        return offset

    def read(self, offsets: array) -> Iterator[RawPassage]:
        fh = self._fh
        fh.flush()
        pos = -1
        for offset in offsets:
            if offset != pos:
                fh.seek(offset)
            line = fh.readline()
            pos = offset + len(line)
            rule, heads, lines, given, *structure = json.loads(line)
            p = RawPassage(rule, tuple(heads), lines, given_id=given)
            if structure:
                marks, items, p.anchor = structure[0]
                p.structured, p.marks, p.items = True, [tuple(m) for m in marks], [tuple(i) for i in items]
            yield p

    def close(self) -> None:
        self._fh.close()
        self.path.unlink(missing_ok=True)


@dataclass
class SourceDoc:
    """A document read: what its reader says of it, and where its passages lie in the :class:`Spool`."""

    raw: RawDocument
    offsets: array = field(default_factory=lambda: array("Q"))
    given_ids: bool = False  # a passage of it has the id its record gave

    @property
    def key(self) -> str:
        return self.raw.key


@dataclass
class Source:
    """What was read of a source: its documents, the passages dropped, each file skipped with its reason, and the
    kinds of reader used."""

    docs: list[SourceDoc] = field(default_factory=list)
    dropped: Dropped = field(default_factory=Dropped)
    skipped: list[dict[str, str]] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    @property
    def kind(self) -> str:
        return "+".join(sorted(self.kinds))

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append({"file": name, "reason": reason})


def read_source(source: Path, spool: Spool, out: Path | None = None) -> Source:
    """Parse ``source`` (a folder, or one file) into documents, each file read by the reader of its suffix
    (:data:`rirag.data.ingest.readers.READERS`) as it is read, its passages put in ``spool``. In a folder every file
    is read or skipped with its reason (no reader for its suffix, hidden, this command's own output, a file the
    reader refuses: what it gave before is dropped); ``out``, and any corpus folder this command wrote, is never
    read back as a source."""
    found = Source()
    if source.is_file():
        reader = reader_for(source)
        if reader is None:
            raise DataError(f"{source}: not a folder of pages or text files, nor a .jsonl/.csv of passages "
                            f"(formats: {', '.join(READERS)})")
        found.docs = _numbered(_read_file(reader, source, source.parent, found.dropped, spool))
        found.kinds = {reader.kind}
        return found
    if not source.is_dir():
        raise DataError(f"{source}: no such file or folder")
    tried = 0
    for path, reason in _files(source, out):
        name = path.relative_to(source).as_posix()
        too_large = "" if reason else _size_reason(path)  # by its size, before a reader parses it
        if too_large:
            logger.warning("skipped %s: %s", path, too_large)
        if reason or too_large:
            found.skip(name, reason or too_large)
            continue
        reader = reader_for(path)
        tried += 1
        try:
            found.docs.extend(_read_file(reader, path, source, found.dropped, spool))
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


def _size_reason(path: Path) -> str:
    """Why a file is skipped by its size alone, told by ``stat`` before any reader parses it ("" when it is read):
    over the input limit (:func:`rirag.io.max_input_bytes`), with the ``--max-input-bytes`` that reads it, and, for
    a file over :data:`CORPUS_FILE_LIMIT` (what a corpus file every command reads may hold), that its passages are
    kept only if their JSON fits, else to split it. A file read though over that size is said at once."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        return ""  # the reader names what is wrong with it
    limit = max_input_bytes()
    if size > limit:
        hint = f"{RAISE_LIMIT_HINT} (N ≥ {size})"
        if size > CORPUS_FILE_LIMIT:
            hint += (f"; its passages are kept only if their JSON comes to at most {CORPUS_FILE_LIMIT} bytes, the "
                     "corpus file every command reads (a page's markup is not kept), else split it into smaller files")
        return f"{size} bytes, larger than the {limit}-byte input limit; {hint}"
    if size > CORPUS_FILE_LIMIT:
        logger.warning("%s: %d bytes, over the %d-byte corpus file every command reads: read, but its passages are "
                       "kept only if their JSON comes to less (else: split it into smaller files)", path, size,
                       CORPUS_FILE_LIMIT)
    return ""


def _read_file(reader, path: Path, root: Path, dropped: Dropped, spool: Spool) -> list[SourceDoc]:
    """The documents of one file, in the order they first appear, their passages spooled as they are read."""
    docs: dict[int, SourceDoc] = {}
    passages = 0
    for raw, p in reader.read(path, root, dropped):
        doc = docs.get(id(raw))
        if doc is None:
            doc = docs[id(raw)] = SourceDoc(raw)
        doc.offsets.append(spool.add(p))
        doc.given_ids = doc.given_ids or p.given_id is not None
        passages += 1
    logger.debug("read %s: %d passages", path, passages)
    return list(docs.values())


def _files(source: Path, out: Path | None) -> Iterator[tuple[Path, str]]:
    """Every file under ``source`` in path order, with the reason it is skipped ("" when it is read); a hidden
    folder, ``out`` and a corpus folder this command wrote are one skipped entry each, never walked into; the
    temporary folder this command writes beside ``out`` (:func:`ingest`) is not the user's, and not listed."""
    out = out.resolve() if out is not None else None
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        for d in list(dirs):
            sub = here / d
            if out is not None and d.startswith(f".{out.name}.") and d.endswith(".tmp") and \
                    here.resolve() == out.parent:
                dirs.remove(d)
                continue
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


def _numbered(docs: list[SourceDoc]) -> list[SourceDoc]:
    """The documents in key order (two captures of one page kept apart by file name)."""
    keys = Counter(d.key for d in docs)
    for d in docs:
        if keys[d.key] > 1:  # two captures of one page: keep the file name apart
            d.raw.key = Path(d.raw.source).stem
    docs.sort(key=lambda d: d.key)
    return docs


def _passages(doc: SourceDoc, spool: Spool) -> Iterator[RawPassage]:
    """A document's passages labelled (:func:`~rirag.data.ingest.labels.labelled`) and long ones cut (unless its
    reader keeps them whole), read back from the spool."""
    passages = labelled(spool.read(doc.offsets), label_plan(lambda: spool.read(doc.offsets)))
    if doc.raw.whole:
        return passages
    return (part for p in passages for part in split_long(p))


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


def _labelled_or_refused(passages: Iterator[RawPassage], source: str) -> Iterator[RawPassage]:
    """``passages``, a labelling that cannot give each its own PassageID refused naming the file."""
    try:
        yield from passages
    except DataError as err:
        raise DataError(f"{source}: {err}") from None


class _RecordsFile:
    """A document's corpus file written record by record, byte for byte what ``json.dump(records, indent=2)``
    writes (and a newline); past ``limit`` bytes it stops writing and only counts (the file is then removed)."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.size = 0
        self.count = 0
        self._fh = None

    def add(self, record: dict) -> None:
        text = json.dumps(record, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        data = (",\n  " if self.count else "[\n  ").encode("utf-8") + text.encode("utf-8")
        self.count += 1
        self.size += len(data)
        if self.size + 3 > self.limit:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
                self.path.unlink()
            return
        if self._fh is None:
            self._fh = open(self.path, "wb")
        self._fh.write(data)

    def close(self) -> int:
        """The file's size when it is over the limit (nothing left written), else 0."""
        if self.count:
            self.size += 3  # "\n]\n"
        if self._fh is not None:
            self._fh.write(b"\n]\n")
            self._fh.close()
            self._fh = None
        return self.size if self.size > self.limit else 0


def write_documents(source: Path, folder: Path, out: Path | None = None) -> tuple[dict[str, list[str]], dict]:
    """Read ``source`` and write its corpus files into ``folder`` (``documents/N.json``, one document at a time);
    returns the document map and the build report. ``out`` is never read as part of ``source``. What is held
    while it runs is each passage's 16-byte text digest and id (duplicates and clashes are found across the
    corpus), never a document's text."""
    spool = Spool(folder)
    try:
        found = read_source(source, spool, out)
        return _write(found, spool, source, folder)
    finally:
        spool.close()


def _write(found: Source, spool: Spool, source: Path, folder: Path) -> tuple[dict[str, list[str]], dict]:
    dropped = found.dropped
    doc_map: dict[str, list[str]] = {}
    seen_text = DigestMap()  # text digest -> the id of the first passage with it (a UUID's int, a given id's digest)
    given: dict[int, str] = {}  # a given id's digest -> the id
    # A made id is a UUID5 of the document key and a label unique in its document (labels.labelled): two can meet
    # only when two documents share a key, or a record gives an id; only then is every id kept and checked.
    keys = Counter(doc.key for doc in found.docs)
    check_ids = any(doc.given_ids for doc in found.docs) or any(n > 1 for n in keys.values())
    ids = DigestMap()  # the ids written, as 128-bit ints (a UUID's own, a given id's digest)
    lengths = array("I")
    passages = 0
    (folder / "documents").mkdir()
    for n, doc in enumerate(tqdm(found.docs, desc="documents", unit="doc", disable=len(found.docs) < 50), 1):
        raw = doc.raw
        out = _RecordsFile(folder / "documents" / f"{n}.json", CORPUS_FILE_LIMIT)
        words = array("I")
        for p in _labelled_or_refused(_passages(doc, spool), raw.source):
            reason = drop_reason(p.text)
            pid = p.given_id or passage_uuid(raw.key, p.label)
            norm = int.from_bytes(_text_key(p.text), "little")
            first = seen_text.get(norm) if not reason else None
            if first is not None:
                reason = "duplicate"
                first_id = given.get(first) or uuid.UUID(int=first)
                dropped.add(reason, f"{raw.source}: {p.label} (same text as {first_id})")
            elif reason:
                dropped.add(reason, f"{raw.source}: {p.label}")
            else:
                if p.given_id:
                    digest = int.from_bytes(hashlib.blake2b(pid.encode("utf-8"), digest_size=16).digest(), "little")
                    given[digest] = pid
                else:
                    digest = uuid.UUID(pid).int
                seen_text.add(norm, digest)
                if check_ids:
                    if digest in ids:
                        raise DataError(f"{source}: passage id {pid!r} is used by two passages")
                    ids.add(digest, 0)
                out.add(_record(pid, n, p, raw.source))
                words.append(len(p.text.split()))
        size = out.close()
        if size:
            found.skip(raw.source, f"its passages come to {size} bytes of JSON, over the {CORPUS_FILE_LIMIT}-byte "
                                   "corpus file every command reads: split the page into smaller files")
            logger.warning("skipped %s: %s", raw.source, found.skipped[-1]["reason"])
        elif out.count:
            doc_map[str(n)] = [raw.source, raw.title]
            lengths.extend(words)
            passages += out.count
    if not doc_map:
        why = "; ".join(f"{s['file']}: {s['reason']}" for s in found.skipped[:5])
        raise DataError(f"{source}: no passage left after dropping empty, navigation and duplicate ones"
                        + (f"; skipped {why}" if why else ""))
    report = {
        "source": source.name,
        "kind": found.kind,
        "documents": len(doc_map),
        "passages": passages,
        "dropped": dict(sorted(dropped.counts.items())),
        "dropped_examples": {k: v for k, v in sorted(dropped.examples.items())},
        "length_words": _distribution(lengths),
    }
    if found.skipped:
        report["skipped"] = found.skipped
    return doc_map, report


def _record(pid: str, n: int, p: RawPassage, source: str) -> dict:
    """A passage's record in ``documents/N.json``; a passage whose reader read the source's structure carries it
    (:meth:`~rirag.data.ingest.raw.RawPassage.fields`)."""
    record = {"ID": pid, "DocumentID": n, "PassageID": p.label, "Passage": p.text, "Rule": p.rule,
              "Headings": list(p.headings), "Source": source}
    return record | p.fields() if p.structured else record


def _distribution(values) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"min": ordered[0], "median": ordered[(len(ordered) - 1) // 2], "p95": p95, "max": ordered[-1],
            "mean": round(statistics.fmean(ordered), 1)}


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
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        doc_map, report = write_documents(source, tmp, out)
        replaced = _replaced(out) if out.is_dir() else []
        if replaced:
            report["replaced"] = replaced
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
