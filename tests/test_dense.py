"""Dense retrieval with a tiny sentence-transformers model: exact search, the embedding cache, clear errors."""

from pathlib import Path

import numpy as np
import pytest

from rirag.data.obliqa import load_obliqa
from rirag.errors import DataError
from rirag.retrieval.dense import DenseRetriever, corpus_fingerprint, top_k
from rirag.retrieval.encoder import ModelLoadError, load_encoder
from rirag.retrieval.registry import RETRIEVERS, RetrieverSpec, build_retriever
from tiny_encoder import tiny_sentence_transformer


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return str(tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st"))


@pytest.fixture
def tiny(tiny_data_dir):
    return load_obliqa(tiny_data_dir)


def test_top_k_sorted_with_ties_by_index():
    scores = np.array([[0.1, 0.9, 0.5, 0.9], [1.0, 0.0, 0.2, 0.3]])
    idx, vals = top_k(scores, 3)
    assert idx.tolist() == [[1, 3, 2], [0, 3, 2]]
    assert vals.tolist() == [[0.9, 0.9, 0.5], [1.0, 0.3, 0.2]]
    assert top_k(scores, 10)[0].shape == (2, 4)


def test_search_is_exact_matrix_product_with_prefixes(tiny, tiny_model, tmp_path):
    r = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path)
    queries = {"q1": "how long must capital adequacy records be kept", "q2": "client money report"}
    run = r.search(queries, k=5)
    p = r.passage_model.encode([f"passage: {tiny.corpus[i].text}" for i in r.ids], normalize_embeddings=True)
    q = r.model.encode([f"query: {t}" for t in queries.values()], normalize_embeddings=True)
    expected = q @ p.T
    for row, qid in enumerate(queries):
        assert len(run[qid]) == 5
        best = [r.ids[j] for j in np.argsort(-expected[row], kind="stable")[:5]]
        assert list(run[qid]) == best
        assert run[qid][best[0]] == pytest.approx(float(expected[row].max()), abs=1e-5)


def test_cache_is_written_reused_and_keyed_by_model_and_corpus(tiny, tiny_model, tmp_path, monkeypatch):
    r = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path)
    emb = r.passage_embeddings(show_progress=False)
    path = r.cache_path()
    assert path.exists() and np.allclose(np.load(path), emb)
    r2 = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path)
    monkeypatch.setattr(DenseRetriever, "encode", lambda *a, **k: pytest.fail("should come from the cache"))
    assert np.array_equal(r2.passage_embeddings(), emb)
    monkeypatch.undo()
    (Path(tiny_model) / "selection.json").write_text("{}")  # a training by-product: same model, same key
    assert DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path).cache_path() == path
    fewer = dict(list(tiny.corpus.items())[:-1])
    assert DenseRetriever(fewer, tiny_model, cache=tmp_path).cache_path() != path
    assert DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path, passage_prefix="").cache_path() != path
    other = tiny_sentence_transformer(tmp_path / "other-st", seed=1)
    assert DenseRetriever(tiny.corpus, str(other), cache=tmp_path).cache_path().name != path.name
    ids = list(tiny.corpus)
    assert corpus_fingerprint(ids, [tiny.corpus[i].text for i in ids]) != corpus_fingerprint(ids[::-1], [
        tiny.corpus[i].text for i in ids[::-1]])


def test_wrong_or_missing_model_gives_clear_error(tiny, tmp_path):
    with pytest.raises(ModelLoadError, match="not found"):
        DenseRetriever(tiny.corpus, "./no/such/model")
    not_model = tmp_path / "empty"
    not_model.mkdir()
    with pytest.raises(ModelLoadError, match="not a model folder"):
        load_encoder(str(not_model))
    with pytest.raises(DataError, match="needs a dense model"):
        build_retriever(tiny.corpus, RetrieverSpec("dense"))
    with pytest.raises(DataError, match="unknown option"):
        build_retriever(tiny.corpus, RetrieverSpec("hybrid", "x", {"alfa": 0.5}))


def test_registry_builds_every_retriever_and_keeps_bm25(tiny, tiny_model, monkeypatch, tmp_path):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path))
    assert {"bm25", "dense", "hybrid", "rank-fusion", "rrf", "rerank"} <= set(RETRIEVERS)
    queries = {"q": "capital adequacy records"}
    for name in ("bm25", "dense", "hybrid", "rank-fusion", "rrf"):
        run = build_retriever(tiny.corpus, RetrieverSpec(name, tiny_model if name != "bm25" else None)).search(
            queries, k=3)
        assert 1 <= len(run["q"]) <= 3, name
        assert set(run["q"]) <= set(tiny.corpus)
    hybrid = build_retriever(tiny.corpus, RetrieverSpec("hybrid", tiny_model, {"alpha": 0.0})).search(queries, k=3)
    bm25 = build_retriever(tiny.corpus, RetrieverSpec("bm25")).search(queries, k=3)
    assert list(hybrid["q"]) == list(bm25["q"])  # α = 0: BM25 order


def test_cli_retrieve_dense(tiny_data_dir, tiny_model, tmp_path, monkeypatch):
    from rirag.cli import main
    from rirag.data.runs import read_trec

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run.trec"
    assert main(["retrieve", "--retriever", "hybrid", "--model", tiny_model, "--data", str(tiny_data_dir),
                 "--split", "original-dev", "--out", str(out), "--k", "4"]) == 0
    run = read_trec(out)
    assert run and all(len(r) == 4 for r in run.values())
    assert main(["retrieve", "--retriever", "dense", "--model", str(tmp_path / "missing"), "--data",
                 str(tiny_data_dir), "--split", "original-dev", "--out", str(tmp_path / "x.trec")]) == 2
    assert not (tmp_path / "x.trec").exists()


def test_a_corpus_embedding_shows_a_labelled_bar_and_equals_the_plain_one(tiny, tiny_model, tmp_path, capsys):
    r = DenseRetriever(tiny.corpus, tiny_model, cache=tmp_path, batch_size=1)  # 8 texts per step of the bar
    emb = r.passage_embeddings(show_progress=True)
    err = capsys.readouterr().err
    assert f"embedding {len(r.ids)} passages (tiny-st, cached after)" in err and f"{len(r.ids)}/{len(r.ids)}" in err
    assert np.allclose(emb, r.encode(r.texts, r.passage_prefix), atol=1e-5)
    assert r.cache_path().exists()


def test_a_corpus_is_embedded_in_small_batches_on_a_cpu_and_large_ones_on_a_gpu(tiny, tiny_model):
    from types import SimpleNamespace

    from rirag.constants import CORPUS_BATCH_CPU, CORPUS_BATCH_GPU

    r = DenseRetriever(tiny.corpus, tiny_model)
    seen = []

    class Model(SimpleNamespace):
        def encode(self, texts, batch_size, **_):
            seen.append(batch_size)
            return np.zeros((len(texts), 2), dtype=np.float32)

    for device in ("cpu", "cuda:0"):
        r.encode(["a", "b"], r.passage_prefix, model=Model(device=device))
    assert seen == [CORPUS_BATCH_CPU, CORPUS_BATCH_GPU] and CORPUS_BATCH_CPU < CORPUS_BATCH_GPU
    r.batch_size = 3  # given (--option batch_size=3): used on either
    r.encode(["a"], r.passage_prefix, model=Model(device="cuda:0"))
    assert seen[-1] == 3


def test_without_onnx_runtime_the_query_and_corpus_encoders_are_one_model(tiny_model, monkeypatch):
    from rirag.retrieval.encoder import _shared_encoder, shared_encoder

    monkeypatch.setenv("RIRAG_ONNX", "off")
    _shared_encoder.cache_clear()
    assert shared_encoder(tiny_model, "cpu") is shared_encoder(tiny_model, "cpu", onnx=False)
    monkeypatch.setenv("RIRAG_ONNX", "auto")
    _shared_encoder.cache_clear()
    assert type(shared_encoder(tiny_model, "cpu")).__name__ == "OnnxPlainEncoder"
    assert type(shared_encoder(tiny_model, "cpu", onnx=False)).__name__ == "PlainEncoder"
    _shared_encoder.cache_clear()
