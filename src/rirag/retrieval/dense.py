"""Dense retrieval over any sentence-transformers model (a Hub id, a local folder, or a wheel-shipped name).

Queries and passages carry the prefixes of :mod:`rirag.constants` (``query: `` / ``passage: ``), the same ones the
contrastive tuning trains with. Passage embeddings are L2-normalised, cached on disk under a key made of the model's
fingerprint (its weight and config files' content, or its Hub id), the prefix, the sequence length and the corpus
fingerprint. They are searched exactly by a matrix product, or, with ``search="ann"`` (and by default, ``"auto"``, on
corpora of at least :data:`rirag.constants.ANN_MIN_PASSAGES` passages), through a faiss HNSW index
(:mod:`rirag.retrieval.ann`) saved beside the embeddings under their key and the index's parameters.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from rirag import validation as check
from rirag.constants import (
    ANN_MIN_PASSAGES,
    CACHE_ENV_VAR,
    CORPUS_BATCH_CPU,
    CORPUS_BATCH_GPU,
    DENSE_MAX_SEQ_LENGTH,
    DENSE_SEARCH_MODES,
    EMBED_SHARD_PASSAGES,
    PASSAGE_PREFIX,
    QUERY_PREFIX,
    RUN_DEPTH,
)
from rirag.constants import DEFAULT_CACHE_DIR as _DEFAULT_CACHE_DIR
from rirag.data.obliqa import Passage
from rirag.data.runs import Run
from rirag.errors import DataError
from rirag.models import resolve_model
from rirag.retrieval.bm25 import check_queries
from rirag.retrieval.encoder import ModelLoadError, shared_encoder
from rirag.retrieval.shared_cache import build_lock, damaged, write_checksum

logger = logging.getLogger(__name__)


DEFAULT_CACHE_DIR = Path(_DEFAULT_CACHE_DIR)
#: Files whose content identifies a local model folder.
_FINGERPRINT_SUFFIXES = (".safetensors", ".bin", ".json", ".txt", ".model")
#: Training by-products in a model folder that do not change its embeddings (kept out of the fingerprint).
_NOT_MODEL_FILES = {"eval", "runs", "logs", "selection.json", "trainer_state.json", "training_args.bin",
                    "all_results.json", "train_results.json", "eval_results.json"}


def cache_dir(sub: str = "embeddings") -> Path:
    return Path(os.environ.get(CACHE_ENV_VAR, DEFAULT_CACHE_DIR)) / sub


def corpus_fingerprint(ids: Sequence[str], texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for i, t in zip(ids, texts):
        h.update(i.encode())
        h.update(b"\x00")
        h.update(t.encode())
        h.update(b"\x01")
    return h.hexdigest()[:16]


def model_fingerprint(path_or_id: str) -> str:
    """Content hash of a local model folder (weights, configs, vocab), or a hash of a Hub id."""
    path = Path(path_or_id)
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            rel = f.relative_to(path)
            if (f.is_file() and f.suffix in _FINGERPRINT_SUFFIXES and not rel.parts[0].startswith("checkpoint-")
                    and rel.parts[0] not in _NOT_MODEL_FILES and rel.name not in _NOT_MODEL_FILES):
                h.update(str(rel).encode())
                with open(f, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 22), b""):
                        h.update(chunk)
    else:
        h.update(b"hub:" + path_or_id.encode())
    return h.hexdigest()[:16]


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the k largest entries per row, sorted descending (ties by lower index)."""
    k = min(k, scores.shape[1])
    if k < scores.shape[1]:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        part = np.tile(np.arange(scores.shape[1]), (scores.shape[0], 1))
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    return idx, np.take_along_axis(scores, idx, axis=1)


class DenseRetriever:
    """Dense search over a corpus; the model loads on first use, passage embeddings come from the cache.

    ``search``: ``"exact"`` (a matrix product over every embedding), ``"ann"`` (a faiss HNSW index, built once from
    the embeddings and cached beside them) or ``"auto"``: exact below :data:`ANN_MIN_PASSAGES` passages, ANN at or
    above."""

    def __init__(
        self,
        corpus: Mapping[str, Passage],
        model: str,
        *,
        query_prefix: str = QUERY_PREFIX,
        passage_prefix: str = PASSAGE_PREFIX,
        max_seq_length: int = DENSE_MAX_SEQ_LENGTH,
        batch_size: int | None = None,
        device: str | None = None,
        cache: str | Path | None | bool = None,
        shard_size: int = EMBED_SHARD_PASSAGES,
        search: str = "auto",
    ):
        self.search_mode = check.choice(*DENSE_SEARCH_MODES)(search, "dense search")
        if not corpus:
            raise DataError("cannot build a dense index over an empty corpus")
        self.model_name = model
        self.ids = list(corpus)
        self.texts = [corpus[i].text for i in self.ids]
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.device = device
        self.shard_size = shard_size
        self.cache = None if cache is False else Path(cache) if cache not in (None, True) else cache_dir()
        self._model = None
        self._embeddings: np.ndarray | None = None
        self._ann = None
        # resolve now so that a wrong name fails before any work
        try:
            self._resolved = resolve_model(model) if model else ""
        except (FileNotFoundError, ImportError) as err:
            raise ModelLoadError(f"model {model!r}: {err}") from err
        if not model:
            raise ModelLoadError("a dense retriever needs a model: pass --model NAME_OR_PATH")

    @property
    def model(self):
        """The encoder of queries (:func:`shared_encoder`: quick to load)."""
        if self._model is None:
            self._model = shared_encoder(self.model_name, self.device, self.max_seq_length)
        return self._model

    @property
    def passage_model(self):
        """The encoder of the corpus: torch, which encodes many texts at least as fast (the same embeddings)."""
        return shared_encoder(self.model_name, self.device, self.max_seq_length, onnx=False)

    def cache_path(self) -> Path | None:
        if self.cache is None:
            return None
        key = hashlib.sha256("|".join([
            model_fingerprint(self._resolved), self.passage_prefix, str(self.max_seq_length),
            corpus_fingerprint(self.ids, self.texts)]).encode()).hexdigest()[:20]
        return self.cache / f"{Path(self._resolved).name or 'model'}-{key}.npy"

    @property
    def uses_ann(self) -> bool:
        """Whether :meth:`search` goes through the ANN index (``search="ann"``, or ``"auto"`` on a large corpus)."""
        return self.search_mode == "ann" or (self.search_mode == "auto" and len(self.ids) >= ANN_MIN_PASSAGES)

    def ann_path(self) -> Path | None:
        """Where the ANN index is cached: the embeddings' cache name plus the index's parameters."""
        from rirag.retrieval.ann import index_suffix

        path = self.cache_path()
        return None if path is None else path.with_name(path.stem + index_suffix())

    def ann_index(self):
        """The faiss HNSW index over the passage embeddings: from the cache, or built (and cached) on first use."""
        if self._ann is not None:
            return self._ann
        path = self.ann_path()
        index = self._cached_ann(path, warn=False)
        if index is None and path is not None:
            with build_lock(path, f"the ANN index of {len(self.ids)} passages"):
                index = self._cached_ann(path, warn=True)
                if index is None:
                    index = self._build_ann(path)
        self._ann = index if index is not None else self._build_ann(None)
        return self._ann

    def _cached_ann(self, path: Path | None, warn: bool):
        """The ANN index in the cache file, or None when it is missing or damaged (named in one warning when
        ``warn``)."""
        from rirag.retrieval.ann import ANNIndex

        if path is None or not path.exists() or damaged(path, "ANN index", warn):
            return None
        try:
            index = ANNIndex.load(path)
        except DataError as err:
            if warn:
                logger.warning("ANN index cache %s is unreadable (%s): rebuilding it", path, err)
            return None
        if len(index) != len(self.ids):
            if warn:
                logger.warning("ignoring ANN index %s: %d rows for %d passages", path, len(index), len(self.ids))
            return None
        logger.info("ANN index from cache %s", path)
        return index

    def _build_ann(self, path: Path | None):
        from rirag.retrieval.ann import ANNIndex

        index = ANNIndex.build(self.passage_embeddings())
        if path is not None:
            index.save(path)
            write_checksum(path)
        return index

    def batch_size_for(self, model) -> int:
        """Texts per forward pass: ``batch_size`` when given, else :data:`CORPUS_BATCH_GPU` for a model on a GPU
        and :data:`CORPUS_BATCH_CPU` on the CPU."""
        if self.batch_size:
            return self.batch_size
        return CORPUS_BATCH_GPU if str(getattr(model, "device", "cpu")).startswith("cuda") else CORPUS_BATCH_CPU

    def encode(self, texts: Sequence[str], prefix: str, show_progress: bool = False,
               label: str | None = None, model=None, on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Normalised embeddings of ``texts`` (by ``model``, default :attr:`model`). With ``on_batch``, the texts
        are encoded longest first (as sentence-transformers orders them) one batch at a time and ``on_batch(n)`` is
        told each batch's size, so a bar moves per batch; with ``show_progress`` and a ``label``, one labelled bar
        (with an ETA) is moved that way; else sentence-transformers' own bar."""
        texts = list(texts)
        model = model if model is not None else self.model
        if show_progress and label and texts and on_batch is None:
            from tqdm.auto import tqdm

            with tqdm(total=len(texts), desc=label, unit="text") as bar:
                return self.encode(texts, prefix, model=model, on_batch=bar.update)
        batch = self.batch_size_for(model)
        if on_batch is None or not texts:
            emb = model.encode(texts, prompt=prefix or None, batch_size=batch, show_progress_bar=show_progress,
                               convert_to_numpy=True, normalize_embeddings=True)
            return np.asarray(emb, dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = None
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            emb = self.encode([texts[i] for i in rows], prefix, model=model)
            if out is None:
                out = np.empty((len(texts), emb.shape[1]), dtype=np.float32)
            out[rows] = emb
            on_batch(len(rows))
        return out

    def _cached_embeddings(self, path: Path | None, warn: bool) -> np.ndarray | None:
        """The embeddings in the cache file, or None when it is missing, fails its checksum, cannot be read or
        holds another row count (each named in one warning when ``warn``: the caller rebuilds it)."""
        if path is None or not path.exists() or damaged(path, "passage embeddings", warn):
            return None
        try:
            emb = np.load(path)
        except (OSError, ValueError, EOFError) as err:
            if warn:
                logger.warning("passage embeddings cache %s is unreadable (%s): rebuilding it", path, err)
            return None
        if emb.ndim != 2 or emb.shape[0] != len(self.ids):
            if warn:
                logger.warning("ignoring cache %s: %s rows for %d passages: rebuilding it", path, emb.shape[:1],
                               len(self.ids))
            return None
        logger.info("passage embeddings from cache %s", path)
        return emb

    def passage_embeddings(self, show_progress: bool = True, rank: int = 0, world: int = 1,
                           barrier=None) -> np.ndarray | None:
        """The corpus's normalised embeddings, from the cache or embedded in shards
        (:mod:`rirag.retrieval.embedding`: resumable, merged into the cache). In one process, the build holds the
        cache file's lock (:mod:`rirag.retrieval.shared_cache`): another process embedding the same corpus waits and
        then reads the cache; a damaged cache file is named and rebuilt. Under several processes (``rank`` of
        ``world``, ``barrier`` waiting for all) each embeds its shards and rank 0 merges them and returns the
        matrix; the others return None."""
        if self._embeddings is not None:
            return self._embeddings
        path = self.cache_path()
        emb = self._cached_embeddings(path, warn=path is None or world > 1)
        if emb is None and path is not None and world == 1:
            with build_lock(path, f"the embedding of {len(self.ids)} passages ({Path(self.model_name).name})"):
                emb = self._cached_embeddings(path, warn=True)  # built by the process that held the lock
                if emb is None:
                    emb = self._embed(path, show_progress, rank, world, barrier)
        elif emb is None:
            emb = self._embed(path, show_progress, rank, world, barrier)
        if emb is not None:
            self._embeddings = np.asarray(emb)
        return self._embeddings

    def _embed(self, path: Path | None, show_progress: bool, rank: int, world: int, barrier) -> np.ndarray | None:
        from rirag.retrieval.embedding import ShardPlan, embed_corpus

        logger.info("encoding %d passages with %s (process %d of %d)", len(self.ids), self.model_name, rank + 1, world)
        bar = None
        if show_progress and rank == 0:
            from tqdm.auto import tqdm

            plan = ShardPlan(len(self.ids), self.shard_size)
            mine = sum(stop - start for start, stop in map(plan.bounds, plan.owned(rank, world)))
            share = f", this process's share of {world}" if world > 1 else ""
            bar = tqdm(total=mine, unit="text", desc=f"embedding {len(self.ids)} passages "
                                                     f"({Path(self.model_name).name}, cached after{share})")
        update = bar.update if bar is not None else None
        try:
            model = self.passage_model
            return embed_corpus(lambda texts: self.encode(texts, self.passage_prefix, model=model, on_batch=update),
                                self.texts, path, rank=rank, world=world, barrier=barrier,
                                shard_size=self.shard_size, progress=update)
        finally:
            if bar is not None:
                bar.close()

    def query_embeddings(self, queries: Mapping[str, str], show_progress: bool = False) -> np.ndarray:
        """Normalised embeddings of the queries (rows, in ``queries`` order), with the query prefix."""
        check_queries(queries)
        return self.encode(list(queries.values()), self.query_prefix, show_progress=show_progress)

    def score_matrix(self, queries: Mapping[str, str], show_progress: bool = False) -> np.ndarray:
        """Cosine similarity of every query (rows, in ``queries`` order) with every passage (``self.ids`` order)."""
        passages = self.passage_embeddings()  # a labelled bar while the corpus is encoded (once: cached after)
        return self.query_embeddings(queries, show_progress=show_progress) @ passages.T

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        qids = list(queries)
        if not qids:
            return {}
        if self.uses_ann:
            index = self.ann_index()
            idx, vals = index.search(self.query_embeddings(queries, show_progress=show_progress), k)
            n = len(self.ids)
            return {q: {self.ids[j]: float(v) for j, v in zip(idx[r], vals[r]) if j < n} for r, q in enumerate(qids)}
        scores = self.score_matrix(queries, show_progress=show_progress)
        idx, vals = top_k(scores, k)
        return {q: {self.ids[j]: float(v) for j, v in zip(idx[r], vals[r])} for r, q in enumerate(qids)}


def question_passage_pairs(questions, corpus: Mapping[str, Passage], max_pairs: int | None = None,
                           seed: int = 0) -> list[tuple[str, str, str, str]]:
    """(question id, question text, corpus id, passage text) for every gold passage of every question.

    With ``max_pairs``, a seeded random subset (the order is shuffled either way, deterministically).
    """
    import random

    pairs = [(q.id, q.text, pid, corpus[pid].text) for q in questions for pid in q.gold if pid in corpus]
    random.Random(seed).shuffle(pairs)
    return pairs[:max_pairs] if max_pairs else pairs
