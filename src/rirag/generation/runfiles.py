"""Answers files that never mix runs: a manifest beside each answers file, and a lock while a command writes it.

``rirag answer --out answers.json`` and ``rirag submit --out DIR`` (whose answers are ``DIR/answers.json``) write
``<answers>.manifest.json`` before their first answer. It holds what decides the answers: the question set (count
and fingerprint), where the passages come from (the run file's content hash, or the retriever with its model and
options), the generator with every option that changes what it writes (not its device, batch size, concurrency or
retries), the prompting strategy, ``k`` and the context filter. A rerun resumes only under the same manifest;
otherwise it stops with one line that names what differs, unless ``--overwrite``, which discards the answers already
there and starts afresh. Answers without a manifest (an older rirag, another tool) are not resumed silently either.

While a command writes, it holds ``<answers>.lock``, an operating-system file lock (:mod:`filelock`) that ends with
the process, even a killed one; a second command on the same answers fails at once with one line. The lock file is
removed when the command ends. A command that ends before its first answer leaves the folder as it found it: its
manifest goes again (the one before is put back), as does what ``--overwrite`` set aside, and the folders it made.

Every check here is cheap and runs before retrieval or any model loads: :meth:`AnswersRun.check` reads only the
manifest and looks for the answers files; :meth:`AnswersRun.__enter__` takes the lock, checks again (another
command may have written meanwhile) and writes the manifest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from rirag.constants import VERSION
from rirag.data.answers import JOURNAL_SUFFIX
from rirag.errors import DataError, UsageError
from rirag.io import atomic_write_bytes, atomic_write_json, read_json

logger = logging.getLogger(__name__)

#: Version of the manifest layout; a manifest of another format never matches. 2: the focused answerer's
#: missing-part line became a switch, off by default (``--say-missing``): answers under a format-1 manifest said it
#: without naming it, so they are not resumed as if written without it.
MANIFEST_FORMAT = 2
MANIFEST_SUFFIX = ".manifest.json"
LOCK_SUFFIX = ".lock"
#: What ``--overwrite`` sets aside until the new run writes its first answer.
OVERWRITTEN_SUFFIX = ".overwritten"
#: Manifest fields that describe a run without deciding its answers (never compared).
INFO_FIELDS = ("questions", "run", "written_by")
#: How each compared field reads in the one-line refusal.
FIELD_NAMES = {
    "format": "manifest format",
    "command": "command",
    "question_fingerprint": "the questions",
    "run_sha256": "the run file's content",
    "retriever": "retriever",
    "retriever_model": "retriever model",
    "retriever_options": "retriever options",
    "generator": "generator",
    "generator_options": "generator options",
    "strategy": "strategy",
    "k": "k",
    "filter": "context filter",
}


def fingerprint(questions: Iterable[tuple[str, str]]) -> str:
    """A content hash of ``[(QuestionID, Question)]`` in order: the same questions give the same value."""
    payload = json.dumps([[str(q), str(t)] for q, t in questions], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def build_manifest(command: str, questions: list[tuple[str, str]], questions_from: str, *,
                   passages: Mapping[str, Any], generator: Mapping[str, Any], strategy: str, k: int,
                   context_filter: str) -> dict[str, Any]:
    """The manifest of one ``answer``/``submit`` run. ``passages``: ``{"run": path, "run_sha256": ...}`` or
    ``{"retriever": ..., "retriever_model": ..., "retriever_options": [...]}``; ``generator``: the generator's name
    under ``"generator"`` and its answer-deciding options under ``"generator_options"``."""
    return {"format": MANIFEST_FORMAT, "command": command,
            "questions": f"{len(questions)} questions from {questions_from}",
            "question_fingerprint": fingerprint(questions), **dict(passages), **dict(generator),
            "strategy": strategy, "k": k, "filter": context_filter, "written_by": f"rirag {VERSION}"}


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two manifests, in words (empty when they describe the same run)."""
    out = []
    for key in dict.fromkeys([*new, *old]):
        if key in INFO_FIELDS or old.get(key) == new.get(key):
            continue
        name = FIELD_NAMES.get(key, key)
        if key == "question_fingerprint":
            out.append(f"the questions ({old.get('questions', 'unknown')} there, {new.get('questions')} now)")
        elif key == "run_sha256":
            out.append(f"the run file's content ({_short(old.get('run', 'another file'))} there, "
                       f"{_short(new.get('run'))} now)")
        else:
            out.append(f"{name} ({_short(old.get(key, 'none'))} there, {_short(new.get(key, 'none'))} now)")
    return out


class AnswersRun:
    """The manifest and the lock of one answers file; use :meth:`check` first (no lock, nothing written), then
    ``with run:`` around the work."""

    def __init__(self, answers: str | os.PathLike, manifest: Mapping[str, Any], overwrite: bool = False,
                 option: str = "--out", label: str | None = None, companions: Iterable[str | os.PathLike] = ()):
        self.answers = Path(answers)
        self.manifest = dict(manifest)
        self.overwrite = overwrite
        self.option = option
        #: how the answers are named in a refusal (``submit``: the folder and the file in it)
        self.label = label or f"{option} {self.answers}"
        #: files written from the answers (``submit``: the run, the shared-task answers): discarded with them
        self.companions = [Path(c) for c in companions]
        self.manifest_path = self.answers.with_name(self.answers.name + MANIFEST_SUFFIX)
        self.lock_path = self.answers.with_name(self.answers.name + LOCK_SUFFIX)
        self.journal = self.answers.with_name(self.answers.name + JOURNAL_SUFFIX)
        self._lock = None
        self._manifest_before: bytes | None = None
        self._created_dirs: list[Path] = []
        self._set_aside: list[tuple[Path, Path]] = []

    # -- checks ---------------------------------------------------------------------------------------------------

    def existing(self) -> list[Path]:
        """The answers files already there (the answers JSON and its journal)."""
        return [p for p in (self.answers, self.journal) if p.exists()]

    def _stored(self) -> dict | None:
        if not self.manifest_path.exists():
            return None
        try:
            data = read_json(self.manifest_path)  # bounded, and one line however deeply it nests
        except (OSError, DataError) as err:
            raise UsageError(f"{self.label}: its manifest {self.manifest_path} is unreadable "
                             f"({type(err).__name__}); pass --overwrite to start afresh") from None
        if not isinstance(data, dict):
            raise UsageError(f"{self.label}: its manifest {self.manifest_path} is not a JSON object; "
                             "pass --overwrite to start afresh")
        return data

    def check(self) -> None:
        """Refuse (one line) answers already there that another run wrote, unless ``overwrite``. Writes nothing."""
        if self.overwrite or not self.existing():
            return
        stored = self._stored()
        if stored is None:
            raise UsageError(f"{self.label}: holds answers without a manifest (written by an older "
                             "rirag or another tool), so they cannot be resumed safely; pass --overwrite to discard "
                             f"them and start afresh, or choose another {self.option}")
        diff = differences(stored, self.manifest)
        if diff:
            raise UsageError(f"{self.label}: holds answers of another run; differs in "
                             f"{'; '.join(diff)}. Pass --overwrite to discard them and start afresh, or choose "
                             f"another {self.option}")

    # -- the lock -------------------------------------------------------------------------------------------------

    def __enter__(self) -> "AnswersRun":
        from filelock import FileLock, Timeout

        missing = [p for p in (self.lock_path.parent, *self.lock_path.parent.parents) if not p.exists()]
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._created_dirs = missing  # deepest first: removed again when the command writes no answer
        lock = FileLock(str(self.lock_path), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise UsageError(f"{self.label}: another rirag command is writing these answers (it "
                             f"holds {self.lock_path}); wait for it to end, or choose another {self.option}") from None
        self._lock = lock
        try:
            self.check()  # again, under the lock: another command may have written since
            if self.overwrite:  # set aside, deleted once a new answer is written (put back if none is)
                for path in self.existing() + [c for c in self.companions if c.is_file()]:
                    logger.info("--overwrite: discarding %s", path)
                    aside = path.with_name(path.name + OVERWRITTEN_SUFFIX)
                    path.replace(aside)
                    self._set_aside.append((path, aside))
            self._manifest_before = self.manifest_path.read_bytes() if self.manifest_path.exists() else None
            atomic_write_json(self.manifest_path, self.manifest)
        except BaseException:
            for path, aside in self._set_aside:
                aside.replace(path)
            self._release()
            self._remove_created_dirs()
            raise
        return self

    def _restore_if_unanswered(self) -> bool:
        """A command that wrote no answer leaves the folder as it found it: its manifest is removed (or the one that
        was there put back) and what ``--overwrite`` set aside is put back, so a corrected rerun is never blocked.
        Returns whether it did (the folders it created are then removed, once the lock is gone)."""
        if self.existing():
            for _, aside in self._set_aside:
                aside.unlink(missing_ok=True)
            return False
        if self._manifest_before is None:
            self.manifest_path.unlink(missing_ok=True)
        else:
            atomic_write_bytes(self.manifest_path, self._manifest_before)
        for path, aside in self._set_aside:
            aside.replace(path)
        return True

    def _remove_created_dirs(self) -> None:
        for folder in self._created_dirs:
            try:
                folder.rmdir()  # only when empty
            except OSError:
                break
        self._created_dirs = []

    def _release(self) -> None:
        if self._lock is None:
            return
        # unlinked while still held: filelock re-checks the inode after locking, so a peer that opened the old
        # file retries on a new one instead of sharing a lock on the removed file
        try:
            self.lock_path.unlink()
        except OSError:
            pass
        self._lock.release()
        self._lock = None

    def __exit__(self, *exc) -> None:
        try:
            unanswered = self._restore_if_unanswered()
        finally:
            self._release()
        if unanswered:
            self._remove_created_dirs()
