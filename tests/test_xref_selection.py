"""Cross-reference selection (rirag.retrieval.xref_selection, ``--option xref_select=on|auto|off``): passages linked
to the top of a run enter the ranking, and a logistic model over their features decides; the default retriever
runs it where the corpus folder has its written graph."""

from __future__ import annotations

import numpy as np
import pytest

from rirag.cli import main
from rirag.data.obliqa import load_obliqa
from rirag.errors import DataError, UsageError
from rirag.retrieval.defaults import default_spec
from rirag.retrieval.registry import RetrieverSpec, build_retriever, retriever_options
from rirag.retrieval.xref_selection import (
    FEATURES,
    SHIPPED_SELECTOR,
    SelectorModel,
    XrefSelection,
    candidate_features,
    select,
)
from test_xref_expansion import QUESTION, FixedRun, write_corpus


class Links:
    """A stand-in graph: ``refs[source]`` are the targets of one reference each."""

    def __init__(self, refs: dict[str, list[tuple[str, ...]]]):
        from rirag.xref.graph import Link

        self.out = {s: [Link("x", 0, 1, t) for t in targets] for s, targets in refs.items()}

    def links(self, pid):
        return self.out.get(pid, [])

    def referrers(self, pid):
        return [(s, link) for s, links in self.out.items() for link in links if pid in link.targets]


class P:
    def __init__(self, text, document_id=1):
        self.text, self.document_id = text, document_id


CORPUS = {"a": P("capital requirements breach notify"), "b": P("notice in writing five days"),
          "c": P("records of complaints", 2), "d": P("unrelated text about fees", 3), "e": P("the lead rule", 1)}


def column(X, name):
    return X[:, FEATURES.index(name)]


def test_linked_passages_join_the_candidates_with_their_link_as_features():
    graph = Links({"a": [("b",), ("c", "d", "e", "x1", "x2", "x3")], "e": [("a",)]})
    ids, X = candidate_features("notify capital breach", {"a": 3.0, "d": 1.0}, graph, CORPUS, pool=2, sources=1,
                                max_targets=5)
    # b: referred to by the top passage; e: refers to it; the six-target reference is not followed
    assert ids == ["a", "d", "b", "e"]
    assert list(column(X, "in_base")) == [1, 1, 0, 0]
    assert list(column(X, "refers_from")) == [0, 0, 1, 0]
    assert list(column(X, "refers_to")) == [0, 0, 0, 1]
    assert column(X, "same_document")[3] == 1 and column(X, "same_document")[2] == 1
    assert column(X, "query_coverage")[0] == 1.0 and column(X, "query_coverage")[2] == 0.0
    assert column(X, "base_score")[0] == 1.0 and column(X, "base_score")[1] == 0.0


def test_select_ranks_candidates_by_the_model_then_the_rest_of_the_run_in_its_order():
    run = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0}
    out = select(run, ["b", "x"], np.array([0.5, 2.0]), k=4)
    assert list(out) == ["x", "b", "a", "c"]


def model_trusting_links() -> SelectorModel:
    weights = [0.0] * len(FEATURES)
    weights[FEATURES.index("in_base")] = 1.0
    weights[FEATURES.index("refers_from")] = 3.0
    n = len(FEATURES)
    return SelectorModel(list(FEATURES), [0.0] * n, [1.0] * n, weights, 0.0)


def test_a_model_that_trusts_links_brings_the_referred_rule_into_the_top():
    base = FixedRun({"q": {"a": 3.0, "d": 2.0, "c": 1.0}})
    graph = Links({"a": [("b",)]})
    run = XrefSelection(base, graph, model_trusting_links(), CORPUS).search({"q": "capital breach"}, k=2)["q"]
    assert list(run) == ["b", "a"]  # b, absent from the base run, ranks first: the model says so


def test_the_model_round_trips_and_a_foreign_file_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, len(FEATURES))).astype(np.float32)
    y = (X[:, 3] > 0).astype(float)
    model = SelectorModel.fit(X, y, c=1.0, seed=0)
    assert model.weights[3] == max(model.weights)  # the informative column carries the weight
    model.save(tmp_path / "m.json")
    again = SelectorModel.load(tmp_path / "m.json")
    assert np.allclose(again.score(X), model.score(X))
    (tmp_path / "bad.json").write_text('{"features": ["x"], "means": [0], "scales": [1], "weights": [1], '
                                       '"bias": 0}')
    with pytest.raises(DataError, match="bad.json.*train it again"):
        SelectorModel.load(tmp_path / "bad.json")


def test_the_shipped_selector_loads_and_weighs_a_link_up():
    model = SelectorModel.load(SHIPPED_SELECTOR)
    assert model.weights[FEATURES.index("refers_from")] > 0
    assert model.trained_on and "ukfin" in model.trained_on["questions"]


@pytest.mark.parametrize("options, words", [
    ({"xref_select": "yes"}, "one of off, on, auto"),
    ({"xref_select": "on", "xref_expand": 2}, "two ways"),
    ({"xref_selector": "m.json"}, "selection is off"),
])
def test_bad_selection_options_are_usage_errors(options, words):
    with pytest.raises(UsageError, match=words):
        retriever_options("bm25", options)


def test_auto_selects_only_where_the_corpus_has_its_graph(tmp_path):
    root, _ = write_corpus(tmp_path / "corpus")
    corpus = load_obliqa(root).corpus
    model_trusting_links().save(tmp_path / "selector.json")
    spec = RetrieverSpec("bm25", options={"xref_select": "auto", "xref_selector": str(tmp_path / "selector.json")})
    assert not isinstance(build_retriever(corpus, spec, root=root), XrefSelection)
    assert main(["data", "xref", "--data", str(root)]) == 0
    on = build_retriever(corpus, spec, root=root)
    assert isinstance(on, XrefSelection) and on.model.weights == model_trusting_links().weights
    run = on.search({"q1": QUESTION}, k=3)["q1"]
    assert "p-952" in run  # 9.5.1 refers to it; BM25 alone does not find it (test_xref_expansion)
    shipped = build_retriever(corpus, RetrieverSpec("bm25", options={"xref_select": "on"}), root=root)
    assert shipped.model.weights == SelectorModel.load(SHIPPED_SELECTOR).weights


def test_on_without_any_graph_or_documents_is_a_clear_error(tmp_path):
    root, _ = write_corpus(tmp_path / "corpus")
    corpus = load_obliqa(root).corpus
    with pytest.raises(DataError, match="xref_expand|cross-reference"):
        build_retriever(corpus, RetrieverSpec("bm25", options={"xref_select": "on"}), root=tmp_path / "nowhere")


def test_the_default_spec_selects_where_a_graph_exists():
    assert default_spec()[0].options["xref_select"] == "auto"
