"""Runs in TREC format (``qid Q0 docid rank score system``): read, write and rank them.

TREC is the shared-task submission format. Runs are written atomically (temporary file, then rename), ranks
follow descending score with ties broken by document id (evaluation uses the same order), scores are written at
full precision so a run read back evaluates exactly as it did in memory, and reading validates each line and names it.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Iterable, Mapping, Protocol

from rirag.constants import RUN_DEPTH
from rirag.errors import DataError, UsageError
from rirag.io import atomic_write_bytes, check_input_size, read_input_bytes
from rirag.validation import input_file, record_id

logger = logging.getLogger(__name__)

#: A ranked run: query id -> {passage id: score} (the one definition; retrieval imports it from here).
Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


class Retriever(Protocol):
    """Anything that ranks passages for queries: every retriever of :data:`rirag.retrieval.registry.RETRIEVERS`,
    and the expansion that wraps one (:class:`rirag.xref.expansion.XrefExpansion`). The one protocol: it lives here,
    beside the :data:`Run` it returns, because ``xref`` (below ``retrieval``) needs it too."""

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run: ...


# --------------------------------------------------------------------------------------------------
# TREC run files
# --------------------------------------------------------------------------------------------------


def ranked(results: Mapping[str, float], depth: int | None = None) -> list[tuple[str, float]]:
    items = sorted(results.items(), key=lambda kv: (-kv[1], kv[0]))
    return items[:depth] if depth else items


def write_trec(run: Mapping[str, Mapping[str, float]], path: str | Path, system: str = "rirag",
               depth: int | None = None) -> Path:
    """Write a run as TREC lines, atomically; ``.gz`` paths are gzip-compressed. A NaN or infinite score is refused
    (:func:`read_trec` would refuse the file)."""
    path = Path(path)
    bad = next(((q, d, s) for q, results in run.items() for d, s in results.items() if not math.isfinite(s)), None)
    if bad:
        raise DataError(f"{path}: score {bad[2]!r} of document {bad[1]} (query {bad[0]}) is not a finite number; "
                        "nothing written")
    if any(c.isspace() for c in system) or not system:
        raise ValueError(f"system name must be one word, got {system!r}")
    for qid, results in run.items():  # an id with a space or a newline would write a line read_trec refuses
        record_id(qid, f"{path}: query id")
        for docid in results:
            record_id(docid, f"{path}: query {qid}: passage id")

    data = "".join(
        f"{qid} Q0 {docid} {rank} {float(score)!r} {system}\n"
        for qid, results in run.items()
        for rank, (docid, score) in enumerate(ranked(results, depth), start=1)
    ).encode("utf-8")
    if path.suffix == ".gz":
        import gzip

        data = gzip.compress(data, mtime=0)  # mtime=0: identical runs give identical bytes
    return atomic_write_bytes(path, data)


def read_trec(path: str | Path) -> Run:
    """Read a TREC run; a malformed line (or one that is not UTF-8, or a score that is NaN or infinite) raises
    :class:`DataError` naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: run file not found")
    run: Run = {}
    data = read_input_bytes(path)  # bounded: its size checked first, a device or an endless pipe refused
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(f"{path}: line {lineno}: not UTF-8 text (byte {err.start})") from None
        _read_trec_line(run, path, lineno, line)
    return run


def _read_trec_line(run: Run, path: Path, lineno: int, line: str) -> None:
    if not line.strip():
        return
    parts = line.split()
    if len(parts) != 6:
        raise DataError(f"{path}: line {lineno}: expected 6 fields 'qid Q0 docid rank score system', got {len(parts)}")
    qid, _, docid, rank, score, _ = parts
    for value, field in ((qid, "query id"), (docid, "passage id")):
        try:
            record_id(value, field)
        except DataError as err:
            raise DataError(f"{path}: line {lineno}: {err}") from None
    try:
        int(rank)
        value = float(score)
    except ValueError as err:
        raise DataError(f"{path}: line {lineno}: rank must be an integer and score a number ({err})") from err
    if not math.isfinite(value):  # nan ranks nowhere and inf everywhere: both would change metrics silently
        raise DataError(f"{path}: line {lineno}: score {score!r} of document {docid} (query {qid}) is not a finite "
                        "number")
    results = run.setdefault(qid, {})
    if docid in results:
        raise DataError(f"{path}: line {lineno}: document {docid} listed twice for query {qid}")
    results[docid] = value


def input_path(path: str | os.PathLike, what: str) -> Path:
    """An input file a command may read: it exists, is readable and is a regular file (or a pipe) within the input
    size limit (``--max-input-bytes``, :func:`rirag.io.check_input_size`), checked by its size before any byte is
    read; ``/dev/zero`` and other devices are refused."""
    p = input_file(path, what)
    check_input_size(p, f"{what} ")
    return p


def run_for_answers(run: Mapping[str, Mapping[str, float]], corpus_ids: Iterable[str], qids: list[str], source: str,
                    allow_missing: bool = False) -> None:
    """A run that grounds answers: every passage it gives the questions ``qids`` is in the corpus, and every question
    is in the run (unless ``allow_missing``); run queries outside ``qids`` are ignored with a warning."""
    if not run:
        raise UsageError(f"{source}: the run is empty")
    wanted = set(qids)
    if not wanted & set(run):
        raise UsageError(f"{source}: none of its {len(run)} query ids is one of the {len(wanted)} questions "
                         f"(e.g. {sorted(run)[0]!r}): wrong split or questions file?")
    extra = set(run) - wanted
    if extra:
        logger.warning("%s: %d of %d run queries are not among the questions (ignored), e.g. %s", source, len(extra),
                       len(run), sorted(extra)[0])
    corpus_ids = corpus_ids if isinstance(corpus_ids, (set, frozenset, Mapping)) else set(corpus_ids)
    unknown = [(q, d) for q in qids for d in run.get(q, {}) if d not in corpus_ids]
    if unknown:
        q, d = unknown[0]
        raise UsageError(f"{source}: query {q}: passage id {d!r} is not in the corpus ({len(unknown)} "
                         f"{'entry' if len(unknown) == 1 else 'entries'} like it for these questions; the corpus ids "
                         "are the passage UUIDs 'ID' of non-empty passages)")
    missing = [q for q in qids if not run.get(q)]
    if missing and not allow_missing:
        raise UsageError(f"{source}: {len(missing)} of {len(qids)} questions have no passage in the run "
                         f"(e.g. {', '.join(missing[:3])}); pass --allow-missing to record them unanswered")
