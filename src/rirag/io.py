"""Atomic writes (nothing half-written is ever left where a result is expected) and the weights fingerprint that
ties a measured number to the model folder it was measured on."""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

from rirag.constants import MAX_INPUT_BYTES
from rirag.errors import DataError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; a result file gets the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | Path, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``path``, on failure it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (pass overwrite)")
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def merge_rows(old: list[dict], new: list[dict], key: Sequence[str]) -> list[dict]:
    """``old`` with each row of ``new`` replacing the old row of the same ``key`` fields in place, or appended; every
    other old row is kept as it was."""
    index = {tuple(r.get(k) for k in key): i for i, r in enumerate(old)}
    out = list(old)
    for row in new:
        k = tuple(row.get(f) for f in key)
        if k in index:
            out[index[k]] = row
        else:
            index[k] = len(out)
            out.append(row)
    return out


def portable_path(path: str | os.PathLike, start: str | os.PathLike | None = None) -> str:
    """``path`` as a committed file may record it: an absolute path made relative to ``start`` (default: the
    working folder, where the command ran, so the recorded path reads as its relative arguments do and still opens
    from there); anything else (a relative path, a Hub id, a model name) unchanged. No result file then carries the
    absolute paths of the machine that wrote it (``tests/test_no_machine_paths.py``)."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        return text
    return os.path.relpath(text, os.fspath(start) if start is not None else os.getcwd())


def portable_args(argv: Sequence[str], start: str | os.PathLike | None = None) -> list[str]:
    """Command-line arguments with each absolute path made portable (:func:`portable_path`), whole or as a part of
    ``--name=VALUE`` or of a comma-separated list."""

    def one(value: str) -> str:
        return ",".join(portable_path(part, start) for part in value.split(","))

    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        out.append(name + eq + one(value) if arg.startswith("-") and eq else one(arg))
    return out


def provenance() -> dict:
    """The command line (its paths portable: :func:`portable_args`), the UTC date and the core count of this run
    (every benchmark records them)."""
    import datetime
    import shlex
    import sys

    return {"command": "python " + " ".join(shlex.quote(a) for a in portable_args(sys.argv)),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu_cores": os.cpu_count()}


def merge_results_file(path: str | Path, rows: list[dict], key: Sequence[str], provenance: dict,
                       new_file: dict | None = None, **top: Any) -> dict:
    """Merge a benchmark's ``rows`` into the results JSON at ``path`` (``{..., "rows": [...]}``), atomically.

    Each row records the weights it was measured on (:func:`with_fingerprints`). A new file gets ``provenance``
    (command, date, cores), ``new_file`` and ``top`` at top level. An existing file
    keeps its top-level fields and every row that was not re-measured; re-measured rows (same ``key``) are replaced,
    new ones appended, ``top`` fields updated, and the run is logged under ``updates`` (its provenance and the keys of
    its rows). A file that is not such a results file is an error, never overwritten.
    """
    path = Path(path)
    rows = with_fingerprints(rows)
    if path.exists():
        result = read_json(path)
        if not isinstance(result, dict) or not isinstance(result.get("rows"), list):
            raise DataError(f"{path}: not a results file with a 'rows' list; pass another output file")
        result["rows"] = merge_rows(result["rows"], rows, key)
        result.update(top)
        result.setdefault("updates", []).append(
            {**provenance, "rows": [[r.get(k) for k in key] for r in rows]})
    else:
        result = {**provenance, **(new_file or {}), **top, "rows": rows}
    atomic_write_json(path, result)
    return result


#: The key under which a results record (a whole file, or one row) and a card's data name the weights the numbers
#: were measured on: :func:`weights_fingerprint` of the model folder. hub_push puts a number into a card's
#: ``model-index`` only when this matches the weights being published.
WEIGHTS_FINGERPRINT = "weights_sha256"
#: Files whose bytes are a model's weights (the fingerprint covers these, not configs, tokenizers or cards).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".onnx", ".h5", ".msgpack")
#: Weight files without such a suffix: the LightGBM learned-fusion ranker (rirag.retrieval.learned_fusion).
WEIGHT_NAMES = ("ranker.txt",)
#: Trainer states that share a weight suffix but are not the model.
NOT_WEIGHTS = ("training_args.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")


def file_sha256(path: str | os.PathLike) -> str:
    """The sha256 of a file's content (hex), read 1 MiB at a time: a run file a manifest records, a cache's checksum."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weight_files(folder: str | Path) -> list[Path]:
    """The weight files of a model folder (relative paths, sorted); checkpoints and trainer states left out."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or any(p.startswith(("checkpoint-", ".")) for p in rel.parts):
            continue
        if rel.name in NOT_WEIGHTS or rel.name.startswith("rng_state"):
            continue
        if rel.suffix in WEIGHT_SUFFIXES or rel.name in WEIGHT_NAMES:
            out.append(rel)
    return out


def weights_fingerprint(folder: str | Path) -> str | None:
    """sha256 over a model folder's weight files (each one's relative path and bytes, in order); None when the folder
    holds no weights. Two folders share it only when they hold the same weights under the same names."""
    import hashlib

    files = weight_files(folder)
    if not files:
        return None
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.as_posix().encode("utf-8") + b"\0")
        with open(Path(folder) / rel, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


#: The keys of a results row that name a trained artifact (a folder, or a stack such as ``base + adapter``).
ARTIFACT_KEYS = ("model", "reranker", "adapter", "generator", "ranker")


def with_fingerprints(rows: list[dict], cache: dict | None = None) -> list[dict]:
    """``rows`` with ``weights_sha256``: ``{folder: fingerprint}`` for each local model folder a row names
    (:data:`ARTIFACT_KEYS`, each part of a ``a + b`` stack) that holds weights; a row naming none is left as is."""
    cache = {} if cache is None else cache
    out = []
    for row in rows:
        prints = {}
        for key in ARTIFACT_KEYS:
            value = row.get(key) if isinstance(row, dict) else None
            for part in (value.split(" + ") if isinstance(value, str) else []):
                part = part.strip()
                if part and part not in cache:
                    cache[part] = weights_fingerprint(part) if Path(part).is_dir() else None
                if part and cache[part]:
                    prints[part] = cache[part]
        out.append({**row, WEIGHTS_FINGERPRINT: prints} if prints else row)
    return out


# --------------------------------------------------------------------------------------------------
# Reading and validating files
# --------------------------------------------------------------------------------------------------


#: The input size limit in force (bytes): :data:`~rirag.constants.MAX_INPUT_BYTES` unless a command's
#: ``--max-input-bytes`` set another for its run (:func:`input_limit`).
_INPUT_LIMIT: contextvars.ContextVar[int] = contextvars.ContextVar("rirag_input_limit", default=MAX_INPUT_BYTES)
#: Whether the limit in force came from a command's ``--max-input-bytes`` (:func:`input_limit` with a value).
_LIMIT_OPTION: contextvars.ContextVar[bool] = contextvars.ContextVar("rirag_input_limit_option", default=False)
#: How a refusal says to raise the limit, where the command has the option.
RAISE_LIMIT_HINT = "pass --max-input-bytes N to read a larger file"
#: What a refusal says where it has not (``rirag ask``, a library call): never an option the command refuses.
NO_LIMIT_OPTION_HINT = "split the file: this command reads no larger file"


def max_input_bytes() -> int:
    """The input size limit in force (bytes)."""
    return _INPUT_LIMIT.get()


@contextlib.contextmanager
def input_limit(limit: int | None) -> Iterator[int]:
    """Within the block, inputs may be up to ``limit`` bytes (``None``: the default,
    :data:`~rirag.constants.MAX_INPUT_BYTES`)."""
    token = _INPUT_LIMIT.set(MAX_INPUT_BYTES if limit is None else int(limit))
    option = _LIMIT_OPTION.set(limit is not None)
    try:
        yield _INPUT_LIMIT.get()
    finally:
        _LIMIT_OPTION.reset(option)
        _INPUT_LIMIT.reset(token)


def _too_large(path: Path, what: str, limit: int, size: str) -> DataError:
    hint = RAISE_LIMIT_HINT if _LIMIT_OPTION.get() else NO_LIMIT_OPTION_HINT
    return DataError(f"{what}{path}: {size} than the {limit}-byte input limit; {hint}")


def check_input_size(path: str | Path, what: str = "") -> int:
    """An input that can be read within the limit, checked before any byte is read: a regular file no larger than
    :func:`max_input_bytes` (its size is returned), or a pipe (read with a bound, :func:`read_input_bytes`). A device
    (``/dev/zero`` stats as size 0 and never ends), socket or folder is refused. ``what``: the option, e.g.
    ``'--run '``."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DataError(f"{what}{path}: file not found") from None
    if stat.S_ISDIR(st.st_mode):
        raise DataError(f"{what}{path}: is a folder, expected a file")
    if stat.S_ISREG(st.st_mode):
        limit = max_input_bytes()
        if st.st_size > limit:
            raise _too_large(path, what, limit, f"{st.st_size} bytes, larger")
        return st.st_size
    if stat.S_ISFIFO(st.st_mode):
        return 0
    kind = "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
    raise DataError(f"{what}{path}: {kind}, expected a regular file")


def read_input_bytes(path: str | Path, what: str = "") -> bytes:
    """The bytes of an input file, never more than :func:`max_input_bytes`: its size checked first
    (:func:`check_input_size`), then at most limit + 1 bytes read (a file that grew, a pipe); a ``.gz`` file is
    decompressed, bounded the same way (a small archive may hold gigabytes)."""
    path = Path(path)
    check_input_size(path, what)
    limit = max_input_bytes()
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise _too_large(path, what, limit, "more bytes")
    if path.suffix == ".gz":
        import gzip
        import io as _io

        try:
            with gzip.GzipFile(fileobj=_io.BytesIO(data)) as gz:
                data = gz.read(limit + 1)
        except (OSError, EOFError) as err:  # not gzip, damaged or truncated
            raise DataError(f"{what}{path}: cannot decompress ({type(err).__name__}: {err})") from None
        if len(data) > limit:
            raise _too_large(path, what, limit, "decompresses to more bytes")
    return data


def read_input_chunks(path: str | Path, size: int = 1 << 20, what: str = "") -> Iterator[bytes]:
    """The bytes of an input file (or pipe) in chunks of ``size``, never more than :func:`max_input_bytes` in all
    (a file's size checked before a byte is read, :func:`check_input_size`; a file that grows past the limit, or a
    pipe that passes it, is refused when it does)."""
    path = Path(path)
    check_input_size(path, what)
    limit, total = max_input_bytes(), 0
    with open(path, "rb") as fh:
        while chunk := fh.read(size):
            total += len(chunk)
            if total > limit:
                raise _too_large(path, what, limit, "more bytes")
            yield chunk


def parse_json(text: str | bytes, source: str) -> Any:
    """``json.loads`` whose every failure is one :class:`DataError` naming ``source``: malformed JSON with its line
    and column, and JSON nested too deeply for Python's parser (``[[[[...`` 200,000 deep) instead of a
    ``RecursionError`` traceback."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{source}: malformed JSON at line {err.lineno}, column {err.colno} (char {err.pos}): "
                        f"{err.msg}") from err
    except RecursionError:
        raise DataError(f"{source}: JSON nested too deeply to read (more than about "
                        f"{sys.getrecursionlimit()} levels)") from None


def read_json(path: str | Path, what: str = "") -> Any:
    """A JSON input, bounded (:func:`read_input_bytes`); every failure one :class:`DataError` naming the file."""
    path = Path(path)
    data = read_input_bytes(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{what}{path}: not UTF-8 text (byte {err.start})") from err
    return parse_json(text, f"{what}{path}")
