"""A corpus embedded in fixed shards: resumable, and the same embeddings whatever the number of processes.

The corpus (in its id order) is cut into shards of :data:`rirag.constants.EMBED_SHARD_PASSAGES` passages. Shard
``i`` is embedded by process ``i mod world`` and written on its own, atomically, to ``<cache>.parts/`` beside the
embedding cache file; a shard already there is not embedded again, so a stopped embedding resumes where it stood,
with any number of processes. When every shard is written, one process merges them in order into the cache file
(written to a temporary file, then renamed, its sha256 recorded beside it: :mod:`rirag.retrieval.shared_cache`) and
removes the parts. A shard's texts are encoded in the same batches
whatever the number of processes (the encoder sorts each call's texts by length), so one process and N give the
same rows up to the threads' floating-point order (``tests/test_embedding.py``, ``benchmarks/embed_processes.py``).

``rirag data embed`` runs it under ``accelerate launch`` (each rank a process on its own device); the dense
retriever's first use runs it in one process (:meth:`rirag.retrieval.dense.DenseRetriever.passage_embeddings`).
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rirag.constants import EMBED_SHARD_PASSAGES
from rirag.errors import DataError
from rirag.retrieval.shared_cache import write_checksum

logger = logging.getLogger(__name__)

#: ``encode(texts) -> float32 rows``: the encoder as the shards see it (prefix and normalisation applied).
Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ShardPlan:
    """``passages`` rows in shards of ``shard_size``; shard ``i`` belongs to rank ``i mod world``."""

    passages: int
    shard_size: int = EMBED_SHARD_PASSAGES

    def __post_init__(self):
        if self.passages < 1:
            raise DataError("cannot embed an empty corpus")
        if self.shard_size < 1:
            raise DataError(f"shard size must be at least 1 passage, got {self.shard_size}")

    @property
    def shards(self) -> int:
        return -(-self.passages // self.shard_size)

    def bounds(self, shard: int) -> tuple[int, int]:
        start = shard * self.shard_size
        return start, min(start + self.shard_size, self.passages)

    def owned(self, rank: int, world: int) -> list[int]:
        if world < 1 or not 0 <= rank < world:
            raise DataError(f"rank {rank} is outside a world of {world} processes")
        return list(range(rank, self.shards, world))


def parts_dir(final: Path) -> Path:
    """Where the shards of ``final`` (an embedding cache file) wait for the merge."""
    return final.with_name(final.stem + ".parts")


def shard_path(final: Path, plan: ShardPlan, shard: int) -> Path:
    return parts_dir(final) / f"shard-{shard:06d}-of-{plan.shards:06d}-{plan.shard_size}.npy"


def _read_shard(path: Path, rows: int) -> np.ndarray | None:
    """The shard's rows, or None when it is missing or not ``rows`` float32 rows (then it is embedded again)."""
    if not path.exists():
        return None
    try:
        emb = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as err:
        logger.warning("embedding shard %s is unreadable (%s): embedding it again", path, err)
        return None
    if emb.ndim != 2 or emb.shape[0] != rows or emb.dtype != np.float32:
        logger.warning("embedding shard %s holds %s %s, expected %d float32 rows: embedding it again",
                       path, emb.shape, emb.dtype, rows)
        return None
    return emb


def _save_atomic(path: Path, emb: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, np.ascontiguousarray(emb, dtype=np.float32))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def embed_shards(encode: Encode, texts: Sequence[str], final: Path, rank: int = 0, world: int = 1,
                 shard_size: int = EMBED_SHARD_PASSAGES, progress: Callable[[int], None] | None = None) -> list[int]:
    """Embed this rank's shards of ``texts`` that are not written yet; returns the shards it embedded.
    ``progress(n)`` is told the row count of each shard already written (so a bar ends full); the rows it embeds are
    reported by ``encode`` itself, batch by batch (:meth:`rirag.retrieval.dense.DenseRetriever.encode`)."""
    plan = ShardPlan(len(texts), shard_size)
    done = []
    for shard in plan.owned(rank, world):
        start, stop = plan.bounds(shard)
        path = shard_path(final, plan, shard)
        if _read_shard(path, stop - start) is None:
            emb = np.asarray(encode(texts[start:stop]), dtype=np.float32)
            if emb.shape[0] != stop - start:
                raise DataError(f"the encoder returned {emb.shape[0]} rows for the {stop - start} passages of shard "
                                f"{shard}")
            _save_atomic(path, emb)
            done.append(shard)
        elif progress is not None:
            progress(stop - start)
    reused = len(plan.owned(rank, world)) - len(done)
    if reused:
        logger.info("process %d of %d: %d shards embedded, %d already written (resumed)", rank + 1, world, len(done),
                    reused)
    return done


def missing_shards(final: Path, passages: int, shard_size: int = EMBED_SHARD_PASSAGES) -> list[int]:
    plan = ShardPlan(passages, shard_size)
    return [s for s in range(plan.shards)
            if _read_shard(shard_path(final, plan, s), plan.bounds(s)[1] - plan.bounds(s)[0]) is None]


def merge_shards(final: Path, passages: int, shard_size: int = EMBED_SHARD_PASSAGES) -> np.ndarray:
    """Concatenate every shard in order into ``final`` (a temporary file renamed into place: a reader sees the whole
    matrix or none), remove the parts and return the matrix, memory-mapped. A missing shard is an error naming it."""
    plan = ShardPlan(passages, shard_size)
    parts = []
    for s in range(plan.shards):
        start, stop = plan.bounds(s)
        emb = _read_shard(shard_path(final, plan, s), stop - start)
        if emb is None:
            raise DataError(f"cannot merge {final}: shard {s} of {plan.shards} ({shard_path(final, plan, s)}) is "
                            "missing; run the embedding again (it resumes)")
        parts.append(emb)
    dims = {p.shape[1] for p in parts}
    if len(dims) != 1:
        raise DataError(f"cannot merge {final}: its shards have different widths {sorted(dims)}")
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    os.close(fd)
    try:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(passages, dims.pop()))
        for s, emb in enumerate(parts):
            start, stop = plan.bounds(s)
            out[start:stop] = emb
        out.flush()
        del out
        os.chmod(tmp, 0o644)
        os.replace(tmp, final)
        write_checksum(final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for s in range(plan.shards):
        shard_path(final, plan, s).unlink(missing_ok=True)
    try:
        parts_dir(final).rmdir()
    except OSError:  # another plan's shards are still there (a different shard size): left alone
        pass
    return np.load(final, mmap_mode="r")


def embed_corpus(encode: Encode, texts: Sequence[str], final: Path | None, *, rank: int = 0, world: int = 1,
                 barrier: Callable[[], None] | None = None, shard_size: int = EMBED_SHARD_PASSAGES,
                 progress: Callable[[int], None] | None = None) -> np.ndarray | None:
    """Every shard of ``texts`` embedded (this rank's share) and merged into ``final`` by rank 0, after ``barrier``
    (every rank's shards written). Returns the matrix on rank 0, None on the others. Without ``final`` (no cache)
    the shards are encoded in memory, in one process, in the same batches. ``progress``: as :func:`embed_shards`."""
    if final is None:
        if world != 1:
            raise DataError("embedding over several processes needs a cache folder to merge the shards in")
        plan = ShardPlan(len(texts), shard_size)
        rows = []
        for s in range(plan.shards):
            start, stop = plan.bounds(s)
            rows.append(np.asarray(encode(texts[start:stop]), dtype=np.float32))
        return np.concatenate(rows)
    embed_shards(encode, texts, final, rank, world, shard_size, progress)
    if barrier is not None:
        barrier()
    if rank != 0:
        return None
    return merge_shards(final, len(texts), shard_size)
