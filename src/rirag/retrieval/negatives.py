"""Hard negatives: top-ranked passages of a first-stage retriever that are not gold for the question.

Shared by contrastive tuning (mined negatives next to the in-batch ones) and the reranker (label-0 pairs). A
candidate is dropped when its id is gold for the question or when its text equals a gold passage's text (ObliQA
repeats some rules verbatim under other ids, and such a copy is a false negative). Draws are seeded.
"""

from __future__ import annotations

import logging
import random
from typing import Mapping, Sequence

from rirag.data.obliqa import Passage, Question
from rirag.data.runs import ranked

logger = logging.getLogger(__name__)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def negative_pools(questions: Sequence[Question], corpus: Mapping[str, Passage], retriever, depth: int,
                   show_progress: bool = False) -> dict[str, list[str]]:
    """Question id -> its non-gold candidates among ``retriever``'s top ``depth``, best first."""
    if depth < 1:
        raise ValueError(f"negatives depth must be >= 1, got {depth}")
    run = retriever.search({q.id: q.text for q in questions}, k=depth, show_progress=show_progress)
    return pools_from_run(questions, corpus, run, depth)


def pools_from_run(questions: Sequence[Question], corpus: Mapping[str, Passage], run: Mapping[str, Mapping[str, float]],
                   depth: int) -> dict[str, list[str]]:
    """:func:`negative_pools` over a computed run (question id -> passage id -> score)."""
    if depth < 1:
        raise ValueError(f"negatives depth must be >= 1, got {depth}")
    pools: dict[str, list[str]] = {}
    for q in questions:
        gold = set(q.gold)
        gold_texts = {_norm(corpus[p].text) for p in q.gold if p in corpus}
        pools[q.id] = [pid for pid, _ in ranked(run.get(q.id, {}), depth)
                       if pid not in gold and _norm(corpus[pid].text) not in gold_texts]
    empty = sum(not v for v in pools.values())
    if empty:
        logger.warning("%d of %d questions have no negative in the top %d", empty, len(questions), depth)
    return pools


def draw(pool: Sequence[str], n: int, rng: random.Random) -> list[str]:
    """``n`` distinct candidates of ``pool`` (all of them when it is shorter), seeded by ``rng``."""
    return rng.sample(list(pool), min(n, len(pool)))


def negative_columns(pairs: Sequence[tuple[str, str, str, str]], pools: Mapping[str, Sequence[str]],
                     corpus: Mapping[str, Passage], n: int, rng: random.Random,
                     anchor: str = "anchor") -> dict[str, list[str]]:
    """Training columns ``anchor``, positive, negative_1..n from (question id, question, passage id, passage) pairs.

    Each pair gets ``n`` negatives drawn from its question's pool, in pair order; a pair whose pool is shorter than
    ``n`` is dropped (with a warning).
    """
    names = [f"negative_{i + 1}" for i in range(n)]
    columns: dict[str, list[str]] = {anchor: [], "positive": [], **{c: [] for c in names}}
    dropped = 0
    for qid, question, _, passage in pairs:
        negatives = draw(pools[qid], n, rng)
        if len(negatives) < n:
            dropped += 1
            continue
        columns[anchor].append(question)
        columns["positive"].append(passage)
        for c, pid in zip(names, negatives):
            columns[c].append(corpus[pid].text)
    if dropped:
        logger.warning("%d of %d pairs dropped: fewer than %d negatives in their pool", dropped, len(pairs), n)
    return columns
