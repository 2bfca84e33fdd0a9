"""Score fusion of runs ({qid: {pid: score}}): hybrid (max-normalised), RIRAG rank fusion (min-max with the
document's BM25 score), and reciprocal rank fusion.

* :func:`hybrid_fusion` (second seed paper, eqs. 4-5): each side divided by its per-query maximum plus ε, then
  ``α·dense + (1−α)·bm25`` over the union of both sides' candidates (each side's top ``RUN_DEPTH``); a candidate
  missing from one side gets 0 there. ranx's ``max`` normalisation divides by the max *without* ε and its ``wsum``
  is otherwise the same, but we keep ε as the paper writes it, so this is a short implementation.
* :func:`rank_fusion` (RIRAG, appendix A.4): passage scores min-max normalised over the query's top-100 passages,
  document BM25 scores min-max normalised over all documents, ``(1−w)·ŝ_passage(q,p) + w·ŝ_doc(q,d(p))`` with
  w = 0.1 over the passage candidates; a side lacking the candidate contributes 0. With min == max, every
  normalised score is 1 (a single candidate is the best one).
* :func:`rrf` : ``Σ 1/(k + rank)`` with k = 60 over the union of candidates, ranks from 1 (ties by id).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from rirag.constants import HYBRID_ALPHA, HYBRID_EPSILON, RANK_FUSION_DOC_WEIGHT, RRF_K, RUN_DEPTH
from rirag.data.runs import Run, ranked
from rirag.errors import DataError


def _top(results: Mapping[str, float], depth: int | None) -> dict[str, float]:
    """The top ``depth`` in the canonical order (score descending, ties by id), as in TREC files and evaluation."""
    return dict(ranked(results, depth))


def max_normalise(results: Mapping[str, float], epsilon: float = HYBRID_EPSILON) -> dict[str, float]:
    """``s / (max(s) + ε)`` per query (paper eq. 4)."""
    if not results:
        return {}
    m = max(results.values())
    return {pid: s / (m + epsilon) for pid, s in results.items()}


def min_max_normalise(results: Mapping[str, float]) -> dict[str, float]:
    """``(s − min) / (max − min)`` per query (RIRAG eq. 5); all ones when max == min."""
    if not results:
        return {}
    lo, hi = min(results.values()), max(results.values())
    if hi == lo:
        return {pid: 1.0 for pid in results}
    return {pid: (s - lo) / (hi - lo) for pid, s in results.items()}


def hybrid_fusion(dense: Mapping[str, Mapping[str, float]], bm25: Mapping[str, Mapping[str, float]],
                  alpha: float = HYBRID_ALPHA, depth: int = RUN_DEPTH, epsilon: float = HYBRID_EPSILON) -> Run:
    """α·max-normalised dense + (1−α)·max-normalised BM25 over the union of each side's top ``depth``."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    out: Run = {}
    for q in dict.fromkeys([*dense, *bm25]):
        d = max_normalise(_top(dense.get(q, {}), depth), epsilon)
        b = max_normalise(_top(bm25.get(q, {}), depth), epsilon)
        out[q] = {pid: alpha * d.get(pid, 0.0) + (1 - alpha) * b.get(pid, 0.0) for pid in dict.fromkeys([*d, *b])}
    return out


def rank_fusion(passages: Mapping[str, Mapping[str, float]], documents: Mapping[str, Mapping[str, float]],
                document_of: Mapping[str, str], doc_weight: float = RANK_FUSION_DOC_WEIGHT,
                depth: int = RUN_DEPTH) -> Run:
    """RIRAG rank fusion of a passage run with a document run.

    ``passages``: {qid: {pid: score}} from any passage retriever (its top ``depth`` are the candidates);
    ``documents``: {qid: {doc_id: score}}, the BM25 scores of (all) documents; ``document_of``: pid -> doc_id.
    """
    if not 0.0 <= doc_weight <= 1.0:
        raise ValueError(f"doc_weight must be in [0, 1], got {doc_weight}")
    out: Run = {}
    for q, results in passages.items():
        p = min_max_normalise(_top(results, depth))
        d = min_max_normalise(documents.get(q, {}))
        unknown = [pid for pid in p if pid not in document_of]
        if unknown:
            raise DataError(f"rank fusion: query {q!r}: passage {unknown[0]!r} has no document in document_of")
        out[q] = {pid: (1 - doc_weight) * s + doc_weight * d.get(document_of[pid], 0.0) for pid, s in p.items()}
    return out


def rrf(runs: Sequence[Mapping[str, Mapping[str, float]]], k: int = RRF_K, depth: int = RUN_DEPTH) -> Run:
    """Reciprocal rank fusion: Σ_runs 1 / (k + rank), ranks from 1 within each run's top ``depth``."""
    out: Run = {}
    qids = dict.fromkeys(q for run in runs for q in run)
    for q in qids:
        fused: dict[str, float] = {}
        for run in runs:
            for rank, pid in enumerate(_top(run.get(q, {}), depth), start=1):
                fused[pid] = fused.get(pid, 0.0) + 1.0 / (k + rank)
        out[q] = fused
    return out


def truncate(run: Mapping[str, Mapping[str, float]], depth: int) -> Run:
    """Each query's top ``depth`` (ties by id)."""
    return {q: _top(r, depth) for q, r in run.items()}


# --------------------------------------------------------------------------------------------------
# Retrievers built from other retrievers (the registry builds these)
# --------------------------------------------------------------------------------------------------


class HybridRetriever:
    """α·dense + (1−α)·BM25, both max-normalised, over the union of each side's top ``depth``."""

    def __init__(self, dense, bm25, alpha: float = HYBRID_ALPHA, depth: int = RUN_DEPTH):
        self.dense, self.bm25, self.alpha, self.depth = dense, bm25, alpha, depth

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        fused = hybrid_fusion(self.dense.search(queries, max(k, self.depth), show_progress),
                              self.bm25.search(queries, max(k, self.depth), show_progress), self.alpha, self.depth)
        return truncate(fused, k)


class RankFusionRetriever:
    """RIRAG rank fusion: a passage retriever's top ``depth`` fused with the BM25 score of each passage's document."""

    def __init__(self, passages, documents, document_of: Mapping[str, str],
                 doc_weight: float = RANK_FUSION_DOC_WEIGHT, depth: int = RUN_DEPTH):
        self.passages, self.documents, self.document_of = passages, documents, document_of
        self.doc_weight, self.depth = doc_weight, depth

    def document_scores(self, queries: Mapping[str, str]) -> Run:
        scores = self.documents.score_all(queries)
        return {q: {d: float(s) for d, s in zip(self.documents.ids, row)} for q, row in zip(queries, scores)}

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        fused = rank_fusion(self.passages.search(queries, max(k, self.depth), show_progress),
                            self.document_scores(queries), self.document_of, self.doc_weight, self.depth)
        return truncate(fused, k)


class RRFRetriever:
    """Reciprocal rank fusion of several retrievers. Its scores are :func:`rrf`'s divided by the best an RRF score can
    be (every retriever ranking the passage first: ``n / (k + 1)``), so that they lie in [0, 1] with 1 for a passage
    all agree on, the scale the RIRAG score filter reads (:data:`rirag.constants.FILTER_MIN_SCORE`); raw RRF scores
    (at most 2/61 for two retrievers) all fall below 0.7 and the filter kept only the first passage. The order is
    :func:`rrf`'s."""

    def __init__(self, retrievers: Sequence, k: int = RRF_K, depth: int = RUN_DEPTH):
        self.retrievers, self.k, self.depth = list(retrievers), k, depth

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        runs = [r.search(queries, max(k, self.depth), show_progress) for r in self.retrievers]
        best = len(runs) / (self.k + 1)
        return {q: {pid: s / best for pid, s in results.items()}
                for q, results in truncate(rrf(runs, self.k, self.depth), k).items()}
