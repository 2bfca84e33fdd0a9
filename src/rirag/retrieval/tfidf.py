"""TF-IDF retrieval: scikit-learn's ``TfidfVectorizer`` fitted on the corpus's passages, each question ranked against
them by cosine similarity (the vectors are L2-normalised, so the dot product). A lexical baseline beside BM25 with no
index to build or cache: the vectorizer is fitted when the retriever is made.

scikit-learn (the ``train`` extra) is imported when the retriever is built, never by ``rirag --help``.
"""

from __future__ import annotations

import logging
from typing import Mapping

import numpy as np

from rirag.constants import RUN_DEPTH
from rirag.data.obliqa import Passage
from rirag.data.runs import Run
from rirag.errors import DataError
from rirag.retrieval.bm25 import check_queries
from rirag.retrieval.dense import top_k

logger = logging.getLogger(__name__)

#: Questions scored per block (a block's scores are one dense questions × passages array).
QUERY_BLOCK = 256


class TfidfRetriever:
    """Cosine similarity of TF-IDF vectors over ``corpus`` (its empty passages left out). ``ngram_max``: word n-grams
    from 1 to N; ``sublinear_tf``: 1 + log(tf) in place of tf; ``min_df``: terms in fewer passages are dropped."""

    def __init__(self, corpus: Mapping[str, Passage], ngram_max: int = 1, sublinear_tf: bool = True,
                 min_df: int = 1):
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
        except ImportError as err:
            raise DataError("retriever 'tfidf' needs scikit-learn: pip install 'rirag[train]'") from err
        self.ids = [pid for pid, p in corpus.items() if p.text.strip()]
        if not self.ids:
            raise DataError("retriever 'tfidf': the corpus has no passage with text")
        self.vectorizer = TfidfVectorizer(ngram_range=(1, ngram_max), sublinear_tf=sublinear_tf, min_df=min_df,
                                          dtype=np.float32)
        try:
            self.matrix = self.vectorizer.fit_transform([corpus[pid].text for pid in self.ids])
        except ValueError as err:  # "empty vocabulary": min_df above every term's document frequency
            raise DataError(f"retriever 'tfidf': {err} (min_df {min_df} over {len(self.ids)} passages)") from None
        logger.info("TF-IDF over %d passages, %d terms", len(self.ids), self.matrix.shape[1])

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        check_queries(queries)
        qids = list(queries)
        run: Run = {}
        for start in range(0, len(qids), QUERY_BLOCK):
            block = qids[start:start + QUERY_BLOCK]
            scores = (self.vectorizer.transform([queries[q] for q in block]) @ self.matrix.T).toarray()
            idx, vals = top_k(scores, k)
            for r, q in enumerate(block):
                run[q] = {self.ids[j]: float(v) for j, v in zip(idx[r], vals[r])}
        return run


def build(corpus: Mapping[str, Passage], spec) -> TfidfRetriever:
    """The registry's factory: ``spec.options`` typed by the retriever table."""
    return TfidfRetriever(corpus, **spec.options)
