"""RePASsScorer: orchestration (fake classifiers, hand-computed), label mapping, bad input, tiny real models."""

import numpy as np
import pytest

from _scoring_fixtures import fake_scorer, tiny_bert, tiny_deberta, tiny_models
from rirag.scoring.repass import RePASsConfig, RePASsScorer, normalise_inputs
from rirag.text.sentences import punkt_split

PASSAGE = "Firms must keep records for six years. The sky is blue. Firms must report to the regulator."


def test_reference_mode_hand_computed():
    scorer, fakes = fake_scorer("reference")
    answer = "Firms must keep records for six years. The sky is not blue."
    out = scorer.score([answer], [[PASSAGE]])
    # NLI: answer s1 entailed by passage s1 (0.9); answer s2 contradicts passage s2 (0.8).
    # E = mean(0.9, max(0.1 neutral-entail...)) -> s2 best entailment is 0.1 -> (0.9 + 0.1) / 2 = 0.5
    # C = mean(max contradiction of s1, of s2) = (0.1, 0.8) -> 0.45
    assert out["per_item"]["entailment"] == [0.5]
    assert out["per_item"]["contradiction"] == [0.45]
    # obligations in the passage: s1, s3; answer obligation sentences: s1 only; s1 covers passage s1 only
    assert out["per_item"]["obligation_coverage"] == [0.5]
    assert out["per_item"]["repass"] == [round((0.5 + 0.5 - 0.45 + 1) / 3, 5)]
    # the coverage model saw single "<answer> [SEP] <obligation>" texts, never pairs
    cov_inputs = fakes["coverage"].calls[0]
    assert all(b is None and " [SEP] " in a for a, b in cov_inputs)
    assert len(cov_inputs) == 2  # 2 passage obligations x 1 answer obligation sentence


def test_reference_mode_only_answer_obligation_sentences_can_cover():
    from _scoring_fixtures import words

    def lenient(premise, hypothesis):  # coverage ignores 'must': "Firms keep records." covers the obligation
        if hypothesis is None:
            premise, hypothesis = premise.split(" [SEP] ")
        return [0.05, 0.9, 0.05] if words(hypothesis) - {"must"} <= words(premise) else [0.1, 0.1, 0.8]

    passage = "Firms must keep records. The sky is blue."
    plain = "Firms keep records."  # not an obligation sentence (no 'must')
    ref, _ = fake_scorer("reference", coverage_rule=lenient)
    paper, _ = fake_scorer("paper", coverage_rule=lenient)
    assert ref.score([plain], [passage])["per_item"]["obligation_coverage"] == [0.0]
    assert paper.score([plain], [passage])["per_item"]["obligation_coverage"] == [1.0]
    # an obligation sentence in the answer covers in both modes
    assert ref.score(["Firms must keep records."], [passage])["per_item"]["obligation_coverage"] == [1.0]


def test_paper_mode_feeds_coverage_pairs_answer_first():
    scorer, fakes = fake_scorer("paper")
    scorer.score(["The sky is blue. Firms must keep records for six years."], [[PASSAGE]])
    cov_inputs = [x for call in fakes["coverage"].calls for x in call]
    # answer sentence 1 covers neither obligation, so sentence 2 is tried for both: 2 rounds, 4 pairs,
    # each (premise=answer sentence, hypothesis=obligation)
    assert len(fakes["coverage"].calls) == 2 and len(cov_inputs) == 4
    assert ("The sky is blue.", "Firms must keep records for six years.") in cov_inputs


def test_reference_joins_passages_with_a_space_paper_splits_each():
    passages = ["Firms must keep records", "for six years."]  # no period at the end of the first passage
    ref, ref_fakes = fake_scorer("reference")
    paper, paper_fakes = fake_scorer("paper")
    ref.score(["Firms keep records."], [passages])
    paper.score(["Firms keep records."], [passages])
    assert {p for p, _ in ref_fakes["nli"].calls[0]} == {"Firms must keep records for six years."}
    assert {p for p, _ in paper_fakes["nli"].calls[0]} == set(passages)


def test_coverage_stops_trying_candidates_once_covered():
    scorer, fakes = fake_scorer("paper")
    out = scorer.score(["Firms must keep records for six years. The sky is blue."], [[PASSAGE]])
    # obligation 1 is covered by answer sentence 1 in round 1; obligation 2 needs round 2 (and stays uncovered)
    assert [len(c) for c in fakes["coverage"].calls] == [2, 1]
    assert out["per_item"]["obligation_coverage"] == [0.5]


def test_pairs_are_deduplicated_across_answers():
    scorer, fakes = fake_scorer("reference")
    out = scorer.score(["The sky is blue.", "The sky is blue.", "Firms must keep records for six years."],
                       [PASSAGE, PASSAGE, PASSAGE])
    assert len(fakes["nli"].calls) == 1  # one batched call for all answers
    assert len(fakes["nli"].calls[0]) == 3 * 2  # 3 passage sentences x 2 unique answer sentences
    assert out["per_item"]["repass"][0] == out["per_item"]["repass"][1]
    assert out["n_scored"] == 3


def test_empty_answers_are_skipped_and_means_ignore_them():
    scorer, _ = fake_scorer()
    out = scorer.score(["", None, "   ", "Firms must keep records for six years."], [PASSAGE] * 4)
    assert out["skipped"] == [0, 1, 2]
    assert out["per_item"]["repass"][:3] == [None, None, None]
    assert out["repass"] == out["per_item"]["repass"][3]
    nothing = scorer.score([""], [PASSAGE])
    assert nothing["repass"] is None and nothing["n_scored"] == 0


def test_empty_passages_score_one_third():
    scorer, _ = fake_scorer()
    out = scorer.score(["Firms must keep records."], [[]])
    assert out["per_item"] == {"entailment": [0.0], "contradiction": [0.0], "obligation_coverage": [0],
                               "repass": [0.33333]}


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="same length"):
        normalise_inputs(["a", "b"], [["p"]])
    with pytest.raises(TypeError, match=r"predictions\[1\]"):
        normalise_inputs(["a", 3], [["p"], ["q"]])
    with pytest.raises(TypeError, match=r"passages\[0\]\[1\]"):
        normalise_inputs(["a"], [["p", 7]])
    with pytest.raises(TypeError, match=r"passages\[0\]"):
        normalise_inputs(["a"], [42])
    with pytest.raises(ValueError, match="mode"):
        RePASsConfig(mode="fast")


def test_single_string_inputs_are_accepted_and_not_mutated():
    passages = [["x.", "y."]]
    snapshot = [list(p) for p in passages]
    assert normalise_inputs("answer", "one passage") == [("answer", ["one passage"])]
    assert normalise_inputs(["a"], ["one passage"]) == [("a", ["one passage"])]
    normalise_inputs(["a"], passages)
    assert passages == snapshot


def test_label_indices_come_from_id2label_tiny_deberta():
    # label order differs from the usual one and the head always says "entailment" (index 0 here)
    order = ((0, "entailment"), (1, "neutral"), (2, "contradiction"))
    judge = tiny_deberta("deberta_entail", order, bias=(8.0, 0.0, 0.0))
    obligation = tiny_bert("obl_all", ((0, "obligation"), (1, "non-obligation")), bias=(9.0, -9.0), head_scale=0.0)
    scorer = RePASsScorer(nli_model=judge, coverage_model=judge, obligation_model=obligation, show_progress=False,
                          device="cpu")
    out = scorer.score(["Firms must keep records. It is blue."], [PASSAGE])
    p = np.exp(8.0) / (np.exp(8.0) + 2)
    assert out["entailment"] == pytest.approx(round(p, 5))   # fixed positions (1 = entailment) would give ~0.0003
    assert out["contradiction"] == pytest.approx(round(1 / (np.exp(8.0) + 2), 5))
    assert out["obligation_coverage"] == 1.0  # every sentence is an obligation (index 0) and entailed


def test_overlong_sentences_are_truncated_not_crashed():
    models = tiny_models()
    scorer = RePASsScorer(**models, show_progress=False, device="cpu", batch_size=4)
    long_sentence = " ".join(["firms must keep records"] * 200) + "."
    out = scorer.score([long_sentence, "Firms must keep records."], [[long_sentence], [long_sentence + " " + PASSAGE]])
    assert out["n_scored"] == 2
    assert all(0.0 <= v <= 1.0 for v in out["per_item"]["repass"])


def test_fast_scorer_matches_reference_loop_on_tiny_models():
    from rirag.scoring.reference_impl import ReferenceRePASs

    models = tiny_models()
    answers = [
        "Firms must keep records for six years. The sky is blue.",
        "An authorised person must notify the regulator within six days. Client money is held separately.",
        "It is not green.",
        "Firms must comply with this rule. Mr. Smith agreed. The grass is green.",
        "",
    ]
    passages = [
        [PASSAGE, "Client money must be held separately."],
        "An authorised person must notify the FSRA within days. It is green.",
        [PASSAGE],
        ["Firms must comply with the rule.", "A firm should report to the regulator. Mr. Smith agreed."],
        [PASSAGE],
    ]
    fast = RePASsScorer(**models, show_progress=False, device="cpu", batch_size=3).score(answers, passages)
    ref = ReferenceRePASs(**models, device="cpu")
    for i, (a, p) in enumerate(zip(answers, passages)):
        expected = ref.score_item(a, p)
        if expected is None:
            assert i in fast["skipped"]
            continue
        for k, v in expected.items():
            assert fast["per_item"][k][i] == pytest.approx(v, abs=1.1e-5), (i, k)
    # the tiny models are peaky enough that coverage is decided both ways somewhere
    assert len({v for v in fast["per_item"]["obligation_coverage"] if v is not None}) >= 1


def test_score_dataset_single_process_matches_score():
    from datasets import Dataset

    scorer, _ = fake_scorer()
    answers = ["Firms must keep records for six years.", "", "The sky is not blue."]
    ds = Dataset.from_dict({"Answer": answers, "RetrievedPassages": [[PASSAGE]] * 3})
    assert scorer.score_dataset(ds) == scorer.score(answers, [[PASSAGE]] * 3)
    with pytest.raises(KeyError, match="no column"):
        scorer.score_dataset(ds, answer_column="answer")


def test_punkt_splitter_keeps_abbreviations():
    assert punkt_split("Mr. Smith agreed. The U.S. rule applies.") == ("Mr. Smith agreed.", "The U.S. rule applies.")
    assert punkt_split("Firms must comply with Rule 3.2.1. The sky is blue.") == (
        "Firms must comply with Rule 3.2.1.", "The sky is blue.")
    assert punkt_split("") == ()
