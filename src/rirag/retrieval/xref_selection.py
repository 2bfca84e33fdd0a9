"""Cross-reference selection: passages linked to a retrieved rule enter the ranking, and a small model decides.

A question about one rule often needs the rule it refers to, or the rule that refers to it (the PRA development
questions each need a rule and the rule it cites). :class:`XrefSelection` wraps any retriever of a corpus that has
its reference graph (:class:`rirag.xref.graph.ReferenceGraph`): for each question it takes the base run's top
:data:`~rirag.constants.XREF_SELECT_POOL` passages, adds every passage linked to one of the top
:data:`~rirag.constants.XREF_SELECT_SOURCES` (what it refers to, through references resolving to at most
:data:`~rirag.constants.XREF_SELECT_MAX_TARGETS` passages, and what refers to it), and ranks this pool by a logistic
model over the features of :data:`FEATURES`; the rest of the base run follows in its own order. The link is a
feature, not a fixed bonus: the model, trained on questions with gold passages (``train/xref_selector.py``: ObliQA's
leakage-free ``train``, ObliQA-MP validation and the PRA development questions), weighs it against the passage's own
rank and score and its overlap with the question.

Features of a (question, candidate), every one independent of the base retriever's score scale:

* ``base_log_rank``, ``base_score``, ``in_base``: log(1 + rank) in the base run (its depth + 1 when absent), the
  score min-max scaled over the run (0 when absent), and whether it is in the run at all;
* ``refers_from``, ``refers_from_log_rank``, ``refers_from_count``, ``refers_from_score``: whether a top source
  refers to it, log(1 + the best such source's rank), how many do, and that source's scaled score;
* ``refers_to``, ``refers_to_log_rank``, ``refers_to_count``: whether it refers to a top source, and the same;
* ``log_fanout``: log of the fewest passages a reference to it resolves to (0 when none);
* ``same_document``: whether it shares its document with the best source linked to it;
* ``query_coverage``: the share of the question's distinct terms (lower-cased words, English stopwords removed)
  found in the passage;
* ``log_words``: log(1 + the passage's words).

The model is a standardised logistic regression saved as JSON (:class:`SelectorModel`: names, means, scales,
weights, bias); it is small enough to read, and loads without pickle.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from rirag.constants import RUN_DEPTH, XREF_SELECT_MAX_TARGETS, XREF_SELECT_POOL, XREF_SELECT_SOURCES
from rirag.data.runs import Retriever, Run, ranked
from rirag.errors import DataError
from rirag.io import atomic_write_json, read_json

logger = logging.getLogger(__name__)

#: The selector rirag ships: fitted by ``benchmarks/xref_selection.py --save`` on every training question it names.
SHIPPED_SELECTOR = Path(__file__).with_name("xref_selector.json")
#: The features of a candidate, in column order (see the module).
FEATURES = ("base_log_rank", "base_score", "in_base",
            "refers_from", "refers_from_log_rank", "refers_from_count", "refers_from_score",
            "refers_to", "refers_to_log_rank", "refers_to_count",
            "log_fanout", "same_document", "query_coverage", "log_words")


def _terms(text: str) -> set[str]:
    from bm25s.stopwords import STOPWORDS_EN  # inside: bm25s is heavy to import

    words = ("".join(ch if ch.isalnum() else " " for ch in text.lower())).split()
    return {w for w in words if w not in STOPWORDS_EN and len(w) > 1}


@dataclass
class _Links:
    """A candidate's best link of each direction to the question's top sources."""

    from_rank: int = 0  # best rank of a top source referring to it (0: none)
    from_count: int = 0
    from_score: float = 0.0
    to_rank: int = 0  # best rank of a top source it refers to (0: none)
    to_count: int = 0
    fanout: int = 0  # fewest targets of a reference to it (0: none)
    source: str | None = None  # the best-ranked linked source, either direction
    source_rank: int = 0

    def linked(self, src: str, rank: int) -> None:
        if not self.source_rank or rank < self.source_rank:
            self.source, self.source_rank = src, rank


def _link_table(order: Sequence[tuple[str, float]], graph, corpus: Mapping, sources: int, max_targets: int,
                scaled) -> dict[str, _Links]:
    table: dict[str, _Links] = {}
    for rank, (src, score) in enumerate(order[:sources], 1):
        for link in graph.links(src):
            if len(link.targets) > max_targets:
                continue
            for t in link.targets:
                if t == src or t not in corpus:
                    continue
                row = table.setdefault(t, _Links())
                row.from_count += 1
                row.fanout = min(row.fanout or len(link.targets), len(link.targets))
                if not row.from_rank or rank < row.from_rank:
                    row.from_rank, row.from_score = rank, scaled(score)
                row.linked(src, rank)
        for referrer, link in graph.referrers(src):
            if referrer == src or referrer not in corpus or len(link.targets) > max_targets:
                continue
            row = table.setdefault(referrer, _Links())
            row.to_count += 1
            if not row.to_rank or rank < row.to_rank:
                row.to_rank = rank
            row.linked(src, rank)
    return table


def candidate_features(query: str, results: Mapping[str, float], graph, corpus: Mapping, *,
                       pool: int = XREF_SELECT_POOL, sources: int = XREF_SELECT_SOURCES,
                       max_targets: int = XREF_SELECT_MAX_TARGETS,
                       depth: int = RUN_DEPTH) -> tuple[list[str], np.ndarray]:
    """The candidates of one question (the base run's top ``pool``, then the passages linked to its top
    ``sources``) and their :data:`FEATURES` rows."""
    order = ranked(results, depth)
    if not order:
        return [], np.zeros((0, len(FEATURES)), dtype=np.float32)
    hi, lo = order[0][1], order[-1][1]

    def scaled(score: float) -> float:
        return (score - lo) / (hi - lo) if hi > lo else 1.0

    rank = {pid: i for i, (pid, _) in enumerate(order, 1)}
    links = _link_table(order, graph, corpus, sources, max_targets, scaled)
    ids = [pid for pid, _ in order[:pool]]
    pooled = set(ids)
    ids += [pid for pid in links if pid not in pooled]
    q_terms = _terms(query)
    rows = []
    for pid in ids:
        r = rank.get(pid)
        link = links.get(pid, _Links())
        p_terms = _terms(corpus[pid].text)
        same = (link.source is not None and getattr(corpus[pid], "document_id", None) is not None
                and corpus[pid].document_id == corpus[link.source].document_id)
        rows.append([
            math.log1p(r if r else depth + 1), scaled(results[pid]) if r else 0.0, float(r is not None),
            float(link.from_rank > 0), math.log1p(link.from_rank or sources + 1), float(link.from_count),
            link.from_score,
            float(link.to_rank > 0), math.log1p(link.to_rank or sources + 1), float(link.to_count),
            math.log(link.fanout) if link.fanout else 0.0, float(same),
            len(q_terms & p_terms) / len(q_terms) if q_terms else 0.0,
            math.log1p(len(corpus[pid].text.split())),
        ])
    return ids, np.asarray(rows, dtype=np.float32)


@dataclass
class SelectorModel:
    """A standardised logistic regression over :data:`FEATURES`, saved as readable JSON."""

    features: list[str]
    means: list[float]
    scales: list[float]
    weights: list[float]
    bias: float
    trained_on: dict | None = None

    def score(self, X: np.ndarray) -> np.ndarray:
        """The model's logit for each row of ``X``."""
        z = (X - np.asarray(self.means, dtype=np.float64)) / np.asarray(self.scales, dtype=np.float64)
        return z @ np.asarray(self.weights, dtype=np.float64) + self.bias

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, c: float, seed: int, trained_on: dict | None = None) -> "SelectorModel":
        """Fit on rows ``X`` with 0/1 labels ``y`` (scikit-learn's L2 logistic regression, inverse strength ``c``)."""
        from sklearn.linear_model import LogisticRegression

        means, scales = X.mean(axis=0), X.std(axis=0)
        scales[scales == 0] = 1.0
        lr = LogisticRegression(C=c, max_iter=1000, random_state=seed).fit((X - means) / scales, y)
        return cls(list(FEATURES), [float(v) for v in means], [float(v) for v in scales],
                   [float(v) for v in lr.coef_[0]], float(lr.intercept_[0]), trained_on)

    def save(self, path: str | Path) -> None:
        atomic_write_json(path, asdict(self))

    @classmethod
    def load(cls, path: str | Path) -> "SelectorModel":
        data = read_json(path)
        try:
            model = cls(**data)
        except TypeError as err:
            raise DataError(f"{path}: not a cross-reference selector ({err})") from None
        if tuple(model.features) != FEATURES or not (len(model.means) == len(model.scales) == len(model.weights)
                                                     == len(FEATURES)):
            raise DataError(f"{path}: a selector over features {model.features}, not {list(FEATURES)}: train it "
                            "again with train/xref_selector.py")
        return model


def select(results: Mapping[str, float], ids: Sequence[str], scores: np.ndarray, k: int) -> dict[str, float]:
    """The candidates ``ids`` ranked by ``scores``, then the rest of ``results`` in its own order below them, cut
    to ``k``."""
    out = {pid: float(s) for pid, s in zip(ids, scores)}
    floor = min(out.values(), default=0.0) - 1.0
    for i, (pid, _) in enumerate(ranked(results)):
        if len(out) >= k:
            break
        if pid not in out:
            out[pid] = floor - i * 1e-6
    return dict(ranked(out, k))


class XrefSelection:
    """``base``'s run re-ranked over its top passages and the passages linked to them (see the module)."""

    def __init__(self, base: Retriever, graph, model: SelectorModel, corpus: Mapping):
        self.base, self.graph, self.model, self.corpus = base, graph, model, corpus

    def rerank(self, queries: Mapping[str, str], run: Mapping[str, Mapping[str, float]], k: int = RUN_DEPTH) -> Run:
        out: Run = {}
        for q, results in run.items():
            ids, X = candidate_features(queries[q], results, self.graph, self.corpus)
            out[q] = select(results, ids, self.model.score(X) if len(ids) else np.zeros(0), k)
        return out

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        """The base retriever's run at depth :data:`~rirag.constants.RUN_DEPTH`, re-ranked, cut to ``k``."""
        run = self.base.search(queries, k=max(k, RUN_DEPTH), show_progress=show_progress)
        return self.rerank(queries, run, k)


def selection_parts(root: str | Path | None, corpus: Mapping, mode: str, selector: str | Path | None = None,
                    graph_file: str | Path | None = None) -> tuple[object, SelectorModel] | None:
    """The graph and model of cross-reference selection over the corpus folder ``root`` (its references from
    ``graph_file`` when given, else ``ROOT/xref/references.jsonl``), or None where ``mode`` is ``auto`` and there is
    no written graph (said in one line). ``on`` without a written graph resolves references on the fly (a
    :class:`DataError` where the folder has no documents either)."""
    from rirag.xref.graph import GRAPH_CONFIG, GRAPH_FILE, ReferenceGraph

    written = graph_file is not None or (root is not None and (Path(root) / GRAPH_CONFIG / GRAPH_FILE).is_file())
    if mode == "auto" and not written:
        logger.info("cross-reference selection off: %s has no reference graph (`rirag data xref --data %s` writes "
                    "it)", root or "the corpus", root or "DIR")
        return None
    if written:
        graph = ReferenceGraph(root, graph=graph_file, corpus=corpus)
    else:
        from rirag.xref.expansion import corpus_graph

        graph = corpus_graph(root, "xref_select")
    path = Path(selector) if selector else SHIPPED_SELECTOR
    if not path.is_file():
        raise DataError(f"cross-reference selector {path} not found (benchmarks/xref_selection.py --save writes one)")
    model = SelectorModel.load(path)
    logger.info("cross-reference selection: the top %d passages and those linked to the top %d, ranked by %s",
                XREF_SELECT_POOL, XREF_SELECT_SOURCES, "the shipped selector" if not selector else path)
    return graph, model
