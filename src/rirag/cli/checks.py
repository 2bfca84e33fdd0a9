"""Argument-level checks of the command: argument combinations, runs against a corpus and split,
run sizes, and the one-line error messages the runner prints."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from rirag import models
from rirag.data.answers import read_answers
from rirag.data.runs import input_path  # noqa: F401 - the command groups' input check, kept with the runs
from rirag.errors import DataError, UsageError
from rirag.validation import output_file

logger = logging.getLogger(__name__)


def split_or_questions(args: Any) -> None:
    """Exactly one of ``--split`` (a named split of ObliQA) or ``--questions`` (a file whose gold is given by passage id
    or text, as for an ingested corpus), checked before anything loads."""
    from rirag.data.splits import check_split_name

    if bool(args.split) == bool(args.questions):
        raise UsageError("pass exactly one of --split SPLIT or --questions FILE (gold given by passage id or text)")
    if args.split:
        check_split_name(args.split)
    else:
        input_path(args.questions, "--questions")


def hub_reachable(repo_id: str, what: str = "--push-to-hub") -> None:
    """Before building anything to push: offline mode or an unreachable Hub is one clear error."""
    from huggingface_hub import constants

    if not repo_id or "/" not in repo_id or any(c.isspace() for c in repo_id):
        raise UsageError(f"{what} {repo_id!r}: expected a Hub repo id 'owner/name'")
    if constants.HF_HUB_OFFLINE:
        raise UsageError(f"{what} {repo_id}: HF_HUB_OFFLINE is set, so nothing can be pushed (unset it to push)")
    from huggingface_hub import HfApi

    try:
        HfApi().whoami()
    except Exception as err:  # noqa: BLE001 - no network, no token, refused: all mean "cannot push"
        reason = " ".join(str(err).split()) or type(err).__name__
        raise UsageError(f"{what} {repo_id}: cannot reach the Hugging Face Hub or not logged in "
                         f"({type(err).__name__}: {reason[:200]})") from None


# -- answer files (rirag evaluate answers) -------------------------------------------------------------------------


def answers_args(args: Any) -> None:
    """``rirag evaluate answers``: the answer file (exists, UTF-8 JSON list of records with the fields), something to
    score and the output CSV writable, all before any model loads; with ``--require-all``, every model present too
    (without it, a metric whose model is missing is skipped: :func:`missing_answer_models`)."""
    path = input_path(args.answers, "--answers")
    if getattr(args, "questions", None):
        input_path(args.questions, "--questions")
    try:
        records = read_answers(str(path))
    except UnicodeDecodeError as err:
        raise UsageError(f"--answers {path}: not UTF-8 text (byte {err.start})") from None
    except ValueError as err:
        raise UsageError(f"--answers {one_line(err)}") from None
    out = Path(args.out or os.path.splitext(args.answers)[0] + ".repass.csv")
    output_file(out, "--out")
    answered = sum(1 for r in records if isinstance(r.get("Answer"), str) and r["Answer"].strip())
    if not answered and not out.exists():
        raise UsageError(f"--answers {path}: none of its {len(records)} records has a non-empty Answer: nothing to "
                         "score")
    limit = getattr(args, "max_answer_chars", None)
    if answered and limit and not out.exists() and all(
            len(r["Answer"]) > limit for r in records if isinstance(r.get("Answer"), str) and r["Answer"].strip()):
        raise UsageError(f"--answers {path}: every answer is longer than --max-answer-chars {limit}: nothing to score")
    problems = missing_answer_models(args)
    args.missing_models = problems  # the command skips the metrics that need them (rirag.cli.evaluate)
    if problems and getattr(args, "require_all", False):
        # every missing model in one line, so a fresh clone learns all it needs at once
        raise UsageError("; ".join(dict.fromkeys(problems.values())) + " (--require-all)")


#: The model options of ``rirag evaluate answers`` (their ``args`` names).
ANSWER_MODEL_OPTIONS = ("nli_model", "coverage_model", "obligation_model")


def missing_answer_models(args: Any) -> dict[str, str]:
    """``{option: why it cannot load}`` for each model option of ``rirag evaluate answers`` whose model is not at
    hand (:func:`rirag.models.model_available`; nothing loads)."""
    problems: dict[str, str] = {}
    for option in ANSWER_MODEL_OPTIONS:
        name = getattr(args, option, None)
        if name:
            try:
                models.model_available(name, "--" + option.replace("_", "-"))
            except UsageError as err:
                problems[option] = str(err)
    return problems


# -- questions and runs, checked before a command writes anything ---------------------------------------------------


#: Bytes of a TREC line beyond its query and passage ids, rank and system name: " Q0 ", three spaces, the newline
#: and the score at full precision (``repr``: up to 24 characters).
TREC_LINE_OVERHEAD = 32


def run_bytes(qids: Iterable[str], depth: int, passage_id_chars: int, system: str) -> int:
    """An upper estimate of a TREC run's size: ``depth`` lines per query, each with the longest passage id."""
    return sum(depth * (len(q) + passage_id_chars + len(system) + len(str(depth)) + TREC_LINE_OVERHEAD)
               for q in qids)


def run_size_within(estimate: int, limit: int, what: str, how: str) -> int:
    """Refuse a run whose estimated size exceeds ``limit`` bytes (before it is built), saying how large it would be
    and ``how`` to allow it."""
    if estimate > limit:
        raise UsageError(f"{what}: the run would be up to about {size_words(estimate)} (more than the "
                         f"{size_words(limit)} limit); {how}")
    return estimate


def size_words(n: int) -> str:
    """Bytes as a person reads them: 950 bytes, 4.9 kB, 200.0 MB, 2.1 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


# -- runs against the corpus --------------------------------------------------------------------------------------


def run_matches(run: Mapping[str, Mapping[str, float]], corpus_ids: Iterable[str], split_qids: Iterable[str],
                source: str, split: str) -> None:
    """A run that matches no question of the split or no passage of the corpus is an error; a partial match warns
    with the count."""
    corpus_ids, split_qids = set(corpus_ids), set(split_qids)
    if not run:
        raise UsageError(f"{source}: the run is empty")
    unknown_q = set(run) - split_qids
    if len(unknown_q) == len(run):
        raise UsageError(f"{source}: none of its {len(run)} query ids is a question of split {split} "
                         f"(e.g. {sorted(unknown_q)[0]!r}): wrong split?")
    if unknown_q:
        logger.warning("%s: %d of %d run queries are not in split %s (ignored), e.g. %s", source, len(unknown_q),
                       len(run), split, sorted(unknown_q)[0])
    docs = {d for results in run.values() for d in results}
    unknown_d = docs - corpus_ids
    if docs and len(unknown_d) == len(docs):
        raise UsageError(f"{source}: none of its {len(docs)} passage ids is in the corpus "
                         f"(e.g. {sorted(unknown_d)[0]!r}): the corpus ids are the passage UUIDs ('ID')")
    if unknown_d:
        logger.warning("%s: %d of %d distinct passage ids are not in the corpus (they count as non-relevant), e.g. %s",
                       source, len(unknown_d), len(docs), sorted(unknown_d)[0])


# -- one-line errors ----------------------------------------------------------------------------------------------


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


#: What an operating-system error means, in words (instead of '[Errno 13] Permission denied').
ERRNO_WORDS = {
    errno.ENOENT: "no such file or folder",
    errno.EACCES: "permission denied (this account may not read or write it)",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "no space left on the disk",
    errno.EDQUOT: "disk quota exceeded",
    errno.EISDIR: "is a folder, expected a file",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EEXIST: "already exists",
    errno.ENOTEMPTY: "the folder is not empty",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.EMFILE: "too many open files",
    errno.EXDEV: "cannot move across file systems",
    errno.EIO: "input/output error (a failing disk or network share)",
}


def os_error_words(err: OSError) -> str:
    """An OSError as one line in words: the path(s) it concerns, then what went wrong."""
    reason = ERRNO_WORDS.get(err.errno) if err.errno is not None else None
    if reason is None:
        if err.strerror:
            reason = err.strerror[0].lower() + err.strerror[1:]
        else:  # no errno (a library's own OSError, e.g. a connection error): its message
            return f"{type(err).__name__}: {one_line(err)}"
    paths = [str(p) for p in (err.filename, err.filename2) if p is not None]
    return f"{' → '.join(paths)}: {reason}" if paths else reason


def error_line(err: BaseException) -> str:
    """The one line an expected failure is reported as."""
    if isinstance(err, DataError):
        return one_line(err)
    if isinstance(err, OSError):
        return " ".join(os_error_words(err).split())
    return f"{type(err).__name__}: {one_line(err)}"

