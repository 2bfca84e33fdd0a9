"""Learned fusion: a LightGBM LambdaMART ranker over the signals of every first-stage retriever.

The hand-set fusions (hybrid, rank fusion, RRF) give each signal one global weight. Learned fusion instead ranks the
union of each signal's top ``candidate_depth`` passages with a gradient-boosted ranker trained on the protocol's
training questions (gold passages = relevant), so it can weigh BM25 against each encoder per query and use context
the fixed fusions ignore. Features of a (query, candidate passage), for every passage signal (BM25 and each dense
encoder):

* for passage signals and for the BM25 score of the passage's document: the raw score, the score divided by the
  query's maximum, the score minus that maximum, log(1 + rank in the corpus);
* for passage signals: the normalised score of the previous and of the next passage of the same document (0 at a
  document's edge), and the share of the signal's top ``vote_depth`` that lies in the candidate's document;
* log(1 + passage words), the passage's relative position in its document, and the question's length in words;
* lexical overlap (:mod:`rirag.retrieval.lexical`): the share of the question's terms (plain and IDF-weighted),
  bigrams and trigrams that the passage contains, the number of shared bigrams, and the share of the passage's terms
  found in the question (questions were written from their passages, so coverage of their wording marks a gold one);
* with a :class:`QuestionMemory` (optional): the training questions nearest the query, by two similarities (the
  cosine of the first encoder's query embeddings, and BM25 over the question texts divided by the query's best
  match), propose their gold passages. For each similarity the gold passages of the ``memory_depth`` nearest
  questions join the candidates, with four features: the highest similarity of such a neighbour that has the
  candidate as gold, the share of neighbours that do, log(1 + the best such neighbour's rank), and the highest
  similarity of *any* training question with the candidate as gold (-1 if none). One more feature counts the training
  questions with the candidate as gold: log(1 + count). This uses the training questions themselves, so it only
  helps where training and evaluation questions share gold passages: the original ObliQA splits (about half of each
  split's gold passages are shared), not the leakage-free re-split. A training question is never its own neighbour
  and never counts for itself.

Dense signals come from :class:`~rirag.retrieval.dense.DenseRetriever` (embeddings cached on disk as everywhere
else); BM25 from :mod:`rirag.retrieval.bm25`. ``train/learned_fusion.py`` trains and saves a ranker folder;
:class:`LearnedFusionRetriever` loads it (registry name ``learned-fusion``).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from rirag.constants import (
    DENSE_MAX_SEQ_LENGTH,
    LEARNED_FUSION_CANDIDATE_DEPTH,
    LEARNED_FUSION_MEMORY_DEPTH,
    LEARNED_FUSION_VOTE_DEPTH,
    RUN_DEPTH,
)
from rirag.data.obliqa import Passage
from rirag.data.runs import Run
from rirag.errors import DataError
from rirag.io import atomic_write_json, read_json
from rirag.retrieval.bm25 import BM25Index, document_index, passage_index
from rirag.retrieval.dense import DenseRetriever
from rirag.retrieval.lexical import LEXICAL_FEATURES, LexicalOverlap

logger = logging.getLogger(__name__)


#: Files of a saved ranker folder.
RANKER_FILE = "ranker.txt"
#: Version of what the features compute. Bumped when a feature changes meaning under the same name (a ranker trained
#: on the old values would load and rank wrongly); 2: ``doc_bm25_log_rank`` is the document's rank among documents
#: (1: the passage's rank when passages are ordered by their document's score).
FEATURE_VERSION = 2
CONFIG_FILE = "learned_fusion.json"
MEMORY_FILE = "memory.json"
#: The question memory's similarities (query vs training question): first encoder's cosine, normalised BM25.
MEMORY_SIMILARITIES = ("dense", "bm25")
#: Queries scored at once (bounds the memory of the query × corpus score matrices).
QUERY_CHUNK = 256


@dataclass
class FusionFeatures:
    """Candidates and features of a batch of queries: rows of ``X`` for query i are ``X[offsets[i]:offsets[i+1]]``."""

    qids: list[str]
    candidates: list[np.ndarray]  # per query: corpus indices (into FeatureBuilder.ids), ascending
    X: np.ndarray  # (rows, features), float32
    offsets: np.ndarray  # (len(qids) + 1,)

    def labels(self, gold: Mapping[str, Sequence[str]], ids: Sequence[str]) -> np.ndarray:
        """1 where the candidate is a gold passage of its query, else 0 (rows of ``X``)."""
        y = np.zeros(len(self.X), dtype=np.int32)
        for i, (q, cands) in enumerate(zip(self.qids, self.candidates)):
            wanted = set(gold.get(q, ()))
            y[self.offsets[i]:self.offsets[i + 1]] = [ids[j] in wanted for j in cands]
        return y


@dataclass
class QuestionMemory:
    """Training questions (id, text, gold corpus ids) whose nearest neighbours propose candidates."""

    ids: list[str]
    texts: list[str]
    gold: list[list[str]]

    @classmethod
    def from_questions(cls, questions) -> "QuestionMemory":
        kept = [q for q in questions if q.gold]
        return cls([q.id for q in kept], [q.text for q in kept], [list(q.gold) for q in kept])

    def save(self, path: str | Path) -> None:
        atomic_write_json(path, [{"id": i, "text": t, "gold": g} for i, t, g in zip(self.ids, self.texts, self.gold)])

    @classmethod
    def load(cls, path: str | Path) -> "QuestionMemory":
        path = Path(path)
        records = read_json(path)
        if not isinstance(records, list):
            raise DataError(f"{path}: expected a list of question records, got {type(records).__name__}")
        for n, rec in enumerate(records):
            if not isinstance(rec, dict):
                raise DataError(f"{path}: record {n} is not an object")
            for key in ("id", "text", "gold"):
                if key not in rec:
                    raise DataError(f"{path}: record {n} lacks field {key!r}")
            if not isinstance(rec["text"], str) or not isinstance(rec["id"], str):
                raise DataError(f"{path}: record {n}: fields 'id' and 'text' must be strings")
            if not isinstance(rec["gold"], list) or not all(isinstance(g, str) for g in rec["gold"]):
                raise DataError(f"{path}: record {n}: field 'gold' must be a list of passage ids")
        return cls([r["id"] for r in records], [r["text"] for r in records], [list(r["gold"]) for r in records])


def feature_names(encoders: Sequence[str], memory: bool = False) -> list[str]:
    """Column names, in order, for BM25 plus ``len(encoders)`` dense signals (``dense0``, ``dense1``, ...)."""
    signals = ["bm25"] + [f"dense{i}" for i in range(len(encoders))]
    names = [f"{s}_{k}" for s in signals + ["doc_bm25"] for k in ("score", "norm", "gap", "log_rank")]
    names += [f"{s}_{k}" for s in signals for k in ("prev_norm", "next_norm")]
    names += [f"{s}_doc_vote" for s in signals]
    names += ["passage_log_words", "passage_position", "query_words"]
    names += [f"lexical_{k}" for k in LEXICAL_FEATURES]
    if memory:
        names += [f"memory_{c}_{k}" for c in MEMORY_SIMILARITIES
                  for k in ("max_similarity", "share", "log_best_rank", "best_gold_similarity")]
        names.append("memory_log_popularity")
    return names


def _ranks(scores: np.ndarray) -> np.ndarray:
    """0-based rank of every entry of a 1-D score vector (ties: lower index first)."""
    r = np.empty(len(scores), dtype=np.float32)
    r[np.argsort(-scores, kind="stable")] = np.arange(len(scores), dtype=np.float32)
    return r


class FeatureBuilder:
    """Candidates and features for queries over one corpus; BM25 indexes and encoders are built lazily."""

    def __init__(self, corpus: Mapping[str, Passage], encoders: Sequence[str] = (), *,
                 candidate_depth: int = LEARNED_FUSION_CANDIDATE_DEPTH, vote_depth: int = LEARNED_FUSION_VOTE_DEPTH,
                 max_seq_length: int = DENSE_MAX_SEQ_LENGTH, bm25=None, documents=None, dense: Sequence | None = None,
                 memory: QuestionMemory | None = None, memory_depth: int = LEARNED_FUSION_MEMORY_DEPTH,
                 memory_bm25=None, **dense_options):
        if not corpus:
            raise DataError("learned fusion needs a non-empty corpus")
        if candidate_depth < 1 or vote_depth < 1:
            raise DataError(f"candidate_depth and vote_depth must be >= 1, got {candidate_depth}, {vote_depth}")
        self.corpus = corpus
        self.ids = list(corpus)
        self.encoders = list(encoders)
        self.candidate_depth, self.vote_depth = candidate_depth, vote_depth
        self._bm25, self._documents = bm25, documents
        if dense is None:
            dense = [DenseRetriever(corpus, m, max_seq_length=max_seq_length, **dense_options) for m in self.encoders]
        if len(dense) != len(self.encoders):
            raise DataError(f"{len(dense)} dense retrievers for {len(self.encoders)} encoders")
        self.dense = list(dense)
        if memory is not None and not self.dense:
            raise DataError("a question memory needs at least one encoder (its query embeddings find neighbours)")
        if memory is not None and memory_depth < 1:
            raise DataError(f"memory_depth must be >= 1, got {memory_depth}")
        self.memory, self.memory_depth = memory, memory_depth
        self._memory_embeddings: np.ndarray | None = None
        self._memory_bm25 = memory_bm25
        self._memory_gold: list[np.ndarray] = []
        self._memory_position: dict[str, int] = {}
        self._lexical = None
        # (passage, memory question) gold pairs, and how many memory questions have each passage as gold
        self._pair_passage = self._pair_question = np.zeros(0, dtype=np.int64)
        self._popularity = np.zeros(0, dtype=np.float32)
        # passage context: neighbours within a document (corpus order), document index, length, position
        n = len(self.ids)
        self.prev, self.next = np.full(n, -1), np.full(n, -1)
        doc_index: dict[int, int] = {}
        self.doc = np.empty(n, dtype=np.int64)
        last: dict[int, int] = {}
        for j, pid in enumerate(self.ids):
            d = corpus[pid].document_id
            self.doc[j] = doc_index.setdefault(d, len(doc_index))
            if d in last:
                self.prev[j], self.next[last[d]] = last[d], j
            last[d] = j
        self.documents_in_order = list(doc_index)  # DocumentIDs by document index
        counts = np.bincount(self.doc)
        seen = np.zeros(len(counts), dtype=np.int64)
        self.position = np.empty(n, dtype=np.float32)
        for j in range(n):
            seen[self.doc[j]] += 1
            self.position[j] = seen[self.doc[j]] / counts[self.doc[j]]
        self.log_words = np.log1p([len(corpus[p].text.split()) for p in self.ids]).astype(np.float32)

    @property
    def feature_names(self) -> list[str]:
        return feature_names(self.encoders, self.memory is not None)

    def _memory_setup(self) -> None:
        if self._memory_embeddings is not None:
            return
        enc = self.dense[0]
        self._memory_embeddings = enc.encode(self.memory.texts, enc.query_prefix)
        if self._memory_bm25 is None:
            self._memory_bm25 = BM25Index().index(self.memory.ids, self.memory.texts)
        index = {pid: j for j, pid in enumerate(self.ids)}
        self._memory_gold = [np.array([index[g] for g in gold if g in index], dtype=np.int64)
                             for gold in self.memory.gold]
        self._memory_position = {qid: j for j, qid in enumerate(self.memory.ids)}
        self._pair_passage = np.concatenate([*self._memory_gold, np.zeros(0, dtype=np.int64)])
        self._pair_question = np.repeat(np.arange(len(self._memory_gold)), [len(g) for g in self._memory_gold])
        self._popularity = np.bincount(self._pair_passage, minlength=len(self.ids)).astype(np.float32)

    def _memory_matrices(self, queries: Mapping[str, str], query_embeddings: np.ndarray) -> list[np.ndarray]:
        """Similarity of every query with every memory question, one matrix per :data:`MEMORY_SIMILARITIES`: the
        first encoder's cosine, and BM25 divided by the query's best match. A query's own entry is -inf."""
        self._memory_setup()
        own = [(r, self._memory_position[q]) for r, q in enumerate(queries) if q in self._memory_position]
        mats = [query_embeddings @ self._memory_embeddings.T,
                np.asarray(self._memory_bm25.score_all(queries), dtype=np.float32)]
        for m in mats:
            for r, j in own:
                m[r, j] = -np.inf
        top = mats[1].max(axis=1, keepdims=True) if mats[1].shape[1] else 0.0
        mats[1] = mats[1] / (np.maximum(top, 0.0) + 1e-9)
        return mats

    @property
    def bm25(self):
        if self._bm25 is None:
            self._bm25 = passage_index(self.corpus)
        return self._bm25

    @property
    def lexical(self):
        """Term / n-gram sets of every passage over the BM25 index's vocabulary (built on first use)."""
        if self._lexical is None:
            self._lexical = LexicalOverlap(self.bm25, lambda j: self.corpus[self.ids[j]].text)
        return self._lexical

    @property
    def documents(self):
        if self._documents is None:
            self._documents = document_index(self.corpus)
        return self._documents

    def _signals(self, queries: Mapping[str, str]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray | None]:
        """Passage score matrices (BM25, then each encoder), document BM25 scores (queries × documents, in
        ``documents_in_order``), and the first encoder's query embeddings (None without encoders)."""
        if self.bm25.ids != self.ids:
            raise DataError("the BM25 index does not cover the feature builder's corpus (same ids, same order)")
        mats = [self.bm25.score_all(queries).astype(np.float32)]
        first = None
        for d in self.dense:
            q = d.query_embeddings(queries)
            mats.append((q @ d.passage_embeddings(show_progress=False).T).astype(np.float32))
            first = q if first is None else first
        doc_scores = self.documents.score_all(queries).astype(np.float32)
        column = {str(d): i for i, d in enumerate(self.documents.ids)}
        try:
            cols = np.array([column[str(d)] for d in self.documents_in_order])
        except KeyError as err:
            raise DataError(f"the document BM25 index lacks document {err}") from err
        return mats, doc_scores[:, cols], first

    def _one(self, text: str, passage: list[np.ndarray], doc_scores: np.ndarray,
             memory: list[np.ndarray] | None = None, qid: str | None = None,
             terms: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        depth = min(self.candidate_depth, len(self.ids))
        pools = [np.argpartition(-s, depth - 1)[:depth] for s in passage]
        neighbours = []
        for sims in memory or []:
            nb = np.argsort(-sims, kind="stable")[:min(self.memory_depth, len(sims))]
            neighbours.append(nb[np.isfinite(sims[nb])])
            pools += [self._memory_gold[j] for j in neighbours[-1]]
        cands = np.unique(np.concatenate(pools))
        cols = []
        # every passage gets its document's score; a document's rank is among documents
        doc = doc_scores[self.doc]
        ranks = [_ranks(s)[cands] for s in passage] + [_ranks(doc_scores)[self.doc[cands]]]
        for s, rank in zip(passage + [doc], ranks):
            top = float(s.max())
            v = s[cands]
            cols += [v, v / (top + 1e-9), v - top, np.log1p(rank)]
        for s in passage:
            norm = s / (float(s.max()) + 1e-9)
            for nb in (self.prev[cands], self.next[cands]):
                cols.append(np.where(nb >= 0, norm[np.maximum(nb, 0)], 0.0))
        votes = min(self.vote_depth, len(self.ids))
        for s in passage:
            top = np.argpartition(-s, votes - 1)[:votes]
            cols.append(np.bincount(self.doc[top], minlength=len(self.documents_in_order))[self.doc[cands]] / votes)
        cols += [self.log_words[cands], self.position[cands], np.full(len(cands), len(text.split()))]
        cols += list(self.lexical.features(text if terms is None else terms, cands).T)
        if memory is not None:
            cols += self._memory_columns(cands, memory, neighbours, qid)
        return cands, np.stack(cols, axis=1).astype(np.float32)

    def _memory_columns(self, cands: np.ndarray, memory: list[np.ndarray], neighbours: list[np.ndarray],
                        qid: str | None) -> list[np.ndarray]:
        cols = []
        where = {int(c): i for i, c in enumerate(cands)}
        for sims, nbs in zip(memory, neighbours):
            best_sim = np.zeros(len(cands), dtype=np.float32)
            share = np.zeros(len(cands), dtype=np.float32)
            best_rank = np.full(len(cands), np.log1p(self.memory_depth), dtype=np.float32)
            for r, j in enumerate(nbs):
                for g in self._memory_gold[j]:
                    i = where[int(g)]
                    best_sim[i] = max(best_sim[i], sims[j])
                    share[i] += 1.0 / self.memory_depth
                    best_rank[i] = min(best_rank[i], np.log1p(r))
            # the best similarity over every memory question with the passage as gold (-1: none; self is -inf)
            best_gold = np.full(len(self.ids), -np.inf, dtype=np.float32)
            np.maximum.at(best_gold, self._pair_passage, sims[self._pair_question])
            best_gold = best_gold[cands]
            cols += [best_sim, share, best_rank, np.where(np.isfinite(best_gold), best_gold, -1.0)]
        popularity = self._popularity[cands].copy()
        if qid in self._memory_position:
            popularity -= np.isin(cands, self._memory_gold[self._memory_position[qid]])
        cols.append(np.log1p(popularity))
        return cols

    def build(self, queries: Mapping[str, str], show_progress: bool = False) -> FusionFeatures:
        from tqdm.auto import tqdm

        qids = list(queries)
        cands_all, blocks = [], []
        bar = tqdm(total=len(qids), desc="learned-fusion features", disable=not show_progress)
        for start in range(0, len(qids), QUERY_CHUNK):
            chunk = {q: queries[q] for q in qids[start:start + QUERY_CHUNK]}
            passage, doc_scores, first = self._signals(chunk)
            memory = self._memory_matrices(chunk, first) if self.memory is not None else None
            terms = self.bm25.token_ids(list(chunk.values()))
            for r, q in enumerate(chunk):
                cands, X = self._one(chunk[q], [m[r] for m in passage], doc_scores[r],
                                     None if memory is None else [m[r] for m in memory], q, terms[r])
                cands_all.append(cands)
                blocks.append(X)
            bar.update(len(chunk))
        bar.close()
        width = len(self.feature_names)
        X = np.concatenate(blocks) if blocks else np.zeros((0, width), dtype=np.float32)
        offsets = np.concatenate([[0], np.cumsum([len(c) for c in cands_all])]).astype(np.int64)
        return FusionFeatures(qids, cands_all, X, offsets)


def train_ranker(features: FusionFeatures, labels: np.ndarray, params: Mapping, num_boost_round: int,
                 names: Sequence[str] | None = None):
    """A LightGBM booster trained on grouped (query) rows; queries without any relevant candidate are left out."""
    import lightgbm as lgb

    keep_rows, groups = [], []
    for i in range(len(features.qids)):
        a, b = features.offsets[i], features.offsets[i + 1]
        if labels[a:b].any():
            keep_rows.append(np.arange(a, b))
            groups.append(b - a)
    if not groups:
        raise DataError("no training query has a gold passage among its candidates: nothing to learn")
    rows = np.concatenate(keep_rows)
    data = lgb.Dataset(features.X[rows], labels[rows], group=groups,
                       feature_name=list(names) if names else "auto", free_raw_data=True)
    return lgb.train(dict(params), data, num_boost_round=num_boost_round)


def rank(features: FusionFeatures, scores: np.ndarray, ids: Sequence[str], k: int = RUN_DEPTH) -> Run:
    """A run from per-row scores: each query's candidates sorted by score, top ``k``."""
    run: Run = {}
    for i, (q, cands) in enumerate(zip(features.qids, features.candidates)):
        s = scores[features.offsets[i]:features.offsets[i + 1]]
        order = np.lexsort((cands, -s))[:k]
        run[q] = {ids[cands[j]]: float(s[j]) for j in order}
    return run


def ranker_folder(name: str | Path) -> Path:
    """The folder of a trained ranker: ``name`` itself when it is a local path, else its Hub repo's files
    (``huggingface_hub.snapshot_download``: downloaded once, then read from the local cache; with HF_HUB_OFFLINE set,
    the cache alone). A Hub id that cannot be had is a DataError naming it."""
    from rirag.models import looks_local

    if looks_local(str(name)) or "/" not in str(name):
        return Path(name)
    return _hub_snapshot(str(name))


@functools.lru_cache(maxsize=8)
def _hub_snapshot(repo_id: str) -> Path:
    """A ranker repo's files, resolved once a process (the default's check, the config and the retriever each ask)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=repo_id))
    except Exception as err:  # noqa: BLE001 - offline, unknown repo, no access: one line naming the ranker
        raise DataError(f"learned-fusion ranker {repo_id!r}: not a folder here and not to be had from the Hub "
                        f"({type(err).__name__}: {' '.join(str(err).split())[:200]})") from None


def load_ranker_config(folder: str | Path) -> dict:
    folder = ranker_folder(folder)
    path = folder / CONFIG_FILE
    if not folder.is_dir():
        raise DataError(f"learned-fusion ranker {str(folder)!r}: no such folder "
                        "(train one with train/learned_fusion.py)")
    if not path.exists() or not (folder / RANKER_FILE).exists():
        raise DataError(f"learned-fusion ranker {str(folder)!r}: missing {CONFIG_FILE} or {RANKER_FILE}")
    config = read_json(path)
    for key in ("encoders", "candidate_depth", "vote_depth", "feature_names"):
        if key not in config:
            raise DataError(f"{path}: missing field {key!r}")
    return config


class LearnedFusionRetriever:
    """Rank the union of BM25's and each encoder's top candidates with a trained LightGBM ranker (lazy loading)."""

    def __init__(self, corpus: Mapping[str, Passage], ranker: str | Path, encoders: Sequence[str] | None = None,
                 bm25=None, documents=None, **dense_options):
        self.folder = ranker_folder(ranker)
        self.config = load_ranker_config(self.folder)
        saved = list(self.config["encoders"])
        encoders = list(encoders) if encoders else saved
        if len(encoders) != len(saved):
            raise DataError(f"learned-fusion ranker {str(self.folder)!r} was trained with {len(saved)} encoders "
                            f"({saved}); got {len(encoders)}: {encoders}")
        version = int(self.config.get("feature_version", 1))
        if version != FEATURE_VERSION:
            raise DataError(f"{self.folder / CONFIG_FILE}: ranker trained on feature version {version}, this version "
                            f"computes version {FEATURE_VERSION}: retrain it with train/learned_fusion.py")
        # the encoders' passage length is part of the features: the one the ranker was trained with, by default
        trained_length = (self.config.get("arguments") or {}).get("max_seq_length")
        if trained_length is not None:
            asked = dense_options.setdefault("max_seq_length", int(trained_length))
            if asked is not None and int(asked) != int(trained_length):
                raise DataError(f"learned-fusion ranker {str(self.folder)!r} was trained with max_seq_length "
                                f"{trained_length}; got {asked}")
        memory = QuestionMemory.load(self.folder / MEMORY_FILE) if self.config.get("memory_depth") else None
        self.builder = FeatureBuilder(corpus, encoders, candidate_depth=int(self.config["candidate_depth"]),
                                      vote_depth=int(self.config["vote_depth"]), bm25=bm25, documents=documents,
                                      memory=memory,
                                      memory_depth=int(self.config.get("memory_depth") or LEARNED_FUSION_MEMORY_DEPTH),
                                      **dense_options)
        if self.builder.feature_names != list(self.config["feature_names"]):
            raise DataError(f"{self.folder / CONFIG_FILE}: feature names differ from this version's "
                            f"({len(self.config['feature_names'])} vs {len(self.builder.feature_names)})")
        self._booster = None

    @property
    def booster(self):
        if self._booster is None:
            import lightgbm as lgb

            self._booster = lgb.Booster(model_file=str(self.folder / RANKER_FILE))
            if self._booster.num_feature() != len(self.builder.feature_names):
                raise DataError(f"{self.folder / RANKER_FILE}: {self._booster.num_feature()} features, "
                                f"expected {len(self.builder.feature_names)}")
        return self._booster

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        if not queries:
            return {}
        features = self.builder.build(queries, show_progress=show_progress)
        scores = self.booster.predict(features.X, num_threads=0) if len(features.X) else np.zeros(0)
        return rank(features, scores, self.builder.ids, k)
