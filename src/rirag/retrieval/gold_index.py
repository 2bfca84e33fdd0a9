"""Gold passage texts found through the corpus's BM25 index: what :func:`rirag.data.questions.load_questions` maps a
gold text with where the command scores it (``rirag evaluate retrieval --questions``, ``evaluate answers
--questions``, ``data ingest --questions``). A text's BM25 top :data:`~rirag.constants.GOLD_TEXT_CANDIDATES`
passages are the ones checked for holding it (word for word, then fuzzily): one search a text on an index built
once and cached (the same one ``--retriever bm25`` reads), instead of a scan of the corpus a text (199 s for 160
texts at a million passages, issue 68)."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from rirag.constants import GOLD_TEXT_CANDIDATES
from rirag.data.passage_store import Passage
from rirag.data.runs import ranked


def bm25_candidates(corpus: Mapping[str, Passage],
                    depth: int = GOLD_TEXT_CANDIDATES) -> Callable[[str], Sequence[str]]:
    """A function from a gold text to the ids of the passages BM25 ranks first for it (best first); the index is
    built (or read from the cache) on the first text. A :data:`rirag.data.questions.CandidateIndex`."""
    from rirag.retrieval.registry import RetrieverSpec, build_retriever

    index = []

    def candidates(text: str) -> Sequence[str]:
        if not index:
            index.append(build_retriever(corpus, RetrieverSpec("bm25")))
        if not text.strip():
            return []
        run = index[0].search({"gold": text}, k=min(depth, len(corpus)))
        return [pid for pid, _ in ranked(run.get("gold", {}))]

    return candidates
