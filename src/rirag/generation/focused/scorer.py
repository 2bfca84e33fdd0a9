"""The focused answerer's frozen scorer: the unit features (:data:`FEATURES`) and the answerability features
(:data:`ANSWERABILITY_FEATURES`) of one question, the scorer file (``focused_scorer.json``, written by
``train/focused_scorer.py``) that weighs them, and the logistic model applied to them
(:mod:`rirag.generation.focused.selection` selects the units)."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rirag.errors import DataError
from rirag.retrieval.bm25 import BM25Index
from rirag.retrieval.lexical import LEXICAL_FEATURES, LexicalOverlap
from rirag.text.units import Unit

#: The frozen scorer (weights, feature names, thresholds, provenance) written by train/focused_scorer.py.
SCORER_FILE = Path(__file__).with_name("focused_scorer.json")

#: Unit features, in column order.
FEATURES = ("cosine", "cosine_gap", "passage_cosine_gap", "bm25_rel", "query_coverage", "idf_coverage",
            "bigram_coverage", "trigram_coverage", "unit_coverage", "retrieval_score", "retrieval_score_gap",
            "inverse_rank", "top_passage", "obligation", "first_unit", "log_words", "is_list", "log_passages")
#: Answerability features (per question: the best unit's question match), in column order.
ANSWERABILITY_FEATURES = ("max_cosine", "max_query_coverage", "max_idf_coverage", "max_bigram_coverage",
                          "max_bm25_raw", "mean_top3_cosine")

ObligationFn = Callable[[list[str]], list[bool]]
EncodeFn = Callable[[list[str]], np.ndarray]


def read_frozen(path: Path, what: str, command: str, fields: Sequence[str]) -> dict:
    """A frozen model file of the focused answerer (``what``, made by ``command``): its JSON, holding ``fields``.
    Missing or malformed: a clear error naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise DataError(f"{path}: {what} is missing; make it with `{command}`") from err
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not JSON ({err.msg})") from err
    for key in fields:
        if key not in data:
            raise DataError(f"{path}: missing field {key!r}")
    return data


@functools.lru_cache(maxsize=4)
def load_scorer(path: str | None = None) -> dict:
    """The frozen scorer JSON (cached). Missing or malformed: a clear error naming the file."""
    path = Path(path) if path else SCORER_FILE
    data = read_frozen(path, "the focused answerer's scorer",
                       "python train/focused_scorer.py --config recipes/focused/offline.yaml",
                       ("unit", "answerability", "selection"))
    for key, names in (("unit", FEATURES), ("answerability", ANSWERABILITY_FEATURES)):
        if list(data[key].get("features", [])) != list(names):
            raise DataError(f"{path}: {key} features {data[key].get('features')} differ from this version's "
                            f"{names}; retrain it")
    return data


def _logistic(x: np.ndarray, model: dict) -> np.ndarray:
    mean, scale = np.asarray(model["mean"]), np.asarray(model["scale"])
    z = ((x - mean) / np.where(scale > 0, scale, 1.0)) @ np.asarray(model["coef"]) + float(model["intercept"])
    return 1.0 / (1.0 + np.exp(-z))


def _bm25_and_lexical(question: str, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """BM25 of the question against each text (an index over these texts) and the lexical coverage features."""
    index = BM25Index().index([str(i) for i in range(len(texts))], texts, log=False)
    bm25 = np.asarray(index.score_all({"q": question}), dtype=np.float64).reshape(-1)
    lexical = LexicalOverlap(index, texts).features(question, list(range(len(texts))))
    return bm25, lexical


def unit_features(question: str, units: Sequence[Unit], scores: Sequence[float], n_passages: int,
                  encode: EncodeFn, is_obligation: ObligationFn) -> tuple[np.ndarray, np.ndarray]:
    """(unit features ``(len(units), len(FEATURES))``, answerability features ``(len(ANSWERABILITY_FEATURES),)``)
    for one question. ``scores``: each passage's retrieval score (normalised to [0, 1]), in passage order."""
    texts = [u.text for u in units]
    emb = encode([question, *texts])
    cos = emb[1:] @ emb[0]
    bm25, lexical = _bm25_and_lexical(question, texts)
    lex = {name: lexical[:, i] for i, name in enumerate(LEXICAL_FEATURES)}
    passage_best = {}
    for u, c in zip(units, cos):
        passage_best[u.passage] = max(passage_best.get(u.passage, -1.0), float(c))
    top_score = max(scores) if len(scores) else 0.0
    obligations = is_obligation(texts)
    x = np.zeros((len(units), len(FEATURES)), dtype=np.float64)
    for row, u in enumerate(units):
        s = float(scores[u.passage]) if u.passage < len(scores) else 0.0
        x[row] = (cos[row], cos.max() - cos[row], max(passage_best.values()) - passage_best[u.passage],
                  bm25[row] / bm25.max() if bm25.max() > 0 else 0.0, lex["query_coverage"][row],
                  lex["idf_coverage"][row], lex["bigram_coverage"][row], lex["trigram_coverage"][row],
                  lex["passage_coverage"][row], s, top_score - s, 1.0 / (u.passage + 1), float(u.passage == 0),
                  float(obligations[row]), float(u.index == 0), math.log1p(u.words), float(u.is_list),
                  math.log(max(n_passages, 1)))
    top3 = np.sort(cos)[::-1][:3]
    answerability = np.array([cos.max(), lex["query_coverage"].max(), lex["idf_coverage"].max(),
                              lex["bigram_coverage"].max(), math.log1p(float(bm25.max())), float(top3.mean())])
    return x, answerability


@dataclass(frozen=True)
class ScoredUnit:
    unit: Unit
    score: float
    #: The normalised retrieval score of the unit's passage (what the passage gate adds to the unit score).
    passage_score: float = 1.0
    #: Citation numbers of other passages that state the same unit (near-duplicates), cited with it.
    also: tuple[int, ...] = ()
    #: Inline markers of followed cross-references (:mod:`rirag.generation.focused.follow`): (offset in the unit's text
    #: right after the reference, 0-based index of the passage it was followed to).
    inline: tuple[tuple[int, int], ...] = ()

    @property
    def number(self) -> int:
        """The citation number of the unit's passage (1-based)."""
        return self.unit.passage + 1

    @property
    def numbers(self) -> tuple[int, ...]:
        """Every citation number of the unit: its passage's, then its near-duplicates'."""
        return (self.number, *self.also)
