"""Atomic writes: nothing half-written is ever left where a result is expected."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

from rirag.data import DataError, read_json


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

    A new file gets ``provenance`` (command, date, cores), ``new_file`` and ``top`` at top level. An existing file
    keeps its top-level fields and every row that was not re-measured; re-measured rows (same ``key``) are replaced,
    new ones appended, ``top`` fields updated, and the run is logged under ``updates`` (its provenance and the keys of
    its rows). A file that is not such a results file is an error, never overwritten.
    """
    path = Path(path)
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
