"""Atomic writes (nothing half-written is ever left where a result is expected) and the weights fingerprint that
ties a measured number to the model folder it was measured on."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

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


def provenance() -> dict:
    """The command line, the UTC date and the core count of this run (every benchmark records them)."""
    import datetime
    import shlex
    import sys

    return {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
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


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise DataError(f"{path}: file not found") from err
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err})") from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: malformed JSON at line {err.lineno}, column {err.colno} (char {err.pos}): "
                        f"{err.msg}") from err

