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


def test_a_context_filter_decides_on_its_depth_only():
    """The same context from a run of 100 results as from its top 10 (raw BM25-like scores are normalised over the
    filter's depth); normalising over everything the run holds, as before, gives another context."""
    from rirag.retrieval.filtering import ContextFilter, context_filter
    from rirag.retrieval.fusion import min_max_normalise

    deep = {f"p{i:03d}": 30.0 - 0.05 * i * i for i in range(100)}  # raw scores, falling faster down the list
    top10 = dict(sorted(deep.items(), key=lambda kv: -kv[1])[:10])
    rule = ContextFilter("rule@10", 0.7, 0.2, depth=10)
    assert rule.select(deep) == rule.select(top10)
    assert 1 < len(rule.select(deep)) < 10
    over_all = list(filter_ranked(min_max_normalise(deep)))  # the old decision: normalised over the whole run
    assert over_all != [pid for pid, _ in rule.select(deep)]
    paper = context_filter("rirag")
    assert paper.depth == 100 and paper.search_depth(10) == 100 and context_filter(True) is paper
    top_k = context_filter(False)
    assert [pid for pid, _ in top_k.select(deep, 10)] == list(top10) and top_k.search_depth(10) == 10
    assert top_k.select(deep, 10) == top_k.select(top10, 10)


def test_an_unknown_context_filter_is_named():
    import pytest

    from rirag.errors import DataError
    from rirag.retrieval.filtering import context_filter

    with pytest.raises(DataError, match="--context-filter 'best'.*top-k.*rirag"):
        context_filter("best")
