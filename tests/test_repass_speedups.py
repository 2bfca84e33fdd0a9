"""The work-saving parts of the scorer never change a score: coverage short-circuit, caches, length buckets."""

import numpy as np
import pytest

from _scoring_fixtures import NLI_LABELS, FakeClassifier, all_obligations_model, tiny_bert, tiny_models
from rirag.scoring import core
from rirag.scoring.classifier import PROBABILITY_CACHE, auto_batch_rows, clear_caches
from rirag.scoring.repass import RePASsConfig, RePASsScorer

ANSWERS = ["Firms must keep records for six years. The sky is blue.", "Client money must be held separately.",
           "It is not green. Firms must report to the regulator within six days."]
PASSAGES = [["Firms must keep records for six years.", "Client money must be held separately."],
            "Firms must report to the regulator. Client money is held separately.",
            ["It is green.", "A person must notify the regulator within days."]]


@pytest.mark.parametrize("reference", [True, False])
def test_coverage_short_circuit_never_changes_a_score(reference):
    """Random probability tensors (with many values at and around the 0.7 threshold and ties in the top label):
    the round-by-round short-circuit gives exactly the coverage of the full (obligation x candidate) matrix."""
    rng = np.random.default_rng(0)
    for case in range(300):
        n_items = int(rng.integers(1, 5))
        cov_per_item, tensors = [], []
        for i in range(n_items):
            n_obl, n_cand = int(rng.integers(0, 6)), int(rng.integers(0, 6))
            logits = rng.normal(0, 2, size=(n_obl, n_cand, 3))
            probs = core.softmax(logits.reshape(-1, 3)).reshape(n_obl, n_cand, 3) if n_obl * n_cand else \
                np.zeros((n_obl, n_cand, 3))
            if n_obl * n_cand:  # exact threshold values and ties where the top label is not entailment
                mask = rng.random((n_obl, n_cand)) < 0.2
                probs[mask] = [0.0, 0.7, 0.3]
                tie = rng.random((n_obl, n_cand)) < 0.1
                probs[tie] = [0.15, 0.7 + 1e-9, 0.15 - 1e-9]
            obligations = [f"o{case}.{i}.{k}" for k in range(n_obl)]
            candidates = [f"a{case}.{i}.{j}" for j in range(n_cand)]
            cov_per_item.append((obligations, candidates, [[(a, o) for a in candidates] for o in obligations]))
            tensors.append(probs.astype(np.float32))  # what a classifier returns
        lookup = {(cov_per_item[i][1][j], cov_per_item[i][0][k]): tensors[i][k, j]
                  for i in range(n_items) for k in range(len(cov_per_item[i][0]))
                  for j in range(len(cov_per_item[i][1]))}
        fake = FakeClassifier(NLI_LABELS, lambda a, o, lookup=lookup: lookup[(a, o)])
        scorer = RePASsScorer(RePASsConfig(coverage_model="cov", mode="reference" if reference else "paper",
                                           show_progress=False))
        scorer._classifiers["coverage:cov"] = fake
        covered, tried = scorer._coverage_rounds(cov_per_item, reference)
        for i, (obligations, candidates, _) in enumerate(cov_per_item):
            full = core.coverage_hits(tensors[i], entailment_index=1, require_top_label=reference) \
                if tensors[i].size else np.zeros((len(obligations), len(candidates)), dtype=bool)
            assert covered[i] == list(full.any(axis=1)), (case, i)
            oc_full = core.obligation_coverage(full)
            oc_short = core.obligation_coverage(np.asarray(covered[i], dtype=bool).reshape(-1, 1)
                                                if candidates else np.zeros((len(obligations), 0), dtype=bool))
            assert oc_short == oc_full
            # never more inputs than the full matrix, one per obligation until covered
            assert len(tried[i]) <= len(obligations) * len(candidates)


def test_caches_are_keyed_by_model_and_mode():
    models = {**tiny_models(), "obligation_model": all_obligations_model()}  # every sentence: coverage runs
    other_cov = tiny_bert("coverage_other", NLI_LABELS, seed=7, head_scale=200.0)

    def cold(**kw):
        clear_caches()
        return RePASsScorer(**{**models, **kw}, device="cpu", show_progress=False).score(ANSWERS, PASSAGES)

    expected = {"reference": cold(mode="reference"), "paper": cold(mode="paper"),
                "other": cold(coverage_model=other_cov, nli_model=other_cov)}
    clear_caches()
    for name, kw in (("paper", dict(mode="paper")), ("reference", dict(mode="reference")),
                     ("other", dict(coverage_model=other_cov, nli_model=other_cov)), ("reference", {})):
        warm = RePASsScorer(**{**models, **kw}, device="cpu", show_progress=False).score(ANSWERS, PASSAGES)
        for k, values in expected[name]["per_item"].items():  # batch composition differs: float noise only
            assert warm["per_item"][k] == pytest.approx(values, abs=1.1e-5), (name, k)
    # the cache held separate entries per coverage encoding and per model, and was reused by the last run
    fingerprints = {key[0] for key in PROBABILITY_CACHE._data}
    assert {f[0] for f in fingerprints} == {"single", "pair", "joined", "pair-keep-second"}
    assert len({f[1] for f in fingerprints if f[0] == "pair"}) == 2
    assert PROBABILITY_CACHE.hits > 0
    assert expected["other"]["per_item"] != expected["reference"]["per_item"]


def test_warm_cache_does_no_forward_pass(monkeypatch):
    models = tiny_models()
    clear_caches()
    scorer = RePASsScorer(**models, device="cpu", show_progress=False)
    first = scorer.score(ANSWERS, PASSAGES)
    calls = []
    for clf in scorer._classifiers.values():
        original = clf.model.forward
        monkeypatch.setattr(clf.model, "forward", lambda *a, _o=original, **k: calls.append(1) or _o(*a, **k))
    assert scorer.score(ANSWERS, PASSAGES) == first
    assert calls == []


@pytest.mark.parametrize("batch_size", [1, 3, "auto"])
def test_batch_size_and_buckets_do_not_change_scores(batch_size):
    from rirag.scoring.reference_impl import ReferenceRePASs

    clear_caches()
    models = tiny_models()
    ours = RePASsScorer(**models, device="cpu", show_progress=False, batch_size=batch_size).score(ANSWERS, PASSAGES)
    ref = ReferenceRePASs(**models, device="cpu")
    for i, (a, p) in enumerate(zip(ANSWERS, PASSAGES)):
        expected = ref.score_item(a, p)
        assert {k: ours["per_item"][k][i] for k in expected} == pytest.approx(expected, abs=1e-5)


def test_auto_batch_rule():
    assert auto_batch_rows(16, "cpu") == 64 and auto_batch_rows(128, "cpu") == 8 and auto_batch_rows(5000, "cpu") == 1
    assert auto_batch_rows(128, "cuda:0") == 64
    with pytest.raises(ValueError, match="batch_size"):
        RePASsConfig(batch_size=0)
    assert RePASsConfig(batch_size="16").batch_size == 16


def test_worker_processes_give_the_reference_scores(monkeypatch):
    """workers=2 sends the forward passes to two spawned processes (forced here: the inputs are tiny) and the
    scores stay those of the reference loop; the classifier records the work wherever it ran."""
    from rirag.scoring import workers
    from rirag.scoring.reference_impl import ReferenceRePASs

    clear_caches()
    monkeypatch.setattr(workers, "POOL_MIN_TOKENS", 0)
    models = tiny_models()
    scorer = RePASsScorer(**models, device="cpu", show_progress=False, workers=2)
    sent = []
    original = workers.submit
    monkeypatch.setattr(workers, "submit", lambda *a, **k: sent.append(a[0]) or original(*a, **k))
    try:
        ours = scorer.score(ANSWERS, PASSAGES)
    finally:
        workers.shutdown_pools()
    # every model the scorer used ran in the pool (coverage too, when an answer had obligation candidates)
    assert set(sent) == {c.name for c in scorer._classifiers.values()} and len(set(sent)) >= 2
    assert all(c.workers == 2 and c.work["tokens"] > 0 for c in scorer._classifiers.values())
    ref = ReferenceRePASs(**models, device="cpu")
    for i, (a, p) in enumerate(zip(ANSWERS, PASSAGES)):
        expected = ref.score_item(a, p)
        assert {k: ours["per_item"][k][i] for k in expected} == pytest.approx(expected, abs=1e-5)


def test_workers_option():
    from rirag.scoring.workers import balanced_tasks, resolve_workers

    assert RePASsConfig(workers="2").workers == 2 and RePASsConfig(workers="auto").workers == "auto"
    for bad in (0, -1, "many", True):
        with pytest.raises(ValueError, match="workers"):
            RePASsConfig(workers=bad)
    from rirag.scoring.workers import MAX_AUTO_WORKERS

    assert resolve_workers("auto", "cuda:0") == 1 and resolve_workers(3, "mps") == 1 and resolve_workers(3, "cpu") == 3
    assert 1 <= resolve_workers("auto", "cpu") <= MAX_AUTO_WORKERS
    tasks = balanced_tasks([10, 9, 1, 1, 1], 2)
    assert sorted(i for t in tasks for i in t) == [0, 1, 2, 3, 4]
    assert sorted(sum([10, 9, 1, 1, 1][i] for i in t) for t in tasks) == [11, 11]


def test_int8_fast_mode_is_opt_in_and_never_shares_cache_entries():
    """precision='int8' quantises the Linear layers of a copy (the float32 model is untouched), scores through its
    own cache entries, and is refused on CUDA; the default stays float32."""
    import torch

    from rirag.scoring.models import prepared_model

    assert RePASsConfig().precision == "float32"
    with pytest.raises(ValueError, match="precision"):
        RePASsConfig(precision="fp16")
    clear_caches()
    models = tiny_models()
    exact = RePASsScorer(**models, device="cpu", show_progress=False)
    fast = RePASsScorer(**models, device="cpu", show_progress=False, precision="int8")
    first = exact.score(ANSWERS, PASSAGES)
    entries = len(PROBABILITY_CACHE)
    out = fast.score(ANSWERS, PASSAGES)
    assert len(PROBABILITY_CACHE) == 2 * entries  # nothing reused across precisions
    assert out["n_scored"] == first["n_scored"] and all(
        0.0 <= v <= 1.0 for v in out["per_item"]["repass"] if v is not None)
    q = prepared_model(models["nli_model"], "cpu", "int8")
    f = prepared_model(models["nli_model"], "cpu", "float32")
    assert any("quantized" in type(m).__module__ for m in q.modules())
    assert not any("quantized" in type(m).__module__ for m in f.modules())
    assert all(isinstance(m, torch.nn.Module) for m in (q, f))
    with pytest.raises(ValueError, match="CPU only"):
        prepared_model(models["nli_model"], "cuda", "int8")


def test_a_broken_pool_falls_back_to_this_process(monkeypatch):
    """When a worker dies mid-call the pool is dropped and the batches are finished in-process: same scores."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from rirag.scoring import workers

    models = tiny_models()
    clear_caches()
    expected = RePASsScorer(**models, device="cpu", show_progress=False).score(ANSWERS, PASSAGES)
    clear_caches()
    dropped = []

    def broken_submit(name, precision, n, batches, costs):
        future = Future()
        future.set_exception(BrokenProcessPool("a worker was killed"))
        return [(list(range(len(batches))), future)]

    monkeypatch.setattr(workers, "POOL_MIN_TOKENS", 0)
    monkeypatch.setattr(workers, "submit", broken_submit)
    monkeypatch.setattr(workers, "drop_pool", dropped.append)
    out = RePASsScorer(**models, device="cpu", show_progress=False, workers=2).score(ANSWERS, PASSAGES)
    assert out["per_item"] == expected["per_item"]
    assert dropped and set(dropped) == {2}
