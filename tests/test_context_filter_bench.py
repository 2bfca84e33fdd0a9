"""benchmarks/context_filter.py: the grid, the depth-independence it measures and the rule that picks the default."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import context_filter as bench  # noqa: E402


def test_the_grid_holds_the_named_filters_and_both_depths():
    grid = bench.grid()
    assert {"top-k", "rirag"} <= set(grid)
    assert {f.depth for name, f in grid.items() if name.startswith("d")} == {10, 100}


def test_a_context_row_sees_depth_dependence_and_the_ceiling():
    run = {"q": {f"p{i}": 30.0 - i * i * 0.1 for i in range(100)}}
    gold = {"q": {"p0", "p5"}}
    deep = bench.context_row(bench.grid()["rirag"], [("q", "?")], gold, run)
    assert not deep["depth_independent"]  # normalised over 100, its top 10 alone decides otherwise
    top = bench.context_row(bench.grid()["top-k"], [("q", "?")], gold, run)
    assert top == {"context_passages": 10.0, "context_all_share": 1.0, "context_recall": 1.0,
                   "depth_independent": True, "same_from_top10_share": 1.0}


def test_the_rule_keeps_precision_then_takes_the_largest_ceiling():
    def row(precision, share, passages, independent=True):
        return {"depth_independent": independent, "mean_context_all_share": share,
                "mean_context_passages": passages,
                "answers": {"obliqa-validation": {"gold_citation_precision": precision}}}

    rows = {"rirag": row(0.64, 0.40, 2.9, independent=False), "top-k": row(0.66, 0.60, 10.0),
            "small": row(0.65, 0.45, 3.0), "imprecise": row(0.50, 0.70, 10.0)}
    assert bench.choose(rows) == "top-k"
    rows["top-k"] = row(0.61, 0.60, 10.0)  # more than 0.02 below the paper's filter: out
    assert bench.choose(rows) == "small"
