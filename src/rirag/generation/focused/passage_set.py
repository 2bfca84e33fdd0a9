"""The passage-set decision: which of a question's passages its answer needs, as a set (issue 45).

The lead passage (the passage gate's best: retrieval score plus weighted best-unit score) is always cited. Every
other passage with a usable unit is described by :data:`PASSAGE_FEATURES`, measured against the lead and against
the question:

* how well its best unit answers (the unit scorer's probability, against the lead's; its cosine with the question);
* what it adds: the share of the question's terms it holds that the lead does not (``novelty``), and how much of
  the question it covers;
* whether it repeats the lead (the rapidfuzz token-set ratio of their best units);
* where retrieval put it (normalised score, rank) and whether it is linked to the lead by a cross-reference (it
  refers to the lead or the lead refers to it; :class:`rirag.xref.graph.ReferenceGraph`, when the answerer has one);
* where it sits in the rulebook against the lead (when the passages' labels are known): in the same document, and
  how many leading parts of its label it shares with the lead's (``3.2.1`` and ``3.2.4`` share two): the rules a
  question needs are often one section's neighbours;

and a logistic model (``passage_set.json``, written by ``train/passage_set.py``, learned on ObliQA ``train``
questions and ObliQA-MP validation, never a test split) gives the probability that it is a gold passage of the
question. Passages at or above the model's threshold are cited after the lead, most probable first, at most
``max_passages`` in all. A passage linked to the lead by a cross-reference is held to the model's
``linked_threshold`` instead (when it has one; at most the threshold): the lowest at which the answers of no kind of
question it was fitted on get less precise than citing the lead alone, so a rule and the rule it cites are quoted
together whenever the data allow it. The decision is the same for every corpus (ADGM, PRA, an ingested one): nothing
in it names a rulebook.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping, Sequence

import numpy as np

from rirag.errors import DataError
from rirag.generation.focused.scorer import FEATURES, ScoredUnit, read_frozen

#: The frozen decision (weights, feature names, threshold, provenance) written by train/passage_set.py.
PASSAGE_SET_FILE = Path(__file__).with_name("passage_set.json")

#: Features of a passage other than the lead, in column order.
PASSAGE_FEATURES = ("best_score", "best_score_ratio", "best_score_gap", "cosine", "cosine_gap", "retrieval_score",
                    "inverse_rank", "above_lead", "question_coverage", "novelty", "lead_repeat", "linked",
                    "strong_passages", "obligation", "log_words", "same_document", "shared_label")

#: A passage label's parts (``"6.2.2.Guidance.1."`` -> 6, 2, 2, Guidance, 1; ``"Part 6.Chapter 2.73.(2)"`` -> Part 6,
#: Chapter 2, 73, 2).
_LABEL_PARTS = re.compile(r"[^.()\[\]]+")

#: Shared label parts count up to this many (deeper agreement says no more).
MAX_SHARED_LABEL = 4


def shared_label(a: str, b: str) -> int:
    """How many leading parts the labels ``a`` and ``b`` share (:data:`_LABEL_PARTS`), at most
    :data:`MAX_SHARED_LABEL`."""
    n = 0
    for x, y in zip(_LABEL_PARTS.findall(a), _LABEL_PARTS.findall(b)):
        if x.strip().lower() != y.strip().lower() or n == MAX_SHARED_LABEL:
            break
        n += 1
    return n

_COLUMN = {name: i for i, name in enumerate(FEATURES)}


@dataclass(frozen=True)
class Candidates:
    """One question's passages other than the lead, each described by :data:`PASSAGE_FEATURES`."""

    lead: int
    passages: tuple[int, ...]
    x: np.ndarray
    #: Each candidate's best unit (what citing the passage would quote first).
    best: tuple[ScoredUnit, ...]


def _terms(question: str, passages: Sequence[str]) -> tuple[set[int], list[set[int]]]:
    """The question's terms and each passage's (stemmed, stopwords out) as ids of an index over the passages."""
    from rirag.retrieval.bm25 import BM25Index

    texts = [p if p.strip() else "." for p in passages]
    index = BM25Index().index([str(i) for i in range(len(texts))], texts, log=False)
    ids = index.token_ids([question, *texts])
    return set(ids[0]), [set(t) for t in ids[1:]]


def candidates(question: str, passages: Sequence[str], scored: Sequence[ScoredUnit], x: np.ndarray, lead: int,
               usable: Collection[int] | None = None,
               links: Collection[tuple[int, int]] = (),
               labels: Sequence[tuple[int, str] | None] | None = None) -> Candidates:
    """The candidates of one question: every passage (index into ``passages``) but ``lead`` that has a unit in
    ``usable`` (indices into ``scored``; default all), with its features. ``x``: the unit features of ``scored``
    (:func:`rirag.generation.focused.scorer.unit_features`); ``links``: ``(i, j)`` when passage ``i`` refers to
    passage ``j``; ``labels``: each passage's (document id, passage label), None where unknown (its place in the
    rulebook then counts as nothing shared)."""
    from rapidfuzz import fuzz

    usable = range(len(scored)) if usable is None else usable
    best: dict[int, int] = {}
    cosine: dict[int, float] = {}
    for i in usable:
        p = scored[i].unit.passage
        if p not in best or scored[i].score > scored[best[p]].score:
            best[p] = i
        cosine[p] = max(cosine.get(p, -1.0), float(x[i, _COLUMN["cosine"]]))
    if lead not in best:
        return Candidates(lead, (), np.zeros((0, len(PASSAGE_FEATURES))), ())
    q_terms, p_terms = _terms(question, passages)
    lead_unit = scored[best[lead]]
    top = max(scored[i].score for i in best.values())
    top_cosine = max(cosine.values())
    strong = sum(scored[i].score >= 0.5 for i in best.values())
    linked = {(a, b) for a, b in links} | {(b, a) for a, b in links}
    labels = list(labels) if labels is not None and len(labels) == len(passages) else [None] * len(passages)
    lead_label = labels[lead]
    rows, order, units = [], [], []
    for p, i in sorted(best.items()):
        if p == lead:
            continue
        s = scored[i]
        covered = q_terms & p_terms[p]
        rows.append((s.score, s.score / top if top > 0 else 0.0, top - s.score, cosine[p], top_cosine - cosine[p],
                     s.passage_score, 1.0 / (p + 1), float(p < lead),
                     len(covered) / len(q_terms) if q_terms else 0.0,
                     len(covered - p_terms[lead]) / len(q_terms) if q_terms else 0.0,
                     fuzz.token_set_ratio(s.unit.text, lead_unit.unit.text) / 100.0, float((p, lead) in linked),
                     float(strong), float(x[i, _COLUMN["obligation"]]), float(np.log1p(s.unit.words)),
                     *_place(labels[p], lead_label)))
        order.append(p)
        units.append(s)
    x_out = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(PASSAGE_FEATURES))
    return Candidates(lead, tuple(order), x_out, tuple(units))


def _place(label: tuple[int, str] | None, lead: tuple[int, str] | None) -> tuple[float, float]:
    """(same document, shared label parts) of a passage against the lead; nothing known: (0, 0)."""
    if label is None or lead is None or label[0] != lead[0]:
        return 0.0, 0.0
    return 1.0, float(shared_label(str(label[1]), str(lead[1])))


@functools.lru_cache(maxsize=4)
def load_passage_set(path: str | None = None) -> dict:
    """The frozen decision (cached). Missing or malformed: a clear error naming the file."""
    path = Path(path) if path else PASSAGE_SET_FILE
    data = read_frozen(path, "the passage-set decision",
                       "python train/passage_set.py --config recipes/passage_set/offline.yaml",
                       ("features", "mean", "scale", "coef", "intercept", "threshold", "max_passages"))
    if list(data["features"]) != list(PASSAGE_FEATURES):
        raise DataError(f"{path}: features {data['features']} differ from this version's {PASSAGE_FEATURES}; "
                        "retrain it")
    return data


def probabilities(c: Candidates, model: Mapping) -> np.ndarray:
    """Each candidate's probability of being a gold passage of the question."""
    if not len(c.passages):
        return np.zeros(0)
    mean, scale = np.asarray(model["mean"]), np.asarray(model["scale"])
    z = ((c.x - mean) / np.where(scale > 0, scale, 1.0)) @ np.asarray(model["coef"]) + float(model["intercept"])
    return 1.0 / (1.0 + np.exp(-z))


def decide(c: Candidates, model: Mapping, threshold: float | None = None, max_passages: int | None = None,
           linked_threshold: float | None = None) -> list[int]:
    """The passages to cite: the lead, then the candidates whose probability reaches the threshold (the model's
    unless given; for a candidate linked to the lead, the model's ``linked_threshold`` when it has one, never above
    the threshold), most probable first, at most ``max_passages`` in all (the model's unless given)."""
    threshold = float(model["threshold"] if threshold is None else threshold)
    if linked_threshold is None:
        linked_threshold = float(model.get("linked_threshold", threshold))
    linked_threshold = min(linked_threshold, threshold)
    most = int(model["max_passages"] if max_passages is None else max_passages)
    probs = probabilities(c, model)
    link = PASSAGE_FEATURES.index("linked")
    chosen = sorted((i for i in range(len(probs))
                     if probs[i] >= (linked_threshold if c.x[i, link] > 0 else threshold)), key=lambda i: -probs[i])
    return [c.lead, *(c.passages[i] for i in chosen)][:max(1, most)]
