"""Question groups and their cross-validation folds, shared by the passage-set trainer (``train/passage_set.py``) and
its benchmarks (``benchmarks/passage_set_pra_cv.py``, ``benchmarks/passage_set_models.py``).

Questions that share a gold passage, transitively, form one group, and a group is never split across folds: a
held-out fold never shares a gold passage with the questions the decision was fitted on. Groups are named after their
first question (sorted), and folds are dealt from the sorted group names shuffled with a seed, so the folds do not
depend on the hash seed or on the order of the questions.
"""

from __future__ import annotations

import random
from typing import Mapping


def question_groups(gold: Mapping[str, set[str]]) -> dict[str, str]:
    """Questions sharing a gold passage, transitively, in one group (named after its first question)."""
    parent = {q: q for q in gold}

    def root(q: str) -> str:
        while parent[q] != q:
            parent[q] = parent[parent[q]]
            q = parent[q]
        return q

    owner: dict[str, str] = {}
    for q, passages in sorted(gold.items()):
        for p in sorted(passages):  # sorted: the groups' names, hence the folds, do not depend on the hash seed
            if p in owner:
                parent[root(q)] = root(owner[p])
            else:
                owner[p] = q
    return {q: root(q) for q in gold}


def group_folds(items: list[dict], folds: int, seed: int) -> dict[str, int]:
    """Each question group of ``items`` (their ``"group"``) -> its fold: the sorted group names shuffled with
    ``seed``, dealt round."""
    groups = sorted({it["group"] for it in items})
    random.Random(seed).shuffle(groups)
    return {g: i % folds for i, g in enumerate(groups)}
