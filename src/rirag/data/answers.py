"""The answers file: its fields, its one reader, its journaled writer and the shared-task export.

An answers file is a JSON list of records, one per question, in the shared task's layout (:data:`SHARED_TASK_FIELDS`:
``QuestionID``, ``Question``, ``RetrievedPassages``, ``Answer``, ``RetrievedIDs``) plus ``Citations`` (one object per
``[n]`` marker: its sentence, number, passage id and validity), and, when they apply, ``Followed`` (cross-references
the answerer followed) and ``Warnings`` (the fallbacks of :mod:`rirag.generation.pipeline`).

* :func:`read_answers` reads one (``.json``, or gzipped ``.json.gz`` as the benchmarks commit them), bounded and
  checked: errors name the file, the record and the field. Every command and scorer reads answers through it.
* :class:`AnswersFile` writes one resumably: each record is appended to ``<out>.partial.jsonl`` and flushed as it is
  written; :meth:`AnswersFile.finalize` merges them into ``out`` atomically, in question order.
* :func:`shared_task_records` is the shared task's own answers file (its five fields, the answer without markers),
  written from the records in memory (``rirag submit``), never by reading the answers file back.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rirag.errors import DataError
from rirag.io import atomic_write_json, read_input_bytes, read_json
from rirag.validation import record_id

logger = logging.getLogger(__name__)

#: The shared task's answer record, in its order.
SHARED_TASK_FIELDS = ("QuestionID", "Question", "RetrievedPassages", "Answer", "RetrievedIDs")
#: rirag's fields after them: the citation table, then (when present) what was followed and the fallbacks.
CITATIONS_FIELD, FOLLOWED_FIELD, WARNINGS_FIELD = "Citations", "Followed", "Warnings"
#: What every scorer needs of a record.
REQUIRED_FIELDS = ("QuestionID", "RetrievedPassages", "Answer")
#: The journal beside an answers file (``<out>.partial.jsonl``), appended to and flushed as each answer is written.
JOURNAL_SUFFIX = ".partial.jsonl"


def read_answers(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Load and validate an answers file (``.json`` or ``.json.gz``); errors (``ValueError``) name the file, the
    record and the field."""
    raw = read_input_bytes(path)  # bounded: its size checked first; a device or an endless pipe refused
    try:
        data = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    except RecursionError:
        raise ValueError(f"{path}: not valid JSON (nested too deeply to read)") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of answer records, got {type(data).__name__}")
    seen: set[str] = set()
    for i, item in enumerate(data):
        qid = _checked_record(item, i, path)
        if qid in seen:
            raise ValueError(f"{path}: record {i}: duplicate QuestionID {qid!r}")
        seen.add(qid)
    return data


def _checked_record(item: Any, i: int, path: str | os.PathLike) -> str:
    """The record's QuestionID, once its required fields are there and typed."""
    if not isinstance(item, dict):
        raise ValueError(f"{path}: record {i} is not an object")
    for key in REQUIRED_FIELDS:
        if key not in item:
            raise ValueError(f"{path}: record {i} (QuestionID {item.get('QuestionID')!r}) lacks field {key!r}")
    qid = str(item["QuestionID"])
    answer, passages = item["Answer"], item["RetrievedPassages"]
    if answer is not None and not isinstance(answer, str):
        raise ValueError(f"{path}: record {i} (QuestionID {qid!r}): field 'Answer' must be a string or null")
    if not isinstance(passages, (str, list)) or (isinstance(passages, list)
                                                 and not all(isinstance(p, str) for p in passages)):
        raise ValueError(f"{path}: record {i} (QuestionID {qid!r}): field 'RetrievedPassages' must be a string or "
                         "a list of strings")
    return qid


def shared_task_records(records: Iterable[Mapping[str, Any]], plain: Callable[[str], str]) -> list[dict[str, Any]]:
    """The shared task's answers: each record's :data:`SHARED_TASK_FIELDS`, its ``Answer`` passed through ``plain``
    (``rirag.text.citations.strip_citations``: the official scorer would read ``[n]`` markers as text)."""
    return [{k: (plain(r.get(k) or "") if k == "Answer" else r.get(k)) for k in SHARED_TASK_FIELDS} for r in records]


class AnswersFile:
    """A shared-task answers JSON written resumably.

    Each answer is appended to ``<out>.partial.jsonl`` and flushed to disk as it is written; :meth:`finalize`
    merges the records into ``out`` atomically (in the given question order) and removes the journal. A rerun
    reads both and skips the ids already answered, so an interruption loses at most the answer being generated.
    """

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out)
        self.journal = self.out.with_name(self.out.name + JOURNAL_SUFFIX)
        self.records: dict[str, dict] = {}
        if self.out.exists():
            data = read_json(self.out)
            if not isinstance(data, list):
                raise DataError(f"{self.out}: expected a JSON list of answer records, got {type(data).__name__}")
            for i, rec in enumerate(data):
                if not isinstance(rec, dict) or "QuestionID" not in rec:
                    raise DataError(f"{self.out}: record {i} has no 'QuestionID'; move the file away to start over")
                self.records[str(rec["QuestionID"])] = rec
        if self.journal.exists():
            self._read_journal()
        self._fh = None

    def _read_journal(self) -> None:
        raw = self.journal.read_bytes()
        if raw and not raw.endswith(b"\n"):  # a torn last line: the answer being written when interrupted
            cut = raw.rfind(b"\n") + 1
            logger.warning("%s: dropping a torn last line (%d bytes)", self.journal, len(raw) - cut)
            raw = raw[:cut]
            with open(self.journal, "r+b") as fh:
                fh.truncate(cut)
        for n, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{self.journal}: line {n} is not JSON ({err.msg})") from err
            self.records[str(rec["QuestionID"])] = rec

    def __contains__(self, question_id: str) -> bool:
        return question_id in self.records

    def __len__(self) -> int:
        return len(self.records)

    def write(self, record: dict) -> None:
        record_id(record.get("QuestionID"), f"{self.out}: field 'QuestionID'")  # the run written beside it holds it
        if self._fh is None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.journal, "a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.records[str(record["QuestionID"])] = record

    def ordered(self, order: Iterable[str] = ()) -> list[dict]:
        """Every record, those in ``order`` first, in that order (what :meth:`finalize` writes)."""
        order = [q for q in dict.fromkeys(order) if q in self.records]
        first = set(order)
        return [self.records[q] for q in order + [q for q in self.records if q not in first]]

    def finalize(self, order: Iterable[str] = ()) -> Path:
        """Write every record to ``out`` (those in ``order`` first, in that order), atomically; drop the journal."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        atomic_write_json(self.out, self.ordered(order))
        self.journal.unlink(missing_ok=True)
        return self.out
