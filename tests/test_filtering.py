"""Score filtering: min score 0.7, cut at the first consecutive drop > 0.2, at least one passage kept."""

from rirag.retrieval.filtering import filter_ranked, filter_run


def test_min_score_and_drop_cut():
    scores = {"a": 1.0, "b": 0.95, "c": 0.9, "d": 0.65, "e": 0.6}
    # drops: 0.05, 0.05, 0.25 (cut before d); d, e are also below 0.7
    assert list(filter_ranked(scores)) == ["a", "b", "c"]


def test_drop_cut_above_min_score():
    scores = {"a": 1.0, "b": 0.98, "c": 0.75, "d": 0.74}
    # b -> c drops 0.23 > 0.2: c and d are cut although both score >= 0.7
    assert list(filter_ranked(scores)) == ["a", "b"]


def test_drop_of_exactly_threshold_is_kept():
    assert list(filter_ranked({"a": 1.0, "b": 0.8, "c": 0.75}, max_drop=0.25)) == ["a", "b", "c"]
    assert list(filter_ranked({"a": 0.9, "b": 0.7})) == ["a", "b"]  # a drop of 0.2 is not more than 0.2


def test_always_keeps_one_and_respects_k_and_ties():
    assert filter_ranked({"x": 0.3, "y": 0.2}) == {"x": 0.3}
    assert filter_ranked({}) == {}
    assert list(filter_ranked({"b": 0.9, "a": 0.9, "c": 0.9}, k=2)) == ["a", "b"]


def test_filter_run_does_not_mutate_input():
    run = {"q1": {"a": 1.0, "b": 0.1}, "q2": {"c": 0.5}}
    copy = {q: dict(r) for q, r in run.items()}
    assert filter_run(run) == {"q1": {"a": 1.0}, "q2": {"c": 0.5}}
    assert run == copy
