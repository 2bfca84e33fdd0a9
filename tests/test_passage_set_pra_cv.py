"""benchmarks/passage_set_pra_cv.py: the rule that picks a fold's setting from answers to the other folds, which must
respect the precision floor, prefer cite-both, and fall back to the narrowest setting when nothing keeps the floor."""

from __future__ import annotations

from _scripts import load_script

bench = load_script("benchmarks/passage_set_pra_cv.py")

# four questions; per setting each answer's (gold-citation precision or None when it cites nothing, cites both)
PER_SETTING = {
    (0.3, 0.1, 4): [(0.5, True), (0.5, True), (1.0, True), (0.5, False)],   # both 0.75, precision 0.625
    (0.5, 0.1, 3): [(1.0, True), (0.5, True), (1.0, False), (1.0, False)],  # both 0.50, precision 0.875
    (0.5, 0.2, 2): [(1.0, False), (1.0, False), (1.0, True), (None, False)],  # both 0.25, precision 1.0 (3 cite)
}


def test_the_mean_leaves_out_answers_that_cite_nothing():
    precision, both = bench._mean_over(PER_SETTING[(0.5, 0.2, 2)], [0, 1, 2, 3])
    assert precision == 1.0 and both == 0.25


def test_the_floor_rules_out_a_wider_setting_with_more_cite_both():
    assert bench.answer_setting(PER_SETTING, [0, 1, 2, 3], 0.6) == (0.3, 0.1, 4)
    assert bench.answer_setting(PER_SETTING, [0, 1, 2, 3], 0.75) == (0.5, 0.1, 3)  # 0.625 is under the floor


def test_only_the_given_questions_choose():
    # on question 2 alone the middle setting does not cite both; the other two do, at precision 1.0, and the tie
    # goes to the higher threshold
    assert bench.answer_setting(PER_SETTING, [2], 0.75) == (0.5, 0.2, 2)


def test_nothing_keeps_the_floor_the_narrowest_setting_answers():
    assert bench.answer_setting(PER_SETTING, [0, 1], 1.01) == (0.5, 0.2, 2)
