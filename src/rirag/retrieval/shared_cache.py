"""Cache files that many processes share safely: one builds, the others wait; a damaged file is rebuilt, never fatal.

- :func:`build_lock`: an operating-system file lock (:mod:`filelock`) beside the cache file, held while it is built.
  A process that finds it taken logs one line naming the holder (its process id, host and since when, read from
  ``<file>.lock.holder``), waits, then finds the file built and loads it instead of building it again.
- :func:`write_checksum` / :func:`checksum_state`: a ``<file>.sha256`` sidecar written when the file is complete;
  a file whose content no longer matches it (truncated, overwritten) is reported by :func:`damaged` in one warning
  naming it, and the caller rebuilds it.

Used by the corpus embedding (:meth:`rirag.retrieval.dense.DenseRetriever.passage_embeddings`, merged in
:func:`rirag.retrieval.embedding.merge_shards`) and the ANN index beside it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from pathlib import Path
from typing import Iterator

from rirag.io import file_sha256

logger = logging.getLogger(__name__)


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def holder_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock.holder")


def checksum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _holder(path: Path) -> str:
    try:
        return holder_path(path).read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"


@contextlib.contextmanager
def build_lock(path: Path, what: str) -> Iterator[None]:
    """Hold ``<path>.lock`` while ``what`` (e.g. "the embedding of 13012 passages") is built into ``path``; a process
    that finds it held logs who holds it and waits."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_path(path)))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        start = time.monotonic()
        logger.warning("waiting for %s: %s holds its lock %s", what, _holder(path), lock_path(path))
        lock.acquire()
        logger.info("lock %s released after %.1f s", lock_path(path), time.monotonic() - start)
    try:
        holder_path(path).write_text(f"process {os.getpid()} on {socket.gethostname()} since "
                                     f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n", encoding="utf-8")
        yield
    finally:
        holder_path(path).unlink(missing_ok=True)
        lock.release()


def write_checksum(path: Path) -> Path:
    """Record ``path``'s sha256 beside it (written atomically: a temporary file renamed into place)."""
    from rirag.io import atomic_write_text

    return atomic_write_text(checksum_path(path), file_sha256(path) + "\n")


def checksum_state(path: Path) -> bool | None:
    """True when ``path`` matches its recorded sha256, False when it does not, None when none is recorded (a cache
    written before checksums: its reader's own checks decide)."""
    try:
        recorded = checksum_path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return file_sha256(path) == recorded


def damaged(path: Path, what: str, warn: bool = True) -> bool:
    """Whether the cache file ``path`` (which exists) fails its checksum; with ``warn``, one warning names it."""
    if checksum_state(path) is not False:
        return False
    if warn:
        logger.warning("%s cache %s does not match its checksum %s (truncated or overwritten): rebuilding it", what,
                       path, checksum_path(path))
    return True
