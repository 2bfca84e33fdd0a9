"""Long coverage inputs: scored in full where the model can take them (as the reference's untruncated pipeline),
otherwise cut on the answer side only, never the obligation, and counted."""

import pytest

from _scoring_fixtures import NLI_LABELS, all_obligations_model, tiny_bert, tiny_relative_deberta
from rirag.scoring.constants import COVERAGE_JOIN
from rirag.scoring.repass import RePASsScorer

OBLIGATION = "Client money must be held separately."
LONG_ANSWER = "Firms must keep " + "antimoneylaundering " * 1000 + "records."  # one sentence, > 20,000 chars


def test_long_answer_sentence_is_scored_in_full_like_the_reference():
    from rirag.scoring.reference_impl import ReferenceRePASs

    assert len(LONG_ANSWER) >= 20_000
    models = dict(nli_model=tiny_bert("nli", NLI_LABELS, seed=1), coverage_model=tiny_relative_deberta("rel_cov"),
                  obligation_model=all_obligations_model())
    scorer = RePASsScorer(**models, device="cpu", show_progress=False)
    ours = scorer.score([LONG_ANSWER], [OBLIGATION])
    # the reference-structured loop feeds the untruncated text to a transformers pipeline, as the reference does
    expected = ReferenceRePASs(**models, device="cpu").score_item(LONG_ANSWER, OBLIGATION)
    assert {k: ours["per_item"][k][0] for k in expected} == pytest.approx(expected, abs=1e-5)
    assert ours["truncations"]["coverage"] == 0 and ours["truncated_items"] == []

    # what the coverage model saw: the whole text, obligation included (a cut at 64 positions would drop it)
    cov = scorer._classifiers[f"coverage:{models['coverage_model']}"]
    assert cov.max_length is None
    enc, code = cov._encode_joined(LONG_ANSWER, OBLIGATION)
    full = cov.tokenizer(f"{LONG_ANSWER}{COVERAGE_JOIN}{OBLIGATION}")["input_ids"]
    assert code == 0 and enc["input_ids"] == full and len(full) > 1000
    tail = cov.tokenizer(OBLIGATION, add_special_tokens=False)["input_ids"]
    assert full[-len(tail) - 1 : -1] == tail


def test_absolute_position_model_cuts_the_answer_never_the_obligation():
    coverage = tiny_bert("coverage", NLI_LABELS, seed=2, head_scale=200.0)  # 64 absolute positions
    models = dict(nli_model=tiny_bert("nli", NLI_LABELS, seed=1), coverage_model=coverage,
                  obligation_model=all_obligations_model())
    scorer = RePASsScorer(**models, device="cpu", show_progress=False)
    out = scorer.score(["Firms keep records.", LONG_ANSWER], [OBLIGATION, OBLIGATION])
    assert out["truncations"]["coverage"] == 1 and out["truncations"]["coverage_obligation"] == 0
    assert out["truncated_items"] == [1]
    assert out["n_scored"] == 2

    cov = scorer._classifiers[f"coverage:{coverage}"]
    enc, code = cov._encode_joined(LONG_ANSWER, OBLIGATION)
    tail = cov.tokenizer(f"{COVERAGE_JOIN.strip()} {OBLIGATION}", add_special_tokens=False)["input_ids"]
    assert code == 1 and len(enc["input_ids"]) == 64
    assert enc["input_ids"][-len(tail) - 1 : -1] == tail  # "[SEP] <obligation>" kept whole, then the final [SEP]
    assert enc["input_ids"][0] == cov.tokenizer.cls_token_id
