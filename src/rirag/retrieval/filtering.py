"""Post-retrieval score filtering before generation (RIRAG section 5; second seed paper section 3.5).

Over a query's ranked top-k (normalised scores, e.g. a hybrid or rank-fusion run): walk down the ranking, stop at
the first consecutive drop larger than ``max_drop`` (0.2), drop passages scoring below ``min_score`` (0.7), and
always keep at least the top passage.
"""

from __future__ import annotations

from typing import Mapping

from rirag.constants import EVAL_K, FILTER_MAX_DROP, FILTER_MIN_SCORE
from rirag.data.runs import Run, ranked

#: Float slack so that a drop of exactly max_drop (0.9 → 0.7) is not a cut.
_TOLERANCE = 1e-9


def filter_ranked(results: Mapping[str, float], min_score: float = FILTER_MIN_SCORE,
                  max_drop: float = FILTER_MAX_DROP, k: int | None = EVAL_K) -> dict[str, float]:
    """The kept passages of one query, in rank order (ties by id)."""
    order = ranked(results, k)
    kept: dict[str, float] = {}
    previous = None
    for pid, score in order:
        if previous is not None and previous - score > max_drop + _TOLERANCE:
            break
        if score >= min_score:
            kept[pid] = score
        previous = score
    if not kept and order:
        pid, score = order[0]
        kept[pid] = score
    return kept


def filter_run(run: Mapping[str, Mapping[str, float]], min_score: float = FILTER_MIN_SCORE,
               max_drop: float = FILTER_MAX_DROP, k: int | None = EVAL_K) -> Run:
    return {q: filter_ranked(r, min_score, max_drop, k) for q, r in run.items()}
