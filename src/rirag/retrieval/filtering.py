"""Post-retrieval score filtering before generation (RIRAG section 5; second seed paper section 3.5), and the
answerer's context.

Over a query's ranked top-k (normalised scores, e.g. a hybrid or rank-fusion run): walk down the ranking, stop at
the first consecutive drop larger than ``max_drop`` (0.2), drop passages scoring below ``min_score`` (0.7), and
always keep at least the top passage (:func:`filter_ranked`).

:class:`ContextFilter` is what the answering commands use: its decision depends on the results' top ``depth`` only,
not on how many results a run file holds. :data:`CONTEXT_FILTERS` names them (``--context-filter``); the default
is :data:`rirag.constants.DEFAULT_CONTEXT_FILTER`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K, FILTER_MAX_DROP, FILTER_MIN_SCORE, RUN_DEPTH
from rirag.data.runs import Run, ranked
from rirag.errors import DataError
from rirag.retrieval.fusion import min_max_normalise

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


@dataclass(frozen=True)
class ContextFilter:
    """Which of a question's results become the answerer's context, the same on every path (``rirag ask``,
    ``answer --run``, ``submit``, the demo, the benchmarks).

    Scores that are not all in [0, 1] (BM25, learned fusion) are min-max normalised over the top ``depth`` results
    only, so the decision does not depend on how many results a run file holds, as long as it holds ``depth``;
    then the RIRAG rule (``min_score``, ``max_drop``) picks from the top ``k``. ``min_score`` ``None``: no filter,
    the top ``k`` as ranked. ``depth`` larger than ``k`` (the paper's 100) needs that many results: a shallower
    run gives other contexts, and :meth:`select` cannot tell (the session retrieves :meth:`search_depth`)."""

    name: str
    min_score: float | None = FILTER_MIN_SCORE
    max_drop: float = FILTER_MAX_DROP
    depth: int = EVAL_K
    note: str = ""

    @property
    def filters(self) -> bool:
        return self.min_score is not None

    def search_depth(self, k: int) -> int:
        """Results to retrieve so that :meth:`select` decides as on any deeper run."""
        return max(k, self.depth) if self.filters else k

    def scores(self, results: Mapping[str, float]) -> dict[str, float]:
        """The top ``depth`` results, their scores as the rule reads them: unchanged when all lie in [0, 1]
        (hybrid, rank fusion), else min-max normalised over these ``depth``."""
        top = dict(ranked(results, self.depth))
        if all(0.0 <= s <= 1.0 for s in top.values()):
            return top
        return min_max_normalise(top)

    def select(self, results: Mapping[str, float], k: int = EVAL_K) -> list[tuple[str, float]]:
        """The context: ``(passage id, score)`` in rank order, at most ``k``; scores normalised when filtering,
        raw when not."""
        if not self.filters:
            return ranked(results, k)
        return list(filter_ranked(self.scores(results), self.min_score, self.max_drop, k).items())


#: ``--context-filter`` name -> filter. ``rirag``: the paper's filter (scores min-max normalised over the top 100,
#: RIRAG appendix A.4, then >= 0.7 and no drop > 0.2), which reproduces its numbers; ``top-k``: the top ``k`` as
#: ranked, the answerer decides what to cite (benchmarks/context_filter.py measures both on validation data).
CONTEXT_FILTERS: dict[str, ContextFilter] = {
    "top-k": ContextFilter("top-k", None, note="the top k as ranked; the answerer decides what to cite"),
    "rirag": ContextFilter("rirag", FILTER_MIN_SCORE, FILTER_MAX_DROP, RUN_DEPTH,
                           note=f"RIRAG: scores min-max normalised over the top {RUN_DEPTH}, kept when >= "
                                f"{FILTER_MIN_SCORE} until a drop > {FILTER_MAX_DROP}"),
}


def context_filter(value: "str | bool | ContextFilter | None" = None) -> ContextFilter:
    """The filter a name (:data:`CONTEXT_FILTERS`), a filter, or a flag names: ``None`` the default, ``True`` the
    paper's filter (``rirag``), ``False`` none (``top-k``); an unknown name is a :class:`~rirag.errors.DataError`."""
    if isinstance(value, ContextFilter):
        return value
    if value is None:
        value = DEFAULT_CONTEXT_FILTER
    elif isinstance(value, bool):
        value = "rirag" if value else "top-k"
    found = CONTEXT_FILTERS.get(value)
    if found is None:
        raise DataError(f"--context-filter {value!r}: unknown; choose one of: {', '.join(CONTEXT_FILTERS)}")
    return found
