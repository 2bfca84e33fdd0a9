"""Cross-encoder reranking of a first-stage run (the hybrid's top ``RERANK_DEPTH``).

The reranker is a sentence-transformers ``CrossEncoder`` (one relevance logit per query–passage pair) trained by
``train/reranker.py``. Reranked candidates come first, ordered by the cross-encoder's score; candidates below the
reranking depth keep their first-stage order after them (their scores are shifted below the reranked ones).
"""

from __future__ import annotations

import logging
from typing import Mapping

from rirag.constants import RERANK_DEPTH, RUN_DEPTH
from rirag.data.obliqa import Passage
from rirag.data.runs import Run, ranked
from rirag.models import resolve_model
from rirag.retrieval.encoder import ModelLoadError
from rirag.retrieval.fusion import truncate

logger = logging.getLogger(__name__)


def load_cross_encoder(name: str, device: str | None = None, max_length: int | None = 256):
    try:
        resolved = resolve_model(name)
    except (FileNotFoundError, ImportError) as err:
        raise ModelLoadError(f"reranker {name!r}: {err}") from err
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(resolved, device=device, max_length=max_length)
    except Exception as err:  # noqa: BLE001
        raise ModelLoadError(f"cannot load reranker {name!r}: {type(err).__name__}: {err}") from err


def rerank_run(run: Mapping[str, Mapping[str, float]], queries: Mapping[str, str], corpus: Mapping[str, Passage],
               scorer, depth: int = RERANK_DEPTH, batch_size: int = 64, show_progress: bool = False) -> Run:
    """Rerank each query's top ``depth`` with ``scorer(list[(query, passage)]) -> scores``."""
    import numpy as np

    heads: dict[str, list[str]] = {}
    pairs: list[tuple[str, str]] = []
    for q, results in run.items():
        heads[q] = [pid for pid, _ in ranked(results, depth)]
        pairs.extend((queries[q], corpus[pid].text) for pid in heads[q])
    scores = np.asarray(scorer(pairs), dtype=np.float64) if pairs else np.zeros(0)
    out: Run = {}
    i = 0
    for q, results in run.items():
        head = heads[q]
        s = scores[i : i + len(head)]
        i += len(head)
        fused = {pid: float(v) for pid, v in zip(head, s)}
        tail = [pid for pid, _ in ranked(results)[depth:]]
        floor = (min(fused.values()) if fused else 0.0) - 1.0
        for r, pid in enumerate(tail):
            fused[pid] = floor - r * 1e-3
        out[q] = fused
    return out


class RerankRetriever:
    """First stage (e.g. the hybrid) then a cross-encoder over its top ``depth``; the model loads lazily."""

    def __init__(self, corpus: Mapping[str, Passage], first_stage, reranker: str, depth: int = RERANK_DEPTH,
                 batch_size: int = 64, device: str | None = None):
        self.corpus, self.first_stage, self.reranker_name = corpus, first_stage, reranker
        self.depth, self.batch_size, self.device = depth, batch_size, device
        self._model = None

    @property
    def model(self):
        if self._model is None:
            self._model = load_cross_encoder(self.reranker_name, self.device)
        return self._model

    def score_pairs(self, pairs, show_progress: bool = False):
        return self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=show_progress,
                                  convert_to_numpy=True)

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        first = self.first_stage.search(queries, max(k, self.depth), show_progress)
        reranked = rerank_run(first, queries, self.corpus, lambda p: self.score_pairs(p, show_progress),
                              self.depth, self.batch_size, show_progress)
        return truncate(reranked, k)
