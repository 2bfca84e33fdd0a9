# Vendored for the RePASs evaluate metric from rirag.scoring.core by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""RePASs core: pure functions over NLI probability matrices (no models, no I/O).

Conventions: an NLI matrix has one row per *passage* sentence (premise) and one column per *answer* sentence
(hypothesis), as in the reference. Coverage matrices have one row per passage obligation and one column per
candidate answer sentence.
"""

from __future__ import annotations

import numpy as np

from .vendored_rirag_scoring_constants import COVERAGE_THRESHOLD, ROUND_DECIMALS


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, computed exactly as the reference does (in the logits' own dtype)."""
    logits = np.asarray(logits)
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def reduce_nli_matrix(matrix: np.ndarray, decimals: int = ROUND_DECIMALS) -> float:
    """Mean over answer sentences (columns) of the max over passage sentences (rows), rounded.

    An empty matrix (no passage sentence or no answer sentence) scores 0.0, as in the reference.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.size == 0:
        return 0.0
    if matrix.ndim != 2:
        raise ValueError(f"an NLI matrix must be 2-D (passage sentences x answer sentences), got shape {matrix.shape}")
    return float(np.round(np.mean(np.max(matrix, axis=0)), decimals))


def coverage_hits(
    probabilities: np.ndarray,
    entailment_index: int,
    threshold: float = COVERAGE_THRESHOLD,
    require_top_label: bool = True,
) -> np.ndarray:
    """Boolean matrix: does each (obligation, answer sentence) pair count as covering?

    ``probabilities`` has shape (obligations, answer sentences, labels). A pair covers when its entailment
    probability is strictly above ``threshold``; with ``require_top_label`` (the reference reads only the
    pipeline's top label) entailment must also be the arg-max label.
    """
    probabilities = np.asarray(probabilities)
    if probabilities.ndim != 3:
        raise ValueError("coverage probabilities must be 3-D (obligations, answer sentences, labels), "
                         f"got {probabilities.shape}")
    entail = probabilities[..., entailment_index]
    hits = entail > threshold
    if require_top_label:
        hits &= np.argmax(probabilities, axis=-1) == entailment_index
    return hits


def obligation_coverage(hits: np.ndarray) -> float:
    """Covered obligations / obligations, where an obligation (row) is covered by any answer sentence (column).

    No obligations gives 0 (the reference's convention); obligations but no answer sentences gives 0.0.
    """
    hits = np.asarray(hits, dtype=bool)
    if hits.ndim != 2:
        raise ValueError(f"coverage hits must be 2-D (obligations x answer sentences), got shape {hits.shape}")
    n_obligations = hits.shape[0]
    if n_obligations == 0:
        return 0
    return float(np.any(hits, axis=1).sum()) / n_obligations if hits.shape[1] else 0.0


def composite_score(obligation_coverage_score: float, entailment: float, contradiction: float,
                    decimals: int = ROUND_DECIMALS) -> float:
    """RePASs = (OC + E - C + 1) / 3, rounded (the reference rounds the composite; OC is not rounded)."""
    return float(np.round((obligation_coverage_score + entailment - contradiction + 1) / 3, decimals))


def score_item(
    entailment_matrix: np.ndarray,
    contradiction_matrix: np.ndarray,
    hits: np.ndarray,
    decimals: int = ROUND_DECIMALS,
) -> dict[str, float]:
    """All four RePASs numbers of one answer from its matrices."""
    e = reduce_nli_matrix(entailment_matrix, decimals)
    c = reduce_nli_matrix(contradiction_matrix, decimals)
    oc = obligation_coverage(hits)
    return {
        "entailment": e,
        "contradiction": c,
        "obligation_coverage": oc,
        "repass": composite_score(oc, e, c, decimals),
    }
