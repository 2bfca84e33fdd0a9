"""The document-grouped CV and the overlap-group report: folds keep documents whole; groups and gain shares add up."""

from __future__ import annotations

import numpy as np

from _scripts import load_script
from rirag.data import Question


def _load(name: str):
    return load_script(f"benchmarks/{name}.py", f"bench_{name}")


def _q(i, docs, gold=None):
    return Question(f"q{i}", f"question {i}", tuple(gold or (f"p{i}",)), gold_documents=tuple(docs))


def test_document_folds_keep_each_document_in_one_fold_and_discard_spanning_questions():
    cv = _load("retrieval_cv")
    questions = [_q(i, (i % 10,)) for i in range(40)] + [_q(99, (0, 1))]
    folds, fold_of, discarded = cv.document_folds(questions, 5, seed=42)
    assert sorted(fold_of) == list(range(10)) and sorted(np.bincount(list(fold_of.values()))) == [2] * 5
    for i, fold in enumerate(folds):
        assert all(fold_of[d] == i for q in fold for d in q.gold_documents)
    assert sum(len(f) for f in folds) + discarded == 41
    assert discarded == (1 if fold_of[0] != fold_of[1] else 0)
    assert cv.document_folds(questions, 5, seed=42)[1] == fold_of  # seeded
    assert cv.document_folds(questions, 5, seed=7)[1] != fold_of


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    cv = _load("retrieval_cv")
    values = np.array([0.0, 1.0] * 50)
    lo, hi = cv.bootstrap_interval(values, 500, seed=1)
    assert lo < 0.5 < hi and hi - lo < 0.3
    assert cv.bootstrap_interval(values, 500, seed=1) == [lo, hi]
    assert cv.bootstrap_interval(np.ones(10), 100, seed=1) == [1.0, 1.0]


def test_paired_test_against_the_baseline():
    cv = _load("retrieval_cv")
    qrels = {f"q{i}": {f"g{i}": 1} for i in range(30)}
    good = {f"q{i}": {f"g{i}": 2.0, "x": 1.0} for i in range(30)}
    bad = {f"q{i}": {"x": 2.0, f"g{i}": 1.0} if i % 3 else {f"g{i}": 2.0} for i in range(30)}
    p = cv.paired_tests(qrels, {"base": bad, "better": good}, "base")
    assert set(p) == {"better"} and p["better"]["mrr@10"] < 0.01


def test_overlap_groups_and_gain_shares():
    og = _load("overlap_groups")
    seen = {"a", "b"}
    assert og.group_of(("a", "b"), seen) == "all"
    assert og.group_of(("a", "z"), seen) == "partly"
    assert og.group_of(("z",), seen) == "never"
    questions = [Question("q1", "t", ("a",)), Question("q2", "t", ("a", "z")), Question("q3", "t", ("z",))]
    base = {"q1": {"x": 1.0}, "q2": {"x": 1.0}, "q3": {"x": 1.0}}
    best = {"q1": {"a": 1.0}, "q2": {"a": 1.0}, "q3": {"x": 1.0}}
    rows = og.group_rows(questions, seen, {"bm25": base, "best": best})
    by = {(r["run"], r["group"]): r for r in rows}
    assert by[("best", "all")]["recall@10"] == 1.0 and by[("best", "partly")]["recall@10"] == 0.5
    shares = [by[("best", g)]["share of the whole gain"] for g in ("all", "partly", "never")]
    assert shares == [round(1 / 1.5, 4), round(0.5 / 1.5, 4), 0.0]
    assert by[("best", "every question")]["share of the whole gain"] == 1.0
