"""Approximate nearest-neighbour search over L2-normalised passage embeddings: a thin wrapper over faiss's HNSW index
(``IndexHNSWFlat``, inner product, so the score is the cosine similarity exact search computes).

The index is built from the float32 embedding matrix (rows in the corpus order of the dense retriever), saved
atomically (written to a temporary sibling, then renamed) and loaded memory-mapped where faiss can (``IO_FLAG_MMAP``;
a whole read otherwise). :meth:`ANNIndex.search` returns what :func:`rirag.retrieval.dense.top_k` returns: row
indices and scores per query, descending score, ties by lower index. faiss is imported inside the functions that
need it (an optional dependency, and no import-time work).
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from rirag.constants import ANN_EF_CONSTRUCTION, ANN_EF_SEARCH, ANN_HNSW_M
from rirag.errors import DataError

logger = logging.getLogger(__name__)


def _faiss():
    try:
        import faiss
    except ImportError as err:  # an optional dependency (the train extra)
        raise DataError("approximate dense search needs faiss: pip install faiss-cpu (or --option search=exact)") \
            from err
    return faiss


def _check_matrix(x: np.ndarray, what: str, dim: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] == 0:
        raise DataError(f"{what}: expected a non-empty 2-d matrix, got shape {x.shape}")
    if dim is not None and x.shape[1] != dim:
        raise DataError(f"{what}: {x.shape[1]} dimensions, the index has {dim}")
    return np.ascontiguousarray(x, dtype=np.float32)


def index_suffix(m: int = ANN_HNSW_M, ef_construction: int = ANN_EF_CONSTRUCTION) -> str:
    """What an index file adds to its embeddings' cache name: the parameters its graph was built with."""
    return f".hnsw-m{m}-efc{ef_construction}.faiss"


class ANNIndex:
    """A faiss HNSW index over normalised embeddings; ``ef_search`` is the candidate list of each search."""

    def __init__(self, index, ef_search: int = ANN_EF_SEARCH):
        if ef_search < 1:
            raise DataError(f"ef_search must be >= 1, got {ef_search}")
        self.index = index
        self.ef_search = ef_search

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def dim(self) -> int:
        return int(self.index.d)

    @classmethod
    def build(cls, embeddings: np.ndarray, m: int = ANN_HNSW_M, ef_construction: int = ANN_EF_CONSTRUCTION,
              ef_search: int = ANN_EF_SEARCH) -> "ANNIndex":
        """An HNSW graph over the rows of ``embeddings`` (float32, L2-normalised, in corpus order)."""
        if m < 2 or ef_construction < 1:
            raise DataError(f"HNSW needs M >= 2 and efConstruction >= 1, got M={m}, efConstruction={ef_construction}")
        emb = _check_matrix(embeddings, "embeddings")
        faiss = _faiss()
        index = faiss.IndexHNSWFlat(emb.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        logger.info("building an HNSW index (M=%d, efConstruction=%d) over %d embeddings", m, ef_construction,
                    emb.shape[0])
        index.add(emb)
        return cls(index, ef_search)

    def save(self, path: str | Path) -> Path:
        """Write the index atomically: a temporary file beside ``path``, renamed over it once complete."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        try:
            _faiss().write_index(self.index, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path, ef_search: int = ANN_EF_SEARCH, mmap: bool = True) -> "ANNIndex":
        """Read a saved index, memory-mapped when ``mmap`` and faiss supports it for this index (else whole)."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"ANN index {path} does not exist")
        faiss = _faiss()
        if mmap:
            try:
                return cls(faiss.read_index(str(path), faiss.IO_FLAG_MMAP), ef_search)
            except RuntimeError as err:  # this faiss build or index type cannot be mapped
                logger.info("ANN index %s: no memory map (%s); reading it whole", path, err)
        try:
            return cls(faiss.read_index(str(path)), ef_search)
        except RuntimeError as err:
            raise DataError(f"ANN index {path}: cannot read it: {err}") from err

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and scores of the (approximately) k most similar rows per query, sorted as
        :func:`rirag.retrieval.dense.top_k` sorts (descending score, ties by lower index)."""
        if k < 1:
            raise DataError(f"k must be >= 1, got {k}")
        q = _check_matrix(queries, "queries", self.dim)
        k = min(k, len(self))
        faiss = _faiss()
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.ef_search, k)
        scores, idx = self.index.search(q, k, params=params)
        if (idx < 0).any():  # fewer than k found (a graph that cannot reach k rows): the missing ones rank last
            scores = np.where(idx < 0, -np.inf, scores).astype(np.float32)
            idx = np.where(idx < 0, np.iinfo(np.int64).max, idx)
        order = np.lexsort((idx, -scores), axis=1)
        idx, scores = np.take_along_axis(idx, order, axis=1), np.take_along_axis(scores, order, axis=1)
        return idx, scores
