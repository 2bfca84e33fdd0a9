"""RePASs pure functions on hand-computed matrices, including each quirk of the reference code."""

import numpy as np
import pytest

from rirag.scoring import core
from rirag.scoring.constants import COVERAGE_THRESHOLD, ROUND_DECIMALS


def test_constants_are_the_references():
    assert COVERAGE_THRESHOLD == 0.7 and ROUND_DECIMALS == 5


def test_reduce_takes_max_over_passage_rows_then_mean_over_answer_columns():
    # rows = passage sentences, columns = answer sentences
    m = np.array([[0.1, 0.9, 0.2],
                  [0.6, 0.2, 0.3]])
    # column maxima 0.6, 0.9, 0.3 -> mean 0.6 (the transpose would give mean(0.9, 0.6) = 0.75)
    assert core.reduce_nli_matrix(m) == pytest.approx(0.6)
    assert core.reduce_nli_matrix(m.T) == pytest.approx(0.75)


def test_reduce_rounds_to_five_decimals():
    m = np.array([[0.123456, 0.0], [0.0, 0.2]])  # mean(0.123456, 0.2) = 0.161728
    assert core.reduce_nli_matrix(m) == 0.16173


def test_reduce_empty_matrix_is_zero():
    assert core.reduce_nli_matrix(np.zeros((0, 3))) == 0.0
    assert core.reduce_nli_matrix(np.zeros((4, 0))) == 0.0


def test_reduce_rejects_non_matrix():
    with pytest.raises(ValueError, match="2-D"):
        core.reduce_nli_matrix(np.zeros((2, 2, 2)))


def test_coverage_threshold_is_strict_and_top_label_required():
    e = 1  # entailment index
    probs = np.array([
        [[0.1, 0.7, 0.2], [0.0, 0.71, 0.29]],   # 0.7 is not > 0.7; 0.71 is
        [[0.5, 0.45, 0.05], [0.3, 0.6, 0.1]],    # neither above 0.7
    ])
    hits = core.coverage_hits(probs, e)
    assert hits.tolist() == [[False, True], [False, False]]
    assert core.obligation_coverage(hits) == 0.5
    # with a threshold below 0.5 the top-label rule matters: 0.45 entailment loses to 0.5 contradiction
    low = core.coverage_hits(probs, e, threshold=0.4)
    assert low.tolist() == [[True, True], [False, True]]
    assert core.coverage_hits(probs, e, threshold=0.4, require_top_label=False).tolist() == [[True, True], [True, True]]


def test_coverage_uses_the_given_label_index():
    probs = np.array([[[0.9, 0.05, 0.05]]])
    assert core.coverage_hits(probs, 0).tolist() == [[True]]
    assert core.coverage_hits(probs, 1).tolist() == [[False]]


def test_obligation_coverage_counts_an_obligation_once():
    hits = np.array([[True, True, False], [False, False, False], [False, True, False]])
    assert core.obligation_coverage(hits) == pytest.approx(2 / 3)


def test_obligation_coverage_without_obligations_is_zero():
    assert core.obligation_coverage(np.zeros((0, 3), dtype=bool)) == 0
    assert core.obligation_coverage(np.zeros((2, 0), dtype=bool)) == 0.0


def test_composite_rounds_only_the_composite():
    # OC = 1/3 is used unrounded: (1/3 + 0.5 - 0.1 + 1) / 3 = 0.5777... -> 0.57778
    assert core.composite_score(1 / 3, 0.5, 0.1) == 0.57778
    # a rounded OC (0.33333) would give 0.57778 too; this case separates them: (2/3 + 0 - 0 + 1)/3 = 0.555556
    assert core.composite_score(2 / 3, 0.0, 0.0) == 0.55556
    assert core.composite_score(0, 0, 0) == 0.33333  # an empty passage text
    assert core.composite_score(1, 1, 0) == 1.0


def test_score_item_from_matrices():
    e = np.array([[0.9, 0.1], [0.2, 0.3]])
    c = np.array([[0.05, 0.6], [0.1, 0.1]])
    hits = np.array([[True, False], [False, False]])
    out = core.score_item(e, c, hits)
    assert out == {"entailment": 0.6, "contradiction": 0.35, "obligation_coverage": 0.5,
                   "repass": round((0.5 + 0.6 - 0.35 + 1) / 3, 5)}


def test_softmax_matches_definition_and_keeps_dtype():
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    p = core.softmax(logits)
    assert p.dtype == np.float32
    expected = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(p[0], expected, rtol=1e-6)
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-6)
