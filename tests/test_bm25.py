"""BM25 passage and document indexes: ranking, persistence, truncation, empty queries."""

from __future__ import annotations

import json

import pytest

from rirag.data.obliqa import load_obliqa
from rirag.data.splits import qrels_of, split_questions
from rirag.errors import DataError
from rirag.retrieval.bm25 import IDS_FILE, BM25Config, BM25Index, document_index, passage_index
from rirag.retrieval.metrics import evaluate_run


def test_ranking_prefers_matching_passage(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    index = passage_index(o.corpus)
    assert not set(index.ids) & set(o.empty_ids)
    run = index.search({"q": "market abuse records kept years"}, k=3)
    assert next(iter(sorted(run["q"].items(), key=lambda kv: -kv[1])))[0] == "d4-p1"
    # stemming: "reporting" finds "report"
    run = index.search({"q": "reporting"}, k=50)
    assert {"d1-p2", "d1-dup"} <= set(run["q"])


def test_save_load_gives_same_results(tiny_data_dir, tmp_path):
    o = load_obliqa(tiny_data_dir)
    index = passage_index(o.corpus, BM25Config(k1=1.2, b=0.5))
    queries = {q.id: q.text for q in o.splits["dev"]}
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.config.k1 == 1.2 and loaded.ids == index.ids
    assert loaded.search(queries, k=5) == index.search(queries, k=5)
    with pytest.raises(DataError, match="not a saved rirag BM25 index"):
        BM25Index.load(tmp_path)


def test_saved_ids_are_read_unless_the_caller_gives_as_many_and_old_folders_still_load(tiny_data_dir, tmp_path):
    o = load_obliqa(tiny_data_dir)
    index = passage_index(o.corpus)
    index.save(tmp_path / "idx")
    other = [f"x{i}" for i in range(len(index.ids))]
    assert BM25Index.load(tmp_path / "idx", ids=other).ids == other  # the caller's key vouches for them
    assert BM25Index.load(tmp_path / "idx", ids=other[:-1]).ids == index.ids  # a count that differs: read
    meta = json.loads((tmp_path / "idx" / "rirag_bm25.json").read_text())
    (tmp_path / "idx" / "rirag_bm25.json").write_text(json.dumps({"config": meta["config"], "ids": index.ids}))
    (tmp_path / "idx" / IDS_FILE).unlink()  # the layout before the ids had a file of their own
    assert BM25Index.load(tmp_path / "idx", ids=other).ids == index.ids


def test_a_cached_index_is_built_once_then_loaded_and_searches_the_same(tiny_data_dir, tmp_path, monkeypatch):
    o = load_obliqa(tiny_data_dir)
    queries = {q.id: q.text for q in o.splits["dev"]}
    built = passage_index(o.corpus, cache=tmp_path)
    docs = document_index(o.corpus, cache=tmp_path)
    assert len(list(tmp_path.glob("passages-*"))) == 1 and len(list(tmp_path.glob("documents-*"))) == 1
    monkeypatch.setattr(BM25Index, "index", lambda *a, **k: pytest.fail("should be loaded from the cache"))
    loaded = passage_index(o.corpus, cache=tmp_path)
    assert loaded.ids == built.ids and loaded.search(queries, k=5) == built.search(queries, k=5)
    assert (document_index(o.corpus, cache=tmp_path).score_all(queries) == docs.score_all(queries)).all()
    monkeypatch.undo()
    other = passage_index(o.corpus, BM25Config(k1=1.2), cache=tmp_path)  # other settings: another index
    assert len(list(tmp_path.glob("passages-*"))) == 2 and other.config.k1 == 1.2


def test_truncation_changes_scores(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    full = passage_index(o.corpus)
    short = passage_index(o.corpus, BM25Config(query_max_tokens=1))
    q = {"q": "regulator report capital adequacy"}
    assert full.search(q)["q"] != short.search(q)["q"]
    # with one query token ("regul") only passages mentioning the Regulator match; capital adequacy is cut off
    hits = short.search(q)["q"]
    assert hits and all("Regulator" in o.corpus[pid].text for pid in hits)
    assert "d1-p1" in full.search(q)["q"] and "d1-p1" not in hits


def test_document_index_scores_documents(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    docs = document_index(o.corpus)
    assert docs.ids == [str(d) for d in range(1, 7)]
    scores = docs.score_all({"q": "sanctions screening virtual assets fund passporting"})
    assert scores.shape == (1, 6)
    assert scores[0].argmax() == 5  # document 6: fund passporting


def test_empty_query_is_an_error_and_stopword_query_is_empty(tiny_data_dir):
    index = passage_index(load_obliqa(tiny_data_dir).corpus)
    with pytest.raises(DataError, match="query q7: empty query text"):
        index.search({"q7": "   "})
    assert index.search({"q": "the of and"}) == {"q": {}}


def test_bm25_reference_numbers_on_original_test(real_obliqa):
    questions = split_questions(real_obliqa, "original-test")
    run = passage_index(real_obliqa.corpus).search({q.id: q.text for q in questions}, k=10)
    m = evaluate_run(qrels_of(questions), run)
    assert m["recall@10"] >= 0.76 and m["map@10"] >= 0.60


def test_bm25s_is_imported_without_numba_or_scipy_and_both_still_import_after():
    """bm25s's optional numba and scipy backends are never used; their imports (0.3 s of `rirag ask`) are
    skipped."""
    import subprocess
    import sys

    code = ("import sys\nfrom rirag.retrieval.bm25 import _bm25s\nbm25s = _bm25s()\n"
            "assert 'numba' not in sys.modules and not bm25s.NUMBA_AVAILABLE\n"
            "assert 'scipy' not in sys.modules and not bm25s.SCIPY_AVAILABLE\n"
            "import numba, scipy.sparse\nprint(numba.njit is not None and scipy.sparse.csr_matrix is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
