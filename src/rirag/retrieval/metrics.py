"""Retrieval metrics with ranx: R@k, MAP@k, MRR@k over a run and its qrels; pair-aware Both@k, one-only@k and
Neither@k over the questions that need two passages."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Iterable, Mapping, Sequence

from rirag.constants import EVAL_K, EVAL_METRICS
from rirag.data.runs import Qrels, Run, ranked
from rirag.errors import DataError

logger = logging.getLogger(__name__)


def metric_names(k: int = EVAL_K, metrics: Iterable[str] = EVAL_METRICS) -> list[str]:
    return [f"{m}@{k}" for m in metrics]


#: A document id that is never relevant: it stands in for an empty result (ranx needs one per query).
NO_RESULT = "__rirag_no_result__"


def ranx_run(run: Mapping[str, Mapping[str, float]], qids: list[str]):
    """A ranx ``Run`` over ``qids`` in rirag's canonical order.

    ranx needs every qrels query in the run and at least one result per query; a sentinel id that is never relevant
    keeps an empty result at zero without changing any other query's value. Ties are broken by document id (as in
    a written TREC file): ranx sorts with an unstable argsort, so it is given strictly decreasing pseudo-scores in
    our canonical order instead of the raw scores.
    """
    from ranx import Run as RRun

    filled = {}
    for q in qids:
        order = ranked(run.get(q) or {NO_RESULT: 0.0})
        filled[q] = {docid: float(len(order) - i) for i, (docid, _) in enumerate(order)}
    return RRun(filled)


def evaluate_run(qrels: Qrels, run: Run, k: int = EVAL_K, metrics: Iterable[str] = EVAL_METRICS,
                 per_query: bool = False) -> dict:
    """Mean metrics (and, with ``per_query``, one dict per question) over the questions in ``qrels``.

    A question with no retrieved passage scores 0; run entries for questions outside ``qrels`` are ignored.
    """
    import numpy as np
    from ranx import Qrels as RQrels
    from ranx import evaluate

    if not qrels:
        raise DataError("no question with a gold passage to evaluate")
    names = metric_names(k, metrics)
    scores = evaluate(RQrels(qrels), ranx_run(run, list(qrels)), names, return_mean=False, make_comparable=True)
    if not isinstance(scores, dict):  # a single metric comes back as an array
        scores = {names[0]: scores}
    qids = list(RQrels(qrels).keys())
    result = {"n_questions": len(qids), **{n: float(np.mean(scores[n])) for n in names}}
    if per_query:
        result["per_query"] = {q: {n: float(scores[n][i]) for n in names} for i, q in enumerate(qids)}
    missing = sum(1 for q in qrels if not run.get(q))
    if missing:
        logger.warning("%d of %d questions have no retrieved passage in the run", missing, len(qrels))
    return result


def pair_metric_names(k: int = EVAL_K) -> list[str]:
    return [f"both@{k}", f"one-only@{k}", f"neither@{k}"]


def pair_metrics(gold_items: Mapping[str, Sequence[str | None]], run: Run, k: int = EVAL_K) -> dict:
    """Pair-aware recall over the questions that need two passages (exactly two gold items): the share with both in
    the top ``k`` (Both@k), exactly one (one-only@k), neither (Neither@k). An unmapped item (``None``) is never
    retrieved; two items held by one passage are both retrieved when it is. Questions of another gold count are left
    out (``pair_questions`` says how many count)."""
    counts = Counter()
    n = 0
    for qid, items in gold_items.items():
        if len(items) != 2:
            continue
        n += 1
        top = {docid for docid, _ in ranked(run.get(qid) or {}, k)}
        hits = sum(1 for item in items if item is not None and item in top)
        counts[hits] += 1
    names = pair_metric_names(k)
    if not n:
        return {"pair_questions": 0, **{name: None for name in names}}
    return {"pair_questions": n, names[0]: counts[2] / n, names[1]: counts[1] / n, names[2]: counts[0] / n}
