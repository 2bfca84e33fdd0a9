"""One validation layer for every input of the ``rirag`` command, checked before any model loads.

* **Options** are typed and range-checked when they are parsed: the typed validators here (:func:`int_between`
  bounded by :data:`LIMITS`, :func:`word`, :func:`option_pair`, ...) check every command-line option as it is
  parsed (:func:`rirag.cli.options.argtype` wraps them; the library itself parses no arguments), and
  :func:`rirag.retrieval.registry.retriever_options` types every ``--option KEY=VALUE`` from :data:`OPTION_SPECS` and
  refuses a key the retriever does not take.
* **Files** are checked for existence and readability (:func:`input_file`); readers name the file, record and field.
* **Output paths** are checked before any work (:func:`output_file`, :func:`output_dir`): not an existing folder
  (resp. file), and the nearest existing folder accepts a new file (probed, so a read-only file system is caught).
* :func:`error_line` is the one line an expected failure is reported as; the command
  (:func:`rirag.cli.runner.run_command`) maps the failure to its exit status. Results are written atomically
  (:mod:`rirag.io`), so an interrupted command leaves no partial file.

Every failure here raises :class:`UsageError` (a :class:`~rirag.data.DataError`) with a message that names the
option, file, record or field.
"""

from __future__ import annotations

import errno
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rirag.answer_record import read_answers
from rirag.build_models import build_hint
from rirag.constants import OBLIQA_PASSAGE_RECORDS, OBLIQA_PASSAGES
from rirag.data import DataError
from rirag.models import WHEEL_MODELS

logger = logging.getLogger(__name__)


class UsageError(DataError):
    """Bad command-line input; the message names the option, file or field."""


# -- scalar checks ------------------------------------------------------------------------------------------------


def _number(text: Any, cast: Callable, what: str):
    if isinstance(text, bool):
        raise UsageError(f"{what}: expected a number, got {text!r}")
    try:
        return cast(text)
    except (TypeError, ValueError):
        kind = "an integer" if cast is int else "a number"
        raise UsageError(f"{what}: expected {kind}, got {text!r}") from None


def integer(value: Any, what: str = "value") -> int:
    """Any integer (a seed)."""
    return _number(value, int, what)


def unit_interval(value: Any, what: str = "value") -> float:
    x = _number(value, float, what)
    if not 0.0 <= x <= 1.0:  # also refuses nan
        raise UsageError(f"{what}: must be in [0, 1], got {value!r}")
    return x


def positive_float(value: Any, what: str = "value") -> float:
    x = _number(value, float, what)
    if not x > 0.0 or x == float("inf"):
        raise UsageError(f"{what}: must be a positive number, got {value!r}")
    return x


def int_at_least(minimum: int) -> Callable[[Any, str], int]:
    def check(value: Any, what: str = "value") -> int:
        x = _number(value, int, what)
        if x < minimum:
            raise UsageError(f"{what}: must be an integer ≥ {minimum}, got {value!r}")
        return x

    return check


def int_between(minimum: int, limit: str) -> Callable[[Any, str], int]:
    """An integer from ``minimum`` to the bound :data:`LIMITS` names ``limit`` (read when checked, so a test or a
    caller can change it)."""
    def check(value: Any, what: str = "value") -> int:
        x = int_at_least(minimum)(value, what)
        maximum, why = limit_of(limit)
        if x > maximum:
            raise UsageError(f"{what}: must be at most {maximum} ({why}), got {value!r}")
        return x

    return check


# -- bounds of the options that allocate ----------------------------------------------------------------------------

#: Why ``--k`` and the depths stop at :data:`~rirag.constants.OBLIQA_PASSAGES`: what the index holds.
CORPUS_WHY = (f"the ObliQA index holds {OBLIQA_PASSAGES} passages, the non-empty ones of its "
              f"{OBLIQA_PASSAGE_RECORDS} records")

#: Upper bound of every option that allocates memory, processes, requests or output, with the reason; a larger value
#: is refused when it is parsed, before any work. ``k`` and the candidate depths are also checked against the
#: corpus that loads (:func:`k_within_corpus`), which may be smaller than ObliQA's.
LIMITS: dict[str, tuple[int, str]] = {
    "k": (OBLIQA_PASSAGES, CORPUS_WHY),
    "depth": (OBLIQA_PASSAGES, CORPUS_WHY),
    "encoder_batch_size": (4096, "inputs per forward pass; larger batches only exhaust memory"),
    "max_seq_length": (8192, "tokens per input; beyond every encoder's position table"),
    "generation_batch_size": (256, "prompts per generation call; padding makes larger batches slower, not faster"),
    "max_new_tokens": (8192, "tokens per answer; beyond the context of the offline models"),
    "concurrency": (64, "requests in flight to one endpoint"),
    "max_retries": (20, "retries per request, with backoff"),
    "chunk_size": (10_000, "answers scored and flushed together"),
    "max_bytes": (1 << 40, "bytes of one written run: a terabyte is beyond any disk this runs on"),
    "max_answer_chars": (10_000_000, "characters of one answer; judged sentence by sentence, a longer one takes days"),
}


def limit_of(name: str) -> tuple[int, str]:
    """The bound ``name`` of :data:`LIMITS` (``workers``: this machine's CPU cores)."""
    if name == "workers":
        cores = os.cpu_count() or 1
        return cores, f"this machine has {cores} CPU cores"
    return LIMITS[name]


def k_within_corpus(k: int, corpus_size: int, what: str = "--k") -> int:
    """``k`` passages per question cannot exceed the corpus that loaded (checked before any retrieval)."""
    if k > corpus_size:
        raise UsageError(f"{what}: must be at most {corpus_size} (the corpus has {corpus_size} passages), got {k}")
    return k


def optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``none`` (any case) or None passes as None (e.g. no stemmer, no truncation); anything else is checked."""
    def inner(value: Any, what: str = "value"):
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            return None
        return check(value, what)

    return inner


def word(value: Any, what: str = "value") -> str:
    """A non-empty string without whitespace."""
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise UsageError(f"{what}: must be one word without spaces, got {text!r}")
    return text


def text(value: Any, what: str = "value") -> str:
    return str(value)


def choice(*allowed: str) -> Callable[[Any, str], str]:
    def check(value: Any, what: str = "value") -> str:
        if value not in allowed:
            raise UsageError(f"{what}: must be one of {', '.join(allowed)}, got {value!r}")
        return value

    return check


def existing_path(value: Any, what: str = "value") -> str:
    path = Path(str(value))
    if not str(value) or not path.exists():
        raise UsageError(f"{what}: {value!r} does not exist")
    return str(value)


def boolean(value: Any, what: str = "value") -> bool:
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise UsageError(f"{what}: expected true or false, got {value!r}")


def cache_option(value: Any, what: str = "value"):
    """The dense embedding cache: true (the default folder), false (no cache) or a folder."""
    try:
        return boolean(value, what)
    except UsageError:
        return str(value)


# -- retriever options --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionSpec:
    check: Callable[[Any, str], Any]
    help: str


#: Every ``--option`` key any retriever takes, with its type and range. Which retriever takes which key is the
#: registry's :data:`~rirag.retrieval.registry.RETRIEVER_OPTIONS`.
OPTION_SPECS: dict[str, OptionSpec] = {
    # BM25 (rirag.retrieval.bm25.BM25Config)
    "k1": OptionSpec(positive_float, "term-frequency saturation, > 0"),
    "b": OptionSpec(unit_interval, "length normalisation, in [0, 1]"),
    "method": OptionSpec(choice("robertson", "lucene", "atire", "bm25l", "bm25+"), "bm25s scoring variant"),
    "stemmer": OptionSpec(optional(word), "PyStemmer language or none"),
    "stopwords": OptionSpec(optional(word), "bm25s stopword list or none"),
    "query_max_tokens": OptionSpec(optional(int_at_least(1)), "keep the first N query tokens, ≥ 1 or none"),
    "passage_max_tokens": OptionSpec(optional(int_at_least(1)), "keep the first N passage tokens, ≥ 1 or none"),
    # dense encoders (rirag.retrieval.dense.DenseRetriever)
    "query_prefix": OptionSpec(text, "text put before each query"),
    "passage_prefix": OptionSpec(text, "text put before each passage"),
    "max_seq_length": OptionSpec(int_between(1, "max_seq_length"), "encoder tokens per passage, 1 to 8192"),
    "batch_size": OptionSpec(int_between(1, "encoder_batch_size"), "encoder batch size, 1 to 4096"),
    "device": OptionSpec(word, "torch device"),
    "cache": OptionSpec(cache_option, "embedding cache: true, false or a folder"),
    # fusion, reranking, learned fusion
    "alpha": OptionSpec(unit_interval, "dense weight of the hybrid, in [0, 1]"),
    "depth": OptionSpec(int_between(1, "depth"), "candidates per side, 1 to the corpus size"),
    "doc_weight": OptionSpec(unit_interval, "document weight of rank fusion, in [0, 1]"),
    "passages": OptionSpec(choice("dense", "bm25", "hybrid"), "passage side of rank fusion"),
    "rrf_k": OptionSpec(int_at_least(0), "RRF constant, ≥ 0"),
    "reranker": OptionSpec(existing_path, "a trained cross-encoder folder"),
    "rerank_depth": OptionSpec(int_between(1, "depth"), "hybrid candidates reranked, 1 to the corpus size"),
    "rerank_batch_size": OptionSpec(int_between(1, "encoder_batch_size"), "reranker batch size, 1 to 4096"),
    "ranker": OptionSpec(existing_path, "a folder from train/learned_fusion.py"),
    "encoders": OptionSpec(text, "comma-separated encoder names or paths"),
}


def option_pair(item: str) -> tuple[str, Any]:
    """``--option KEY=VALUE``: the key must be known and the value of its type and range."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--option {item!r}: expected KEY=VALUE")
    if key not in OPTION_SPECS:
        raise UsageError(f"--option {key}: unknown option; known: {', '.join(sorted(OPTION_SPECS))}")
    return key, OPTION_SPECS[key].check(value, f"--option {key}")


#: Generator options and their bounds (checked by :func:`generator_limits` before any work).
GENERATOR_LIMITS = {"batch_size": ("--batch-size", "generation_batch_size", 1),
                    "max_new_tokens": ("--max-new-tokens", "max_new_tokens", 1),
                    "concurrency": ("--concurrency", "concurrency", 1),
                    "max_retries": ("--max-retries", "max_retries", 0)}


def generator_limits(args: Any) -> None:
    """The generator's allocating options within :data:`LIMITS` (``rirag answer``, ``ask``, ``submit``)."""
    for dest, (option, limit, minimum) in GENERATOR_LIMITS.items():
        value = getattr(args, dest, None)
        if value is not None:
            int_between(minimum, limit)(value, option)


# -- files --------------------------------------------------------------------------------------------------------


def input_file(path: str | os.PathLike, what: str = "input") -> Path:
    """An existing, readable file (not a folder)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what} {p}: file not found")
    if p.is_dir():
        raise UsageError(f"{what} {p}: is a folder, expected a file")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{what} {p}: not readable")
    return p


def _probe_writable(folder: Path, what: str, target: Path) -> None:
    """Create and remove a temporary file in ``folder`` (os.access does not see a read-only file system as root)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".rirag-probe-")
    except OSError as err:
        raise UsageError(f"{what} {target}: cannot write in {folder} ({err.strerror or err})") from None
    os.close(fd)
    os.unlink(tmp)


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists():
        p = p.parent
    return p


def _with_writable_parent(p: Path, what: str) -> Path:
    """``p``, once its nearest existing parent is known to be a folder that accepts new entries."""
    parent = _nearest_existing(p.parent)
    if not parent.is_dir():
        raise UsageError(f"{what} {p}: {parent} is not a folder")
    _probe_writable(parent, what, p)
    return p


def output_file(path: str | os.PathLike, what: str = "output") -> Path:
    """A file that can be written: not an existing folder; its nearest existing parent is a writable folder."""
    p = Path(path)
    if not str(path):
        raise UsageError(f"{what}: empty path")
    if p.is_dir():
        raise UsageError(f"{what} {p}: is an existing folder, expected a file path")
    if p.exists() and not p.is_file():
        raise UsageError(f"{what} {p}: exists and is not a regular file")
    return _with_writable_parent(p, what)


def output_dir(path: str | os.PathLike, what: str = "output folder") -> Path:
    """A folder that can be (re)written: not an existing file; it or its nearest existing parent is writable."""
    p = Path(path)
    if not str(path):
        raise UsageError(f"{what}: empty path")
    if p.exists() and not p.is_dir():
        raise UsageError(f"{what} {p}: exists and is not a folder")
    # atomic_dir writes a sibling temporary folder, so the parent must accept new entries
    return _with_writable_parent(p, what)


def looks_local(name: str) -> bool:
    """Whether a model name is meant as a local path (not a Hub id): absolute, ./ or ../, or under artifacts/."""
    return (os.path.isabs(name) or name.startswith(("./", "../", "~")) or name.split("/", 1)[0] == "artifacts"
            or os.path.exists(name))


def local_model(name: str, what: str = "model") -> str:
    """A model name that is meant as a local folder must be one with config.json or modules.json."""
    if not looks_local(name):
        return name
    p = Path(name).expanduser()
    if not p.exists():
        raise UsageError(f"{what} {name}: folder not found (train it first, or pass a model that exists)")
    if not p.is_dir() or not any((p / f).exists() for f in ("config.json", "modules.json")):
        raise UsageError(f"{what} {name}: not a model folder (no config.json or modules.json)")
    return name


def model_available(name: str, what: str = "model") -> str:
    """A model that can load without surprises: a local folder that exists (with the command that trains it when it
    is one of ours), a wheel-shipped name, or a Hub id (which, with HF_HUB_OFFLINE set, must be in the local cache)."""
    if name in WHEEL_MODELS:
        return name
    if looks_local(name):
        try:
            return local_model(name, what)
        except UsageError as err:
            how = build_hint(name)
            raise UsageError(f"{err}; {how}" if how else str(err)) from None
    from huggingface_hub import constants, try_to_load_from_cache

    if constants.HF_HUB_OFFLINE and not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise UsageError(f"{what} {name}: a Hub model that is not in the local cache, and HF_HUB_OFFLINE is set "
                         "(pass a local model folder, or unset HF_HUB_OFFLINE with network access)")
    return name


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
    path = input_file(args.answers, "--answers")
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
    hand (:func:`model_available`; nothing loads)."""
    problems: dict[str, str] = {}
    for option in ANSWER_MODEL_OPTIONS:
        name = getattr(args, option, None)
        if name:
            try:
                model_available(name, "--" + option.replace("_", "-"))
            except UsageError as err:
                problems[option] = str(err)
    return problems


# -- questions and runs, checked before a command writes anything ---------------------------------------------------


def question_texts(questions: Iterable[tuple[str, str]], source: str) -> None:
    """Every question has text: an empty one is refused, naming the file, the record and its QuestionID."""
    for i, (qid, text) in enumerate(questions):
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"{source}: record {i} (QuestionID {qid!r}): field 'Question' is empty")


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
