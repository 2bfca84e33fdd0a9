"""BM25 over passages and over whole documents, with bm25s (English stemming and stopwords).

The passage index feeds retrieval; the document index scores a query against each rulebook as one text, which
the RIRAG rank fusion combines with passage scores. Both save to and load from a folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from rirag.constants import BM25_B, BM25_K1, BM25_METHOD, RUN_DEPTH, STEMMER_LANGUAGE, STOPWORDS
from rirag.data.obliqa import Passage
from rirag.data.passage_store import corpus_key, corpus_texts
from rirag.data.runs import Run
from rirag.errors import DataError

logger = logging.getLogger(__name__)

#: Modules bm25s imports only for backends rirag never selects (:func:`_bm25s`).
BM25S_OPTIONAL = ("numba", "scipy")
#: The saved index's item ids (a JSON list), beside bm25s's files and ``rirag_bm25.json``.
IDS_FILE = "rirag_ids.json"


def _bm25s():
    """Import bm25s. Its import sets its own logger to DEBUG, which prints 'DEBUG bm25s: Building index ...' on
    every run under an INFO configuration; the level is reset so that bm25s follows the application's logging.

    bm25s imports numba and scipy, when installed (ranx needs them), for its optional backends (``backend="numba"``,
    ``csc_backend="scipy"``): 0.3 s of every ``rirag ask``. rirag builds, loads and searches with the numpy backends
    (bm25s's defaults; an index rirag saved says so), so the ones not imported yet are hidden from that import
    (:data:`BM25S_OPTIONAL`); a later ``import numba`` or ``import scipy`` finds them as usual."""
    import sys

    if "bm25s" not in sys.modules:
        hidden = [m for m in BM25S_OPTIONAL if m not in sys.modules]
        for m in hidden:
            sys.modules[m] = None  # type: ignore[assignment]  # `import m` raises ImportError meanwhile
        try:
            import bm25s  # noqa: F401
        finally:
            for m in hidden:
                if m in sys.modules and sys.modules[m] is None:
                    del sys.modules[m]
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return bm25s


@dataclass
class BM25Config:
    k1: float = BM25_K1
    b: float = BM25_B
    method: str = BM25_METHOD
    stemmer: str | None = STEMMER_LANGUAGE
    stopwords: str | None = STOPWORDS
    #: keep only the first N tokens (after stopword removal and stemming) of a query / passage; None: all
    query_max_tokens: int | None = None
    passage_max_tokens: int | None = None


def check_queries(queries: Mapping[str, str]) -> None:
    for qid, text in queries.items():
        if not isinstance(text, str):
            raise DataError(f"query {qid}: text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise DataError(f"query {qid}: empty query text")


class BM25Index:
    """A bm25s index over a list of (id, text) items."""

    def __init__(self, config: BM25Config | None = None):
        self.config = config or BM25Config()
        self.ids: list[str] = []
        self._retriever = None
        self._tokenizer = None

    # -- building -------------------------------------------------------------------------------
    def _make_tokenizer(self):
        bm25s = _bm25s()
        import Stemmer

        stemmer = Stemmer.Stemmer(self.config.stemmer) if self.config.stemmer else None
        return bm25s.tokenization.Tokenizer(stemmer=stemmer, stopwords=self.config.stopwords or [], lower=True)

    def _tokens(self, texts: Sequence[str], max_tokens: int | None, update_vocab: bool):
        ids = self._tokenizer.tokenize(list(texts), update_vocab=update_vocab, return_as="ids", show_progress=False)
        if max_tokens is not None:
            ids = [seq[:max_tokens] for seq in ids]
        return ids

    def index(self, ids: Sequence[str], texts: Sequence[str], log: bool = True) -> "BM25Index":
        """Index ``texts`` under ``ids``; ``log=False`` keeps quiet (tiny per-question indexes)."""
        bm25s = _bm25s()

        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        if not ids:
            raise DataError("cannot build a BM25 index over an empty corpus")
        self.ids = list(ids)
        self._tokenizer = self._make_tokenizer()
        tokens = self._tokens(texts, self.config.passage_max_tokens, update_vocab=True)
        vocab = self._tokenizer.get_vocab_dict()
        self._retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method, backend="numpy",
                                     csc_backend="numpy")
        self._retriever.index(bm25s.tokenization.Tokenized(ids=tokens, vocab=vocab), show_progress=False)
        if log:
            logger.info("BM25 index: %d items, %d terms", len(ids), len(vocab))
        return self

    @property
    def vocabulary_size(self) -> int:
        """One more than the largest term id (ids from :meth:`token_ids` index arrays of this length)."""
        if self._tokenizer is None:
            raise RuntimeError("index() or load() first")
        return max(self._tokenizer.get_vocab_dict().values(), default=-1) + 1

    def document_frequencies(self) -> np.ndarray:
        """Per term id, the number of items holding the term: its column's entries in the index's score matrix
        (bm25s keeps one for each item a term is in, every one positive)."""
        if self._retriever is None:
            raise RuntimeError("index() or load() first")
        return np.diff(np.asarray(self._retriever.scores["indptr"])).astype(np.int64)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's terms as ids of this index's vocabulary (stemmed, stopwords removed, in text order); words the
        index has never seen are dropped, so a text may give an empty list."""
        if self._tokenizer is None:
            raise RuntimeError("index() or load() first")
        empty = self._tokenizer.get_vocab_dict().get("")
        return [[t for t in seq if t != empty] for seq in self._tokens(texts, None, update_vocab=False)]

    # -- searching ------------------------------------------------------------------------------
    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        """Top-k items per query as {qid: {item_id: score}} (items with score 0 are left out)."""
        if self._retriever is None:
            raise RuntimeError("index() or load() first")
        check_queries(queries)
        qids = list(queries)
        tokens = self._tokens([queries[q] for q in qids], self.config.query_max_tokens, update_vocab=False)
        k = min(k, len(self.ids))
        run: Run = {}
        empty = [q for q, t in zip(qids, tokens) if not t]
        for q in empty:
            logger.warning("query %s has no indexed term after stemming and stopwords: empty result", q)
            run[q] = {}
        keep = [i for i, t in enumerate(tokens) if t]
        if keep:
            docs, scores = self._retriever.retrieve(
                [tokens[i] for i in keep], k=k, show_progress=show_progress, n_threads=0
            )
            for row, i in enumerate(keep):
                run[qids[i]] = {self.ids[d]: float(s) for d, s in zip(docs[row], scores[row]) if s > 0}
        return {q: run[q] for q in qids}

    def score_all(self, queries: Mapping[str, str]) -> np.ndarray:
        """Scores of every item for every query (queries × items), for small indexes such as documents."""
        check_queries(queries)
        tokens = self._tokens(list(queries.values()), self.config.query_max_tokens, update_vocab=False)
        return np.stack([self._retriever.get_scores(t) for t in tokens]) if tokens else np.zeros((0, len(self.ids)))

    # -- persistence ----------------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._retriever.save(folder, show_progress=False)
        self._tokenizer.save_vocab(folder)
        self._tokenizer.save_stopwords(folder)
        (folder / IDS_FILE).write_text(json.dumps(self.ids))
        (folder / "rirag_bm25.json").write_text(json.dumps({"config": asdict(self.config), "items": len(self.ids)}))

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = False, ids: Sequence[str] | None = None) -> "BM25Index":
        """A saved index; ``mmap``: its score matrix memory-mapped from the folder (read as queries need it, not
        loaded whole; the scores are the same). ``ids``: the items' ids, when the caller knows them (a cache key
        made from them, :func:`cached_index`): the saved list is then not read, only its length checked (at a
        million passages reading it took 0.15 s of a 3 s ``rirag ask``)."""
        bm25s = _bm25s()

        folder = Path(folder)
        meta_path = folder / "rirag_bm25.json"
        if not meta_path.exists():
            raise DataError(f"{folder}: not a saved rirag BM25 index (no rirag_bm25.json)")
        meta = json.loads(meta_path.read_text())
        self = cls(BM25Config(**meta["config"]))
        if "ids" in meta:  # saved before the ids had a file of their own
            self.ids = meta["ids"]
        elif ids is not None and meta.get("items") == len(ids):
            self.ids = list(ids)
        else:
            self.ids = json.loads((folder / IDS_FILE).read_text())
        self._retriever = bm25s.BM25.load(folder, show_progress=False, mmap=mmap)
        self._tokenizer = self._make_tokenizer()
        self._tokenizer.load_vocab(folder)
        self._tokenizer.load_stopwords(folder)
        return self


def _index_key(kind: str, ids: Sequence[str], texts: Sequence[str] | str, config: BM25Config) -> str:
    """What a saved index depends on: its items (their ids and texts, or a key of them such as a corpus's
    fingerprint), the BM25 settings and the bm25s / PyStemmer versions."""
    from importlib.metadata import PackageNotFoundError, version

    h = hashlib.sha256(kind.encode())
    for package in ("bm25s", "PyStemmer"):
        try:
            h.update(f"|{package}={version(package)}".encode())
        except PackageNotFoundError:
            h.update(f"|{package}=?".encode())
    h.update(json.dumps(asdict(config), sort_keys=True).encode())
    if isinstance(texts, str):
        h.update(f"|items={len(ids)}|{texts}".encode())
        return h.hexdigest()[:20]
    for i, t in zip(ids, texts):
        h.update(b"\x00" + i.encode() + b"\x01" + t.encode())
    return h.hexdigest()[:20]


def cached_index(kind: str, ids: Sequence[str], texts: Sequence[str] | Callable[[], Sequence[str]],
                 config: BM25Config | None = None, cache: str | Path | None = None,
                 content_key: str | None = None) -> BM25Index:
    """A BM25 index over ``texts`` (or what the callable returns, called only when the index is built); with
    ``cache`` (a folder), loaded from there when it was built before (a saved index searches exactly as the one it
    was saved from; memory-mapped: 564 against 636 MiB at a million passages, ``benchmarks/results/scale.json``),
    else built and saved there. ``content_key`` stands for the texts in the cache key (a corpus's fingerprint, which
    any change of its files changes) so that none is read to find the index; without it every text is hashed."""
    config = config or BM25Config()
    read = texts if callable(texts) else (lambda: texts)
    if cache is None:
        return BM25Index(config).index(ids, read())
    folder = Path(cache) / f"{kind}-{_index_key(kind, ids, content_key or read(), config)}"
    if (folder / "rirag_bm25.json").is_file():
        try:
            # the score matrix read as queries need it; the ids are those the key was made from
            index = BM25Index.load(folder, mmap=True, ids=ids)
            if index.ids == list(ids):
                logger.info("BM25 index of %d %s from cache %s", len(ids), kind, folder)
                return index
        except (OSError, ValueError, KeyError, DataError) as err:
            logger.warning("ignoring BM25 cache %s (%s): rebuilding it", folder, err)
    index = BM25Index(config).index(ids, read())
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    except OSError as err:
        logger.warning("BM25 index not cached in %s: %s", folder, err)
        return index
    try:
        index.save(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError as err:  # another process saved it first, or the folder is read-only: the index is still good
        logger.warning("BM25 index not cached in %s: %s", folder, err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return index


def passage_index(corpus: Mapping[str, Passage], config: BM25Config | None = None,
                  cache: str | Path | None = None) -> BM25Index:
    """BM25 over the indexable passages (empty passages are already out of ``corpus``); ``cache``: a folder to
    load it from when built before (:func:`cached_index`; a corpus loaded from a folder is keyed by its files'
    fingerprint, its texts read only to build the index)."""
    ids = list(corpus)
    return cached_index("passages", ids, lambda: corpus_texts(corpus, ids), config, cache, corpus_key(corpus))


def document_index(corpus: Mapping[str, Passage], config: BM25Config | None = None,
                   cache: str | Path | None = None) -> BM25Index:
    """BM25 over whole documents: each DocumentID's passages joined in corpus order (``cache``: as
    :func:`passage_index`)."""
    texts: dict[int, list[str]] = {}
    for p in corpus.values():
        texts.setdefault(p.document_id, []).append(p.text)
    ids = sorted(texts)
    return cached_index("documents", [str(d) for d in ids], ["\n".join(texts[d]) for d in ids], config, cache)
