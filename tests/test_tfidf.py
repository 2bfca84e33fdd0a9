"""The TF-IDF retriever (rirag.retrieval.tfidf), built by name from the retriever table like any other."""

from __future__ import annotations

import pytest

from rirag.data.obliqa import Passage
from rirag.errors import DataError, UsageError
from rirag.retrieval.registry import RetrieverSpec, build_retriever, retriever_options

TEXTS = {
    "p1": "The firm must keep records of its capital and report them to the Regulator.",
    "p2": "The firm must report its capital position to the Regulator every quarter.",
    "p3": "The firm must notify the Regulator of any custodian it appoints for client assets.",
    "p4": "Client money must be kept in a segregated account and reported to the Regulator.",
    "p5": "",
}
CORPUS = {pid: Passage(pid, 1, str(i), text) for i, (pid, text) in enumerate(TEXTS.items(), 1)}
QUERY = {"q": "What must the firm do about a custodian?"}


def test_the_passage_sharing_the_rare_term_ranks_first():
    run = build_retriever(CORPUS, RetrieverSpec("tfidf")).search(QUERY, k=3)["q"]
    # "custodian" is in p3 only; the question's other words are in p1 and p2 as well
    assert list(run)[0] == "p3" and run["p3"] > 1.2 * max(v for pid, v in run.items() if pid != "p3")
    assert len(run) == 3 and "p5" not in run  # the empty passage is not indexed
    assert list(run.values()) == sorted(run.values(), reverse=True) and all(0.0 < s <= 1.0 for s in run.values())


def test_options_are_typed_by_the_table_and_reach_the_vectorizer():
    assert retriever_options("tfidf", {"ngram_max": "2", "sublinear_tf": "false", "min_df": "2"}) == {
        "ngram_max": 2, "sublinear_tf": False, "min_df": 2}
    for bad in ({"ngram_max": "0"}, {"sublinear_tf": "maybe"}, {"min_df": "1.5"}, {"k1": "1.2"}):
        with pytest.raises(UsageError):
            retriever_options("tfidf", bad)
    # min_df=2 drops "custodian" (one passage): the option reaches the vectorizer, and p3 loses what set it apart
    plain = build_retriever(CORPUS, RetrieverSpec("tfidf"))
    pruned = build_retriever(CORPUS, RetrieverSpec("tfidf", None, {"min_df": "2"}))
    assert "custodian" in plain.vectorizer.vocabulary_ and "custodian" not in pruned.vectorizer.vocabulary_
    first, second = (list(r.search(QUERY, k=2)["q"].values()) for r in (plain, pruned))
    assert first[0] / first[1] > second[0] / second[1]
    bigrams = build_retriever(CORPUS, RetrieverSpec("tfidf", None, {"ngram_max": "2"}))
    assert any(" " in term for term in bigrams.vectorizer.get_feature_names_out())
    with pytest.raises(DataError, match="min_df 99"):
        build_retriever(CORPUS, RetrieverSpec("tfidf", None, {"min_df": "99"}))
