"""Hybrid (max-normalised), RIRAG rank fusion (min-max + document BM25) and RRF on hand-built scores."""

import os

import pytest

from rirag.errors import DataError
from rirag.retrieval.fusion import (
    HybridRetriever,
    RankFusionRetriever,
    RRFRetriever,
    hybrid_fusion,
    max_normalise,
    min_max_normalise,
    rank_fusion,
    rrf,
    truncate,
)


def test_max_normalise_uses_epsilon():
    out = max_normalise({"a": 2.0, "b": 1.0}, epsilon=1.0)
    assert out == pytest.approx({"a": 2 / 3, "b": 1 / 3})


def test_hybrid_hand_computed():
    dense = {"q": {"a": 0.8, "b": 0.4}}
    bm25 = {"q": {"b": 10.0, "c": 5.0}}
    out = hybrid_fusion(dense, bm25, alpha=0.8)["q"]
    # a: 0.8*1 + 0.2*0 ; b: 0.8*0.5 + 0.2*1 ; c: 0 + 0.2*0.5
    assert out == pytest.approx({"a": 0.8, "b": 0.6, "c": 0.1}, abs=1e-8)
    assert max(out, key=out.get) == "a"


def test_hybrid_alpha_half_and_depth_cut():
    dense = {"q": {"a": 1.0, "b": 0.9, "c": 0.1}}
    bm25 = {"q": {"c": 4.0, "a": 1.0}}
    out = hybrid_fusion(dense, bm25, alpha=0.5, depth=2)["q"]
    # dense top-2: a, b (c is cut from the dense side); bm25 top-2: c, a
    assert out == pytest.approx({"a": 0.5 + 0.5 * 0.25, "b": 0.45, "c": 0.5}, abs=1e-8)
    with pytest.raises(ValueError):
        hybrid_fusion(dense, bm25, alpha=1.5)


def test_min_max_and_rank_fusion_hand_computed():
    assert min_max_normalise({"a": 3.0, "b": 1.0, "c": 2.0}) == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert min_max_normalise({"a": 5.0}) == {"a": 1.0}
    passages = {"q": {"p1": 0.9, "p2": 0.5, "p3": 0.1}}
    documents = {"q": {"D1": 10.0, "D2": 0.0, "D3": 5.0}}
    doc_of = {"p1": "D2", "p2": "D1", "p3": "D3"}
    out = rank_fusion(passages, documents, doc_of, doc_weight=0.1)["q"]
    # ŝ_p: p1 1.0, p2 0.5, p3 0.0 ; ŝ_d: D1 1.0, D2 0.0, D3 0.5
    assert out == pytest.approx({"p1": 0.9, "p2": 0.9 * 0.5 + 0.1, "p3": 0.05})


def test_rank_fusion_missing_document_side_is_zero():
    out = rank_fusion({"q": {"p1": 2.0, "p2": 1.0}}, {"q": {"D1": 3.0, "D9": 1.0}}, {"p1": "D7", "p2": "D1"},
                      doc_weight=0.5)["q"]
    assert out == pytest.approx({"p1": 0.5, "p2": 0.5})


def test_rank_fusion_names_a_passage_without_document():
    with pytest.raises(DataError, match="query 'q': passage 'p2' has no document"):
        rank_fusion({"q": {"p1": 2.0, "p2": 1.0}}, {"q": {"D1": 3.0}}, {"p1": "D1"})


def test_rrf_hand_computed():
    out = rrf([{"q": {"a": 3.0, "b": 2.0}}, {"q": {"b": 9.0, "c": 1.0}}], k=60)["q"]
    assert out == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})


class _Fixed:
    def __init__(self, run):
        self.run = run
        self.ids = ["D1", "D2"]

    def search(self, queries, k=100, show_progress=False):
        return {q: dict(sorted(self.run[q].items(), key=lambda kv: -kv[1])[:k]) for q in queries}

    def score_all(self, queries):
        import numpy as np

        return np.array([[2.0, 0.0] for _ in queries])


def test_fusion_retrievers_truncate_and_rank():
    dense = _Fixed({"q": {"a": 0.9, "b": 0.8, "c": 0.1}})
    bm25 = _Fixed({"q": {"c": 9.0, "d": 1.0}})
    hybrid = HybridRetriever(dense, bm25, alpha=0.8).search({"q": "text"}, k=2)["q"]
    assert list(hybrid) == ["a", "b"] and len(hybrid) == 2
    fused = RankFusionRetriever(dense, _Fixed({}), {"a": "D2", "b": "D1", "c": "D1"}, doc_weight=0.1)
    out = fused.search({"q": "text"}, k=3)["q"]
    # ŝ_p: a 1, b 0.875, c 0 ; ŝ_d: D1 1, D2 0
    assert out == pytest.approx({"a": 0.9, "b": 0.9 * 0.875 + 0.1, "c": 0.1})
    assert list(RRFRetriever([dense, bm25]).search({"q": "t"}, k=1)["q"]) == ["c"]


def test_rrf_retriever_scores_are_a_share_of_the_best_possible_so_the_score_filter_keeps_agreed_passages():
    from rirag.constants import FILTER_MAX_DROP, FILTER_MIN_SCORE
    from rirag.retrieval.filtering import filter_ranked

    dense = _Fixed({"q": {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.1}})
    bm25 = _Fixed({"q": {"a": 9.0, "b": 5.0, "c": 4.0, "e": 1.0}})
    out = RRFRetriever([dense, bm25], k=60).search({"q": "t"}, k=5)["q"]
    raw = rrf([dense.run, bm25.run], k=60)["q"]
    assert list(out) == list(truncate({"q": raw}, 5)["q"])  # the order is RRF's
    assert out["a"] == pytest.approx(1.0) and out["c"] == pytest.approx(raw["c"] * 61 / 2)
    assert all(0.0 < s <= 1.0 for s in out.values())
    # the filter keeps the passages both rank high (raw RRF scores, all below 0.7, kept only the first)
    assert list(filter_ranked(out, FILTER_MIN_SCORE, FILTER_MAX_DROP)) == ["a", "b", "c"]
    assert list(filter_ranked(raw, FILTER_MIN_SCORE, FILTER_MAX_DROP)) == ["a"]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("RIRAG_SLOW_TESTS"), reason="ranx.fuse JIT-compiles for ~20 s of CPU; "
                    "set RIRAG_SLOW_TESTS=1")
def test_rrf_and_max_norm_wsum_agree_with_ranx():
    from ranx import Run, fuse

    a = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0, "y": 0.5}}
    b = {"q1": {"b": 9.0, "d": 1.0, "c": 0.5}, "q2": {"y": 2.0, "z": 1.0}}
    ours = rrf([a, b], k=60)
    theirs = fuse([Run(a), Run(b)], method="rrf", params={"k": 60}).to_dict()
    for q in ours:
        assert ours[q] == pytest.approx(theirs[q])
    # ranx's max normalisation has no ε; with ε = 0 our hybrid is its weighted sum
    ours = hybrid_fusion(a, b, alpha=0.8, epsilon=0.0)
    theirs = fuse([Run(a), Run(b)], norm="max", method="wsum", params={"weights": [0.8, 0.2]}).to_dict()
    for q in ours:
        assert ours[q] == pytest.approx(theirs[q])
