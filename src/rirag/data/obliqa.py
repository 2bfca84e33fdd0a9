"""ObliQA data layer: corpus, questions and qrels, loaded from a local folder or the Hugging Face Hub.

The published layout (the Hub dataset ``RegNLP/ObliQA`` and ``../shared/data/obliqa``)::

    documents/1.json ... documents/40.json   lists of {ID, DocumentID, PassageID, Passage}
    ObliQA_train.json (optional), ObliQA_dev.json, ObliQA_test.json
                                             lists of {QuestionID, Question, Passages:[...], Group}
    RIRAG_Unseen_Questions.json (optional)   lists of {QuestionID, Question}
    document_map.json (optional)             DocumentID -> [file stem, short code, title, ...]

A folder with none of the split files is a corpus alone (``rirag data ingest`` writes one, its passages with extra
fields that are read past): it has no splits, and its questions come from a ``--questions`` file
(:mod:`rirag.data.questions`).

Corpus ids are the passages' ``ID`` (a UUID). ``DocumentID|PassageID`` is *not* unique (17 keys carry
different passages), so a gold passage is mapped by (DocumentID, PassageID, text). Gold passages whose text
matches nothing exactly are repaired only when the key names a passage whose text is an intact prefix of it
(see :data:`GOLD_REPAIR_MIN_PREFIX`); everything else is reported, never silently dropped.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping

from rirag.data.passage_store import Passage, PassageTable, load_table
from rirag.errors import DataError
from rirag.io import read_json

logger = logging.getLogger(__name__)

HUB_DATASET_ID = "RegNLP/ObliQA"
DATA_ENV_VAR = "RIRAG_DATA_DIR"
ORIGINAL_SPLIT_FILES = {"train": "ObliQA_train.json", "dev": "ObliQA_dev.json", "test": "ObliQA_test.json"}
UNSEEN_FILE = "RIRAG_Unseen_Questions.json"
DOCUMENT_MAP_FILE = "document_map.json"

PASSAGE_FIELDS = ("ID", "DocumentID", "PassageID", "Passage")
QUESTION_FIELDS = ("QuestionID", "Question", "Passages")
GOLD_FIELDS = ("DocumentID", "PassageID", "Passage")

#: A gold passage whose (DocumentID, PassageID, text) matches no corpus record is mapped to a passage with the
#: same DocumentID|PassageID when the two texts share at least this many leading characters (or the whole
#: corpus passage, if shorter). Each published split has one such record (dev: 10|4.7.7, test:
#: 1|2.Guidance.27.): a gold text spliced from two passages, a copy error in ObliQA. The passage it names exists
#: and its first 99 / 126 characters are intact, so the question keeps its gold passage, reported as "repaired".
GOLD_REPAIR_MIN_PREFIX = 80


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    gold: tuple[str, ...] = ()  # corpus ids
    group: int | None = None
    gold_documents: tuple[int, ...] = ()  # DocumentIDs of all gold passages, mapped or not


@dataclass
class GoldIssue:
    """A gold passage that did not map exactly to the corpus."""

    source: str
    question_id: str
    document_id: Any
    passage_id: Any
    resolution: str  # "repaired" or "unmapped"
    corpus_id: str | None = None
    common_prefix: int | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class ObliQA:
    """The whole dataset: corpus, titles, the published question splits and the build report."""

    root: str
    passages: Mapping[str, Passage]  # every record, empty ones included (a PassageTable when loaded from a folder)
    titles: dict[int, str]
    splits: dict[str, list[Question]]  # "train" (optional), "dev", "test"
    gold_issues: list[GoldIssue] = field(default_factory=list)

    @property
    def unseen_path(self) -> Path:
        """The folder's unseen questions (:data:`UNSEEN_FILE`, optional), read by
        :func:`rirag.data.questions.unseen_questions` as every questions file is."""
        return Path(self.root) / UNSEEN_FILE

    @cached_property
    def corpus(self) -> Mapping[str, Passage]:
        """Indexable passages: empty or whitespace-only records are left out (computed once: callers index it in
        loops, and the passages do not change after loading; over a :class:`PassageTable`, its view without them,
        no text read)."""
        if isinstance(self.passages, PassageTable):
            return self.passages.indexable()
        return {pid: p for pid, p in self.passages.items() if p.text.strip()}

    @property
    def empty_ids(self) -> list[str]:
        corpus = self.corpus
        return [pid for pid in self.passages if pid not in corpus]

    def title(self, document_id: int) -> str:
        return self.titles.get(document_id, f"Document {document_id}")

    def report(self) -> dict:
        keys = Counter((p.document_id, p.passage_id) for p in self.passages.values())
        return {
            "passage_records": len(self.passages),
            "indexed_passages": len(self.passages) - len(self.empty_ids),
            "empty_passages": len(self.empty_ids),
            "distinct_document_passage_keys": len(keys),
            "duplicate_keys": sum(1 for n in keys.values() if n > 1),
            "documents": len({p.document_id for p in self.passages.values()}),
            "questions": {name: len(qs) for name, qs in self.splits.items()},
            "gold_repaired": [g.as_dict() for g in self.gold_issues if g.resolution == "repaired"],
            "gold_unmapped": [g.as_dict() for g in self.gold_issues if g.resolution == "unmapped"],
        }


# --------------------------------------------------------------------------------------------------
# Locating the data
# --------------------------------------------------------------------------------------------------


def resolve_data_dir(data: str | os.PathLike | None = None) -> Path:
    """Where the data comes from: ``data`` if given, else ``$RIRAG_DATA_DIR``, else the Hub snapshot."""
    if data is None:
        data = os.environ.get(DATA_ENV_VAR) or None
    if data is None:
        return _hub_snapshot(HUB_DATASET_ID)
    path = Path(data)
    if path.is_dir():
        return path
    if _hub_id(str(data)):
        return _hub_snapshot(str(data))
    raise DataError(f"data folder not found: {path} (set --data or ${DATA_ENV_VAR} to a folder in the ObliQA layout"
                    f"{'' if path.exists() else ', or to a Hub dataset id owner/name'})")


#: A Hub repository id: owner/name, of letters, digits, '-', '_' and '.'.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def _hub_id(data: str) -> bool:
    """``data`` is taken as a Hub id only when it is one (owner/name) and nothing local is what it names: no file of
    that name, and no local folder ``owner`` (then ``owner/name`` is a mistyped path in it)."""
    if not HUB_ID.fullmatch(data) or data.endswith((".json", ".jsonl", ".csv")):
        return False
    path = Path(data)
    return not path.exists() and not path.parent.exists()


def _hub_snapshot(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    logger.info("downloading dataset %s from the Hugging Face Hub", repo_id)
    try:
        return Path(snapshot_download(repo_id=repo_id, repo_type="dataset"))
    except Exception as err:  # network, auth, offline mode
        raise DataError(
            f"could not fetch {repo_id} from the Hub ({err.__class__.__name__}: {err}); "
            f"pass --data or set ${DATA_ENV_VAR} to a local copy"
        ) from err


def records_in(path: Path, required: Iterable[str]) -> list[dict]:
    """The records of a JSON list file (a document file, a questions file), each checked to hold ``required``
    (a bad record is one :class:`~rirag.errors.DataError` naming the file, the record and the field)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    for i, rec in enumerate(data):
        _check_fields(rec, required, f"{path}: record {i}")
    return data


def _check_fields(rec: Any, required: Iterable[str], where: str) -> None:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object, got {type(rec).__name__}")
    for name in required:
        if name not in rec:
            ident = rec.get("QuestionID") or rec.get("ID")
            label = f"{where} (id {ident})" if ident else where
            raise DataError(f"{label}: missing field {name!r}")
        if name in ("ID", "QuestionID", "Question", "Passage", "PassageID") and not isinstance(rec[name], str):
            raise DataError(f"{where}: field {name!r} must be a string, got {type(rec[name]).__name__}")


def document_files(root: Path) -> list[Path]:
    """The document files of a corpus folder (``documents/*.json``), in document order (1, 2, ..., 10, ...)."""
    folder = root / "documents"
    if not folder.is_dir():
        raise DataError(f"{root}: no documents/ folder (expected documents/1.json ... in the ObliQA layout)")
    files = sorted(folder.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise DataError(f"{folder}: no *.json documents")
    return files


def load_titles(root: Path, raw: object = None) -> dict[int, str]:
    """DocumentID -> title from the folder's document map (``raw``: the map, when the caller has read it)."""
    path = root / DOCUMENT_MAP_FILE
    if raw is None:
        if not path.exists():
            return {}
        raw = read_json(path)
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected an object DocumentID -> [stem, code, title, ...]")
    titles = {}
    for key, value in raw.items():
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise DataError(f"{path}: entry {key!r} must be a list of names [file stem, code, title, ...]")
        names = value[1:] or value  # the first entry is the source file's stem
        titles[int(key)] = _fix_cp1252(max(names, key=len))
    return titles


_CP1252 = re.compile(r"'9([1-7])")


def _fix_cp1252(text: str) -> str:
    """document_map.json spells Windows-1252 punctuation as an apostrophe and its hex code ('96 for an en dash);
    whitespace runs become one space (``str.split`` splits where ``\\s`` matches)."""
    if "'9" in text:
        text = _CP1252.sub(lambda m: bytes([0x90 + int(m.group(1))]).decode("cp1252"), text)
    return " ".join(text.split())


def load_obliqa(data: str | os.PathLike | None = None) -> ObliQA:
    """Load the corpus and every published split found in the folder (or Hub snapshot)."""
    root = resolve_data_dir(data)
    # converted to Arrow once (under the cache folder, keyed by the files' names, sizes and times), memory-mapped
    # after: a Passage is built when asked for
    passages = load_table(root, document_files(root), _passage_records)
    logger.info("loaded %d passage records from %s", len(passages), root)

    mapper = GoldMapper(passages)
    splits: dict[str, list[Question]] = {}
    # a corpus without any question file (one that `rirag data ingest` wrote) has no splits: its questions come
    # from a --questions file; a folder with some of ObliQA's split files must have dev and test
    corpus_only = not any((root / f).exists() for f in ORIGINAL_SPLIT_FILES.values())
    for name, filename in ORIGINAL_SPLIT_FILES.items():
        path = root / filename
        if not path.exists():
            if name != "train" and not corpus_only:
                raise DataError(f"{path}: file not found (the {name} split is required)")
            continue
        splits[name] = [_question(rec, path, i, mapper) for i, rec in enumerate(records_in(path, QUESTION_FIELDS))]
    for issue in mapper.issues:  # a repair keeps the question's gold (noted, in the data report too); a loss warns
        logger.log(
            logging.INFO if issue.resolution == "repaired" else logging.WARNING,
            "gold passage %s|%s of question %s (%s): %s%s",
            issue.document_id, issue.passage_id, issue.question_id, issue.source, issue.resolution,
            f" to {issue.corpus_id} ({issue.common_prefix} leading characters agree)" if issue.corpus_id else "",
        )
    return ObliQA(str(root), passages, load_titles(root), splits, mapper.issues)


def _passage_records(path: Path) -> list[tuple[str, int, str, str, tuple, tuple]]:
    """(ID, DocumentID, PassageID, text, marks, items) of each record of a document file, checked
    (:func:`records_in`); ``marks`` and ``items`` from an ingested page's ``FootnoteMarks`` and ``ListItems``
    ((start, end) and (start, level) pairs; none where the record has no such field)."""
    return [(rec["ID"], int(rec["DocumentID"]), rec["PassageID"], rec["Passage"],
             *_structure(rec, f"{path}: record {i}")) for i, rec in enumerate(records_in(path, PASSAGE_FIELDS))]


def _structure(rec: dict, where: str) -> tuple[tuple, tuple]:
    """A record's footnote marks and list items as :class:`Passage` keeps them ((start, end), (start, level))."""
    marks = record_marks(rec, where) or ()
    items = rec.get("ListItems") or ()
    try:
        items = tuple((int(i["start"]), int(i["level"])) for i in items)
    except (TypeError, KeyError, ValueError) as err:
        raise DataError(f"{where} (id {rec['ID']}): field 'ListItems' must be a list of {{start, level}} ({err})") \
            from None
    if any(not 0 <= a < len(rec["Passage"]) for a, _ in items):
        raise DataError(f"{where} (id {rec['ID']}): field 'ListItems' has an item outside the passage text")
    return tuple((a, b) for a, b, _ in marks), items


def record_marks(rec: dict, where: str) -> tuple[tuple[int, int, str], ...] | None:
    """A passage record's footnote marks as its ``FootnoteMarks`` field gives them ((start, end, target), in text
    order; ``rirag data ingest`` writes the field for an HTML page's passages), each checked to fall in its text;
    None when the record has no such field (a source that carries no structure)."""
    marks = rec.get("FootnoteMarks")
    if marks is None:
        return None
    try:
        found = tuple(sorted((int(m["start"]), int(m["end"]), str(m.get("target") or "")) for m in marks))
    except (TypeError, KeyError, ValueError) as err:
        raise DataError(f"{where} (id {rec['ID']}): field 'FootnoteMarks' must be a list of {{start, end, target}} "
                        f"({err})") from None
    if any(not 0 <= a < b <= len(rec["Passage"]) for a, b, _ in found):
        raise DataError(f"{where} (id {rec['ID']}): field 'FootnoteMarks' has a mark outside the passage text")
    return found


def _question(rec: dict, path: Path, index: int, mapper: "GoldMapper") -> Question:
    qid = rec["QuestionID"]
    if not isinstance(rec["Passages"], list):
        raise DataError(f"{path}: record {index} (id {qid}): field 'Passages' must be a list")
    gold, docs = [], []
    for j, p in enumerate(rec["Passages"]):
        _check_fields(p, GOLD_FIELDS, f"{path}: record {index} (id {qid}) Passages[{j}]")
        docs.append(int(p["DocumentID"]))
        cid = mapper.map(p, qid, path.name)
        if cid is not None and cid not in gold:
            gold.append(cid)
    return Question(qid, rec["Question"], tuple(gold), rec.get("Group"), tuple(dict.fromkeys(docs)))


class GoldMapper:
    """Map gold passages to corpus ids by (DocumentID, PassageID, text), repairing near matches. Its indexes are
    built on the first gold passage: a corpus without question files (``rirag data ingest``'s) never builds them
    (3.2 s and two dicts of every passage at a million passages)."""

    def __init__(self, passages: Mapping[str, Passage]):
        self._passages = passages
        self._exact: dict[tuple[int, str, str], str] | None = None
        self._by_key: dict[tuple[int, str], list[Passage]] = {}
        self.issues: list[GoldIssue] = []

    @property
    def exact(self) -> dict[tuple[int, str, str], str]:
        if self._exact is None:
            self._exact = {}
            for p in self._passages.values():
                self._exact.setdefault((p.document_id, p.passage_id, p.text), p.id)
                self._by_key.setdefault((p.document_id, p.passage_id), []).append(p)
        return self._exact

    @property
    def by_key(self) -> dict[tuple[int, str], list[Passage]]:
        self.exact  # noqa: B018 -- built together
        return self._by_key

    def map(self, gold: Mapping[str, Any], question_id: str, source: str) -> str | None:
        doc, pid, text = int(gold["DocumentID"]), gold["PassageID"], gold["Passage"]
        hit = self.exact.get((doc, pid, text))
        if hit is not None:
            return hit
        best, best_prefix = None, -1
        for cand in self.by_key.get((doc, pid), []):
            prefix = len(os.path.commonprefix([cand.text, text]))
            if prefix > best_prefix:
                best, best_prefix = cand, prefix
        if best is not None and best_prefix >= min(GOLD_REPAIR_MIN_PREFIX, len(best.text)) and best_prefix > 0:
            self.issues.append(GoldIssue(source, question_id, doc, pid, "repaired", best.id, best_prefix))
            return best.id
        self.issues.append(GoldIssue(source, question_id, doc, pid, "unmapped", None, best_prefix if best else None))
        return None
