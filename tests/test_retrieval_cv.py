"""The document-grouped CV and the overlap-group report: folds keep documents whole; groups and gain shares add up."""

from __future__ import annotations

import numpy as np
import pytest

from _scripts import load_script
from rirag.data.obliqa import Question


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
    p = cv.paired_tests(qrels, {"base": bad, "better": good, "same": dict(bad)}, "base")
    assert set(p) == {"better", "same"} and p["better"]["mrr@10"] < 0.01
    assert p["same"] == {m: None for m in cv.METRICS}  # no test, and no NaN in the JSON


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


def test_paired_difference_interval_excludes_zero_only_for_a_real_gain():
    cv = _load("retrieval_cv")
    base = np.array([0.0, 1.0] * 50)
    better = base.copy()
    better[::4] = 1.0  # a quarter of the questions gain 1
    lo, hi = cv.paired_difference_interval(better, base, 500, seed=3)
    assert 0.0 < lo < 0.25 < hi
    noise = np.random.default_rng(0).permutation(base)  # same mean, other questions: no paired gain
    lo, hi = cv.paired_difference_interval(noise, base, 500, seed=3)
    assert lo < 0.0 < hi
    assert cv.paired_difference_interval(better, base, 500, seed=3) == cv.paired_difference_interval(
        better, base, 500, seed=3)


def _fold_runs(cv, folds, good: bool):
    out = cv.PerFold()
    for i, fold in enumerate(folds):
        part = {q.id: ({q.gold[0]: 2.0, "x": 1.0} if good or int(q.id[1:]) % 2 else {"x": 2.0, q.gold[0]: 1.0})
                for q in fold}
        out.run.update(part)
        out.minutes.append(0.5 + i)
    return out


def test_result_rows_give_pooled_per_fold_difference_and_minutes():
    cv = _load("retrieval_cv")
    folds = [[_q(i, (0,)) for i in range(0, 20)], [_q(i, (1,)) for i in range(20, 40)]]
    measured = {"bm25": _fold_runs(cv, folds, good=False), "rank-fusion": _fold_runs(cv, folds, good=True)}
    measured["rank-fusion"].notes = {"alpha": 0.2}
    rows = cv.result_rows(measured, folds, cv.Config(bootstrap=200))
    base, new = rows
    assert base["row"] == "bm25" and "recall@10 − bm25" not in base and base["minutes per fold"] == [0.5, 1.5]
    assert new["row"] == cv.CV_ROWS["rank-fusion"] and new["mrr@10"] == 1.0 and base["mrr@10"] == 0.75
    assert new["mrr@10 − bm25"] == 0.25 and new["mrr@10 − bm25 95% CI"][0] > 0.0
    assert new["recall@10 − bm25"] == 0.0 and new["recall@10 − bm25 95% CI"] == [0.0, 0.0]
    assert new["per fold MRR@10"] == [1.0, 1.0] and base["per fold MRR@10"] == [0.75, 0.75]
    assert new["minutes"] == 2.0 and new["alpha"] == 0.2 and "p vs bm25 (paired t)" in new


def test_small_checks_cap_folds_and_restrict_the_corpus(tiny_data_dir):
    from rirag.data.obliqa import load_obliqa

    cv = _load("retrieval_cv")
    obliqa = load_obliqa(tiny_data_dir)
    questions = cv.pooled_questions(obliqa)
    corpus, kept = cv.subset(obliqa, questions, 2, seed=1)
    documents = {p.document_id for p in corpus.values()}
    assert len(documents) == 2 and kept and all(set(q.gold_documents) <= documents for q in kept)
    assert all(g in corpus for q in kept for g in q.gold)
    assert cv.subset(obliqa, questions, None, seed=1) == (obliqa.corpus, questions)
    folds = [[_q(i, (0,)) for i in range(10)], [_q(i, (1,)) for i in range(3)]]
    capped = cv.cap_folds(folds, 4, seed=1)
    assert [len(f) for f in capped] == [4, 3] and all(q in folds[0] for q in capped[0])


def test_merging_refuses_a_file_of_another_fold_layout(tmp_path):
    cv = _load("retrieval_cv")
    out = tmp_path / "cv.json"
    out.write_text('{"folds": 5, "seed": 42, "kept_questions": 5188, "rows": []}', encoding="utf-8")
    cv.check_layout(str(out), {"folds": 5, "seed": 42, "kept_questions": 5188, "fold_questions": [1], "model": "m"})
    with pytest.raises(SystemExit, match="kept_questions"):
        cv.check_layout(str(out), {"folds": 5, "seed": 42, "kept_questions": 80, "fold_questions": [1], "model": "m"})


class _HashDense:
    """Stands in for the zero-shot encoder: bag-of-words hashed into 64 dimensions, normalised."""

    def __init__(self, corpus):
        self.corpus = corpus

    @staticmethod
    def _embed(texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for r, t in enumerate(texts):
            for w in t.lower().split():
                out[r, sum(map(ord, w)) % 64] += 1.0
        return out / (np.linalg.norm(out, axis=1, keepdims=True) + 1e-9)

    def passage_embeddings(self, show_progress=False):
        return self._embed([p.text for p in self.corpus.values()])

    def query_embeddings(self, queries, show_progress=False):
        return self._embed(list(queries.values()))


def test_learned_fusion_trains_each_fold_on_the_other_folds_only(tiny_data_dir, monkeypatch):
    pytest.importorskip("lightgbm")
    import rirag.retrieval.learned_fusion as lf
    from rirag.data.obliqa import load_obliqa
    from rirag.retrieval.bm25 import passage_index

    cv = _load("retrieval_cv")
    obliqa = load_obliqa(tiny_data_dir)
    folds, _, _ = cv.document_folds(cv.pooled_questions(obliqa), 2, seed=42)
    trained_on = []
    original = lf.train_ranker
    monkeypatch.setattr(lf, "train_ranker", lambda f, *a, **k: trained_on.append(set(f.qids)) or original(f, *a, **k))
    out = cv.learned_fusion(folds, obliqa.corpus, _HashDense(obliqa.corpus), passage_index(obliqa.corpus),
                            cv.Config(folds=2))
    assert set(out.run) == {q.id for f in folds for q in f} and len(out.minutes) == 2
    assert len(trained_on) == 4  # per fold: the inner split's ranker, then the one on all the training folds
    for i, fold in enumerate(folds):
        held = {q.id for q in fold}
        for qids in trained_on[2 * i:2 * i + 2]:
            assert qids and not qids & held
    assert trained_on[1] == {q.id for q in folds[1]}  # fold 0's final ranker: all of fold 1
    rounds = out.notes["boosting rounds per fold"]
    recipe = cv.load_recipe(cv.Config.recipe)
    assert len(rounds) == 2 and all(0 < r <= recipe.num_boost_round and r % cv.ROUND_STEP == 0 for r in rounds)
