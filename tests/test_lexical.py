"""Lexical overlap over a real BM25 index: stemmed, stopword-free terms; coverage hand-computed."""

import numpy as np
import pytest

from rirag.retrieval.bm25 import BM25Index
from rirag.retrieval.lexical import LEXICAL_FEATURES, LexicalOverlap

TEXTS = ["The fund manager must notify the regulator.", "Capital requirements apply to banks.",
         "A bank must hold capital."]


@pytest.fixture(scope="module")
def overlap():
    return LexicalOverlap(BM25Index().index(["p0", "p1", "p2"], TEXTS), TEXTS)


def test_terms_are_the_indexes_stemmed_words_and_unknown_words_drop(overlap):
    index = overlap.index
    # "Banks" and "bank" share a stem; "the", "a", "to" are stopwords; "zzz" is not in the vocabulary
    (banks,), (bank,) = index.token_ids(["Banks"]), index.token_ids(["the bank"])
    assert banks == bank and index.token_ids(["zzz"]) == [[]]
    assert len(overlap.idf) == index.vocabulary_size and all(overlap.idf > 0)


def test_coverage_hand_computed(overlap):
    # query terms: capit, bank, must (3 terms, bigrams (capit, bank), (bank, must), trigram (capit, bank, must))
    X = overlap.features("Capital of the banks: must they?", [0, 1, 2])
    f = {k: X[:, i] for i, k in enumerate(LEXICAL_FEATURES)}
    assert X.shape == (3, len(LEXICAL_FEATURES)) and X.dtype == np.float32
    # p0 shares "must"; p1 "capit", "bank"; p2 all three, in another order (bank must hold capit): one bigram
    assert f["query_coverage"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    # capit, bank and must are each in 2 of the 3 passages: equal IDF, so weighted coverage equals plain coverage
    assert f["idf_coverage"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert f["bigram_matches"] == pytest.approx([0, 0, 1]) and f["bigram_coverage"] == pytest.approx([0, 0, 0.5])
    assert f["trigram_coverage"] == pytest.approx([0, 0, 0])
    # p0 has 5 terms (fund manag must notifi regul), p1 4 (capit requir appli bank), p2 4 (bank must hold capit)
    assert f["passage_coverage"] == pytest.approx([1 / 5, 2 / 4, 3 / 4])
    # term ids give the same features as the text; an empty query gives zeros
    terms = overlap.index.token_ids(["Capital of the banks: must they?"])[0]
    assert np.array_equal(overlap.features(terms, [0, 1, 2]), X)
    assert not overlap.features("zzz", [0, 1]).any()


def test_idf_weights_rare_terms_more(overlap):
    # "fund" is in one passage, "must" in two: p0 (fund, must) vs p2 (must only) for the query "fund must"
    f = overlap.features("fund must", [0, 2])[:, LEXICAL_FEATURES.index("idf_coverage")]
    rare, common = np.log1p(2.5 / 1.5), np.log1p(1.5 / 2.5)
    assert f == pytest.approx([1.0, common / (rare + common)])


def test_texts_must_match_the_index():
    with pytest.raises(ValueError, match="2 texts for a BM25 index of 3 items"):
        LexicalOverlap(BM25Index().index(["p0", "p1", "p2"], TEXTS), TEXTS[:2])


def test_idf_is_read_from_the_index_and_only_the_candidates_are_tokenized(tmp_path):
    index = BM25Index().index(["p0", "p1", "p2"], TEXTS)
    counted = np.bincount([t for s in index.token_ids(TEXTS) for t in set(s)], minlength=index.vocabulary_size)
    assert np.array_equal(index.document_frequencies()[1:], counted[1:])  # id 0: the empty token, in no text
    index.save(tmp_path / "bm25")
    read = []
    lazy = LexicalOverlap(BM25Index.load(tmp_path / "bm25"), lambda j: read.append(j) or TEXTS[j])
    eager = LexicalOverlap(index, TEXTS)
    assert np.array_equal(lazy.idf, eager.idf)
    assert np.array_equal(lazy.features("capital banks", [2, 0]), eager.features("capital banks", [2, 0]))
    assert read == [2, 0]  # p1 was never read
    lazy.features("fund", [0])
    assert read == [2, 0]  # a passage's sets are made once
