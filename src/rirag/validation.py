"""One validation layer for every input of the ``rirag`` command, checked before any model loads.

* **Options** are typed and range-checked when they are parsed: the typed validators here (:func:`int_between`
  bounded by :data:`LIMITS`, :func:`word`, :func:`cache_option`, ...) check every command-line option as it is
  parsed (:func:`rirag.cli.options.argtype` wraps them; the library itself parses no arguments). Every
  ``--option KEY=VALUE`` of a retriever is typed by the check its retriever declares with it in
  :data:`rirag.retrieval.registry.RETRIEVERS` (:func:`rirag.retrieval.registry.option_pair`, and
  :func:`rirag.retrieval.registry.retriever_options`, which refuses a key the retriever does not take).
* **Files** are checked for existence and readability (:func:`input_file`); readers name the file, record and field.
* **Output paths** are checked before any work (:func:`output_file`, :func:`output_dir`): not an existing folder
  (resp. file), and the nearest existing folder accepts a new file (probed, so a read-only file system is caught).
* :func:`rirag.cli.checks.error_line` is the one line an expected failure is reported as; the command
  (:func:`rirag.cli.runner.run_command`) maps the failure to its exit status. Results are written atomically
  (:mod:`rirag.io`), so an interrupted command leaves no partial file.

Every failure here raises :class:`UsageError` (a :class:`~rirag.errors.DataError`) with a message that names the
option, file, record or field.
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
from pathlib import Path
from typing import Any, Callable

from rirag.constants import OBLIQA_PASSAGE_RECORDS, OBLIQA_PASSAGES
from rirag.errors import UsageError

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


def weight(value: Any, what: str = "value") -> float:
    """A weight in (0, 1]."""
    x = _number(value, float, what)
    if not 0.0 < x <= 1.0:  # also refuses nan
        raise UsageError(f"{what}: must be in (0, 1], got {value!r}")
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

#: The bound of ``--k`` when it is parsed, before any corpus loads; the corpus that loads bounds it exactly
#: (:func:`k_within_corpus`): ObliQA has 13,012 passages, the PRA Rulebook 13,982, any other corpus its own.
K_LIMIT = 10_000_000
K_WHY = "passages per question; the corpus that loads bounds it by its own size"
#: Why the depths stop at :data:`~rirag.constants.OBLIQA_PASSAGES`: what the index holds.
CORPUS_WHY = (f"the ObliQA index holds {OBLIQA_PASSAGES} passages, the non-empty ones of its "
              f"{OBLIQA_PASSAGE_RECORDS} records")

#: Upper bound of every option that allocates memory, processes, requests or output, with the reason; a larger value
#: is refused when it is parsed, before any work. ``k`` and the candidate depths are also checked against the
#: corpus that loads (:func:`k_within_corpus`), which may be smaller than ObliQA's.
LIMITS: dict[str, tuple[int, str]] = {
    "k": (K_LIMIT, K_WHY),
    "depth": (OBLIQA_PASSAGES, CORPUS_WHY),
    "encoder_batch_size": (4096, "inputs per forward pass; larger batches only exhaust memory"),
    "max_seq_length": (8192, "tokens per input; beyond every encoder's position table"),
    "generation_batch_size": (256, "prompts per generation call; padding makes larger batches slower, not faster"),
    "max_new_tokens": (8192, "tokens per answer; beyond the context of the offline models"),
    "concurrency": (64, "requests in flight to one endpoint"),
    "max_retries": (20, "retries per request, with backoff"),
    "chunk_size": (10_000, "answers scored and flushed together"),
    "shard_size": (1 << 24, "passages in one embedding shard; a larger one holds its rows in memory at once"),
    "max_bytes": (1 << 40, "bytes of one written run: a terabyte is beyond any disk this runs on"),
    "max_input_bytes": (1 << 40, "bytes of one input file: a terabyte is beyond any memory this runs on"),
    "max_answer_chars": (10_000_000, "characters of one answer; judged sentence by sentence, a longer one takes days"),
}


def limit_of(name: str) -> tuple[int, str]:
    """The bound ``name`` of :data:`LIMITS` (``workers``: this machine's CPU cores)."""
    if name == "workers":
        cores = os.cpu_count() or 1
        return cores, f"this machine has {cores} CPU cores"
    return LIMITS[name]


class DefaultK(int):
    """A ``--k`` the user did not give (the option's default): fitted to the corpus that loads, never refused."""


def k_within_corpus(k: int, corpus_size: int, what: str = "--k") -> int:
    """``k`` passages per question cannot exceed the corpus that loaded (checked before any retrieval); a default
    ``k`` (:class:`DefaultK`) larger than the corpus is the corpus size."""
    if isinstance(k, DefaultK):
        return min(int(k), corpus_size)
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


#: Bidirectional overrides and isolates: they reorder what a terminal shows (a soft hyphen, also format, is harmless).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _is_control(c: str) -> bool:
    """A control character (Unicode Cc: NUL, ESC, DEL, the C1 range) or a bidirectional override."""
    return unicodedata.category(c) == "Cc" or c in BIDI_CONTROLS


def record_id(value: Any, what: str = "id") -> str:
    """A QuestionID or passage id that a TREC run can hold: a non-empty string without whitespace or control
    characters (TREC lines are whitespace-separated, so ``'q 1'`` would read back as seven fields and ``'q\n1'`` as
    two lines)."""
    if not isinstance(value, str):
        raise UsageError(f"{what}: must be a string, got {type(value).__name__}")
    if not value:
        raise UsageError(f"{what}: is empty")
    bad = next((c for c in value if c.isspace() or _is_control(c)), None)
    if bad is not None:
        kind = "whitespace" if bad.isspace() else "a control character"
        raise UsageError(f"{what}: {value!r} holds {kind} ({bad!r}); ids are one word (TREC is whitespace-separated)")
    return value


def without_controls(value: str) -> str:
    """``value`` with its control characters removed (tab and newline become spaces): what a question is answered
    as. A question of NUL characters alone is then empty, and refused as a blank one is."""
    return "".join(" " if c in "\t\n\r\v\f" else c for c in value
                   if not _is_control(c) or c in "\t\n\r\v\f")


def printable(value: Any) -> str:
    """``value`` as safe to print on a terminal: every control character but newline and tab written as an escape
    (``\x1b``), so input never moves the cursor, recolours or retitles the terminal."""
    return "".join(c if c in "\n\t" or not _is_control(c) else repr(c)[1:-1] for c in str(value))


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


def path_or_hub_id(value: Any, what: str = "value") -> str:
    """An existing path, or a Hub id (``owner/name``: one word, one slash, not a path here)."""
    name = str(value)
    if name and Path(name).exists():
        return name
    owner, slash, repo = name.partition("/")
    if slash and owner and repo and "/" not in repo and not any(c.isspace() for c in name) \
            and not name.startswith((".", "~")):
        return name
    raise UsageError(f"{what}: {value!r} is neither a path here nor a Hub id (owner/name)")


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
    """The dense embedding cache: true (the default folder), false or off (no cache), or a folder to write it in.

    A folder is an existing one, or a new one spelt as a path (with a ``/``: ``./maybe``, ``.cache/emb``), so that a
    mistyped word (``cache=maybe``) is refused instead of becoming a folder in the working directory; either way it
    must accept new files, checked now (``cache=/proc/nope`` is refused before any passage is embedded)."""
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in ("on",):
        return True
    if low in ("off", "none"):
        return False
    try:
        return boolean(value, what)
    except UsageError:
        pass
    text_value = str(value)
    path = Path(text_value).expanduser()
    if not text_value.strip() or not (path.is_dir() or "/" in text_value or os.sep in text_value):
        raise UsageError(f"{what}: expected true, false, off or a folder (an existing one, or a new one written as a "
                         f"path such as ./{text_value.strip() or 'cache'}), got {text_value!r}")
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what}: {text_value!r} exists and is not a folder")
    if path.is_dir():
        _probe_writable(path, what, path)
    else:
        _with_writable_parent(path, what)
    return text_value


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
