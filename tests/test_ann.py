"""The faiss HNSW index (rirag.retrieval.ann) and the dense retriever's search option: exact, ann, auto."""

import numpy as np
import pytest

pytest.importorskip("faiss")

from rirag.data.obliqa import load_obliqa  # noqa: E402
from rirag.errors import DataError, UsageError  # noqa: E402
from rirag.retrieval import dense as dense_module  # noqa: E402
from rirag.retrieval.ann import ANNIndex, index_suffix  # noqa: E402
from rirag.retrieval.dense import DenseRetriever, top_k  # noqa: E402
from rirag.retrieval.registry import RetrieverSpec, build_retriever, option_pair  # noqa: E402
from tiny_encoder import tiny_sentence_transformer  # noqa: E402


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return str(tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st"))


@pytest.fixture
def tiny(tiny_data_dir):
    return load_obliqa(tiny_data_dir)


QUERIES = {"q1": "how long must capital adequacy records be kept", "q2": "client money report",
           "q3": "anti money laundering sanctions screening"}


def test_ann_top_k_equals_exact_on_a_small_recoverable_case(tmp_path):
    emb, queries = _unit(300, 16, 0), _unit(20, 16, 1)
    exact_idx, exact_vals = top_k(queries @ emb.T, 10)
    index = ANNIndex.build(emb, m=8, ef_construction=64, ef_search=300)  # the whole graph is visited: exact
    idx, vals = index.search(queries, 10)
    assert idx.tolist() == exact_idx.tolist()
    assert np.allclose(vals, exact_vals, atol=1e-5)
    assert (np.diff(vals, axis=1) <= 0).all()
    path = index.save(tmp_path / "x.faiss")
    assert not list(tmp_path.glob(".*.tmp"))
    loaded = ANNIndex.load(path, ef_search=300)
    assert len(loaded) == 300 and loaded.search(queries, 10)[0].tolist() == exact_idx.tolist()
    assert index.search(queries, 1000)[0].shape == (20, 300)  # k above the corpus: every row


def test_ann_ties_rank_by_lower_index():
    emb = _unit(50, 8, 2)
    emb[[7, 30, 41]] = emb[3]  # four identical rows: equal scores
    idx, vals = ANNIndex.build(emb, m=4, ef_search=64).search(emb[3:4], 4)
    assert idx.tolist() == [[3, 7, 30, 41]]


def test_ann_bad_input_is_refused(tmp_path):
    with pytest.raises(DataError, match="non-empty 2-d matrix"):
        ANNIndex.build(np.zeros((0, 4), dtype=np.float32))
    index = ANNIndex.build(_unit(10, 4, 0))
    with pytest.raises(DataError, match="3 dimensions, the index has 4"):
        index.search(_unit(2, 3, 0), 5)
    with pytest.raises(DataError, match="k must be >= 1"):
        index.search(_unit(2, 4, 0), 0)
    with pytest.raises(DataError, match="does not exist"):
        ANNIndex.load(tmp_path / "none.faiss")


def test_auto_on_a_small_corpus_is_exact_search_exactly(tiny, tiny_model, tmp_path):
    auto = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path)
    exact = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path, search="exact")
    assert not auto.uses_ann and len(tiny.corpus) < dense_module.ANN_MIN_PASSAGES
    run = auto.search(QUERIES, k=5)
    assert run == exact.search(QUERIES, k=5)  # the same ids, order and float scores
    assert not auto.ann_path().exists()  # no index built below the threshold


def test_ann_search_equals_exact_on_the_tiny_corpus(tiny, tiny_model, tmp_path):
    # every passage (the tiny corpus holds duplicated passages: equal scores, which faiss and numpy may compute a
    # last bit apart, so the order is compared by score rounded to 1e-5, then id)
    k = len(tiny.corpus)
    exact = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path, search="exact").search(QUERIES, k=k)
    ann = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path, search="ann")
    run = ann.search(QUERIES, k=k)
    assert ann.uses_ann and ann.ann_path().exists()
    assert ann.ann_path().name.endswith(index_suffix()) and ann.ann_path().stem.startswith(ann.cache_path().stem)

    def ranked(r):
        return sorted(r.items(), key=lambda kv: (-round(kv[1], 5), kv[0]))

    for qid in QUERIES:
        assert len(run[qid]) == k
        assert [p for p, _ in ranked(run[qid])] == [p for p, _ in ranked(exact[qid])]
        assert [run[qid][p] for p in exact[qid]] == pytest.approx(list(exact[qid].values()), abs=1e-5)
    again = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path, search="ann")
    assert again.ann_index().index is not ann.ann_index().index  # loaded from the cached file
    assert ranked(again.search(QUERIES, k=k)["q1"])[0][0] == ranked(exact["q1"])[0][0]


def test_auto_switches_to_ann_at_the_threshold(tiny, tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(dense_module, "ANN_MIN_PASSAGES", len(tiny.corpus))
    assert DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path).uses_ann
    monkeypatch.setattr(dense_module, "ANN_MIN_PASSAGES", len(tiny.corpus) + 1)
    assert not DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path).uses_ann


def test_bad_search_value_is_refused(tiny, tiny_model):
    with pytest.raises(UsageError, match="dense search: must be one of auto, exact, ann, got 'fast'"):
        DenseRetriever(tiny.corpus, tiny_model, search="fast")
    with pytest.raises(UsageError, match="--option search: must be one of auto, exact, ann, got 'hnsw'"):
        option_pair("search=hnsw")
    assert option_pair("search=ann") == ("search", "ann")
    with pytest.raises(UsageError, match="must be one of auto, exact, ann"):
        build_retriever(tiny.corpus, RetrieverSpec("dense", tiny_model, {"search": "approximate"}))
