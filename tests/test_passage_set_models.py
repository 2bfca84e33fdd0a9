"""benchmarks/passage_set_models.py: recall at a candidate precision, and held-out scoring that separates what the
features separate (and nothing more) whichever model reads them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from _scripts import load_script

bench = load_script("benchmarks/passage_set_models.py")


def test_recall_at_precision_is_the_most_a_threshold_keeps_above_the_precision():
    y = np.array([1, 0, 1, 0, 1])
    p = np.array([0.9, 0.8, 0.7, 0.2, 0.1])
    # thresholds: 0.9 keeps 1/1 gold (recall 1/3); 0.7 keeps 2 of 3 kept (0.667); 0.1 keeps 3 of 5 (0.6)
    assert bench.recall_at_precision(y, p, 1.0) == pytest.approx(1 / 3)
    assert bench.recall_at_precision(y, p, 0.6) == pytest.approx(1.0)
    assert bench.recall_at_precision(y, p, 0.65) == pytest.approx(2 / 3)
    assert bench.recall_at_precision(np.array([0, 1]), np.array([0.9, 0.1]), 0.75) == 0.0


def _items(n: int, informative: bool, seed: int, group_prefix: str, kind: str) -> list[dict]:
    rng = random.Random(seed)
    items = []
    for q in range(n):
        cands = []
        for c in range(6):
            gold = c < 2
            signal = (1.0 if gold else -1.0) if informative else rng.gauss(0, 1)
            cands.append({"passage": c + 1, "x": [signal, rng.gauss(0, 1), rng.gauss(0, 1)], "gold": gold})
        items.append({"set": kind, "id": f"{group_prefix}{q}", "group": f"{group_prefix}{q // 2}", "gold": ["a", "b"],
                      "candidates": cands})
    return items


@pytest.mark.parametrize("model", ["logistic", *bench.BOOSTED])
def test_held_out_scores_separate_what_the_features_separate(model):
    ps = bench._trainer()
    train = _items(40, True, 0, "t", "train")
    mp = _items(40, True, 1, "m", "obliqa-mp")
    y, p = bench.held_out_scores(ps, train, mp, 5, 42, 1.0, model)
    assert len(y) == 40 * 6 and y.sum() == 40 * 2  # every held-out candidate scored once
    assert bench.separation(y, p, 0.75)["roc_auc"] == 1.0

    noise = _items(40, False, 2, "n", "obliqa-mp")
    y, p = bench.held_out_scores(ps, _items(40, False, 3, "u", "train"), noise, 5, 42, 1.0, model)
    assert bench.separation(y, p, 0.75)["roc_auc"] < 0.75
