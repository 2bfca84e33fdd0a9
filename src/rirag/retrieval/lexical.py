"""Lexical overlap between a question and passages: how much of the question's wording a passage contains.

ObliQA's questions were written from their passages, so a gold passage tends to contain the question's terms and
short phrases. BM25 weighs rare terms but saturates with repetition and ignores word order; these features measure
coverage instead, per (question, passage):

* the share of the question's distinct terms found in the passage, plain and weighted by inverse document frequency;
* the share of the question's distinct term bigrams and trigrams found in the passage, and the number of shared
  bigrams;
* the share of the passage's distinct terms found in the question.

Terms are those of a :class:`~rirag.retrieval.bm25.BM25Index` (English Snowball stems, stopwords removed), so BM25
and these features see the same words; n-grams are taken over that term sequence. The learned fusion uses them as
features (:mod:`rirag.retrieval.learned_fusion`).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

#: Feature names, in column order (the learned fusion prefixes them with ``lexical_``).
LEXICAL_FEATURES = ("query_coverage", "idf_coverage", "bigram_coverage", "bigram_matches", "trigram_coverage",
                    "passage_coverage")


def _ngrams(terms: Sequence[int], n: int) -> frozenset:
    return frozenset(zip(*(terms[i:] for i in range(n))))


class LexicalOverlap:
    """Term, bigram and trigram sets of a BM25 index's passages, made on first use of each passage, and the terms'
    IDF over all of them, read from the index itself (its score matrix holds one entry per passage a term is in):
    ranking a question's candidates tokenizes those candidates, not the corpus."""

    def __init__(self, index, texts: Sequence[str] | Callable[[int], str]):
        """``index``: a built or loaded BM25 index; ``texts``: its items' texts, in the index's order, or a function
        of an item's position giving its text (read only for the items asked about)."""
        if not callable(texts) and len(texts) != len(index.ids):
            raise ValueError(f"{len(texts)} texts for a BM25 index of {len(index.ids)} items")
        self.index = index
        self._text = texts if callable(texts) else texts.__getitem__
        self._sets: dict[int, tuple[frozenset, frozenset, frozenset]] = {}
        n = len(index.ids)
        df = np.zeros(index.vocabulary_size, dtype=np.int64)
        counts = index.document_frequencies()
        df[:len(counts)] = counts[:len(df)]
        # BM25's (Lucene) IDF, always positive
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5))

    def _of(self, j: int) -> tuple[frozenset, frozenset, frozenset]:
        """Passage ``j``'s term, bigram and trigram sets (made once)."""
        found = self._sets.get(j)
        if found is None:
            terms = self.index.token_ids([self._text(j)])[0]
            found = self._sets[j] = (frozenset(terms), _ngrams(terms, 2), _ngrams(terms, 3))
        return found

    def features(self, query: str | Sequence[int], candidates: Sequence[int]) -> np.ndarray:
        """(len(candidates), len(LEXICAL_FEATURES)) float32: the overlap of the query (a text, or its term ids from
        :meth:`~rirag.retrieval.bm25.BM25Index.token_ids`) with each candidate passage (indices into the index's
        items)."""
        terms = self.index.token_ids([query])[0] if isinstance(query, str) else list(query)
        q_terms, q_bi, q_tri = frozenset(terms), _ngrams(terms, 2), _ngrams(terms, 3)
        q_idf = {t: float(self.idf[t]) for t in q_terms}
        idf_total = sum(q_idf.values())
        out = np.zeros((len(candidates), len(LEXICAL_FEATURES)), dtype=np.float32)
        for row, j in enumerate(candidates):
            p_terms, p_bi, p_tri = self._of(j)
            shared = q_terms & p_terms
            shared_bi = len(q_bi & p_bi)
            out[row] = (len(shared) / len(q_terms) if q_terms else 0.0,
                        sum(q_idf[t] for t in shared) / idf_total if idf_total else 0.0,
                        shared_bi / len(q_bi) if q_bi else 0.0,
                        shared_bi,
                        len(q_tri & p_tri) / len(q_tri) if q_tri else 0.0,
                        len(shared) / len(p_terms) if p_terms else 0.0)
        return out
