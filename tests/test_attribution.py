"""Attribution metrics on hand-made answers with exact expected values (a word-overlap stand-in for the judge),
and once through the real loading path with a tiny NLI classifier from a config."""

from __future__ import annotations

import json

import pytest

from rirag.generation.prompts import NO_ANSWER
from rirag.scoring.attribution import AttributionConfig, AttributionScorer, copy_ratio, score_answers_file


def _overlap_judge(pairs):
    """Entails when every word of the hypothesis occurs in the premise."""
    return [set(h.lower().strip(".").split()) <= set(p.lower().replace(".", "").split()) for p, h in pairs]


PASSAGES = ["firms must keep records for six years.", "the regulator may ask for a report."]


def test_precision_recall_uncited_invalid_on_a_hand_made_answer():
    answer = "Firms must keep records [1]. The regulator may ask [1][2]. Reports are yearly. Records [3]."
    result = AttributionScorer(entails=_overlap_judge).score([answer], [PASSAGES])
    # citations: s0→1 (supports), s1→1 (no), s1→2 (supports), s3→3 (invalid) → precision 2/4
    assert result["citation_precision"] == pytest.approx(2 / 4)
    # sentences supported: s0, s1 of 4 → recall 0.5; uncited: s2 → 0.25
    assert result["citation_recall"] == pytest.approx(0.5)
    assert result["uncited_share"] == pytest.approx(0.25)
    assert result["invalid_citations_total"] == 1


def test_skips_empty_and_abstentions_and_averages_over_defined_items():
    answers = ["", NO_ANSWER, "Firms must keep records [1].", "No citation at all."]
    result = AttributionScorer(entails=_overlap_judge).score(answers, [PASSAGES] * 4)
    assert result["skipped"] == [0] and result["abstained"] == [1] and result["n_scored"] == 3
    assert result["per_item"]["citation_precision"] == [None, None, 1.0, None]
    assert result["per_item"]["citation_recall"] == [None, None, 1.0, 0.0]
    assert result["citation_recall"] == pytest.approx(0.5)
    assert result["per_item"]["uncited_share"][3] == 1.0


def test_copy_ratio_counts_tokens_in_spans_of_eight_or_more():
    passage = "an authorised person must maintain records of every transaction for at least six years"
    copied = "An Authorised Person must maintain records of every transaction [1]."  # 9 tokens, all copied
    assert copy_ratio(copied, [passage]) == 1.0
    seven = "authorised person must maintain records of every"  # 7 consecutive tokens: below the span
    assert copy_ratio(seven, [passage]) == 0.0
    mixed = "In short, an authorised person must maintain records of every transaction, we think."
    # 13 tokens: "in short" + 9 copied + "we think" → 9/13
    assert copy_ratio(mixed, [passage]) == pytest.approx(9 / 13)
    assert copy_ratio("", [passage]) == 0.0
    # the span must come from one passage, not straddle two
    assert copy_ratio("a b c d e f g h", ["a b c d", "e f g h"]) == 0.0


def test_answers_file_and_real_nli_loading(tmp_path):
    """A tiny NLI classifier on disk whose head always says 'entailment' (labels read from id2label)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from tests.tiny_encoder import write_vocab

    folder = tmp_path / "nli"
    vocab = write_vocab(folder)
    id2label = {0: "contradiction", 1: "neutral", 2: "entailment"}
    config = BertConfig(vocab_size=len(vocab.read_text().split()), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=37, max_position_embeddings=128,
                        id2label=id2label, label2id={v: k for k, v in id2label.items()})
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 0.0, 3.0]))
    model.save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(folder)
    records = [
        {"QuestionID": "a", "Question": "q", "RetrievedPassages": PASSAGES, "RetrievedIDs": ["x", "y"],
         "Answer": "Firms must keep records [1]. Uncited."},
        {"QuestionID": "b", "Question": "q", "RetrievedPassages": PASSAGES, "RetrievedIDs": ["x", "y"],
         "Answer": "Wrong number [5]."},
    ]
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(records))
    result = score_answers_file(str(path), AttributionScorer(AttributionConfig(nli_model=str(folder),
                                                                               show_progress=False)))
    assert result["per_question"]["a"]["citation_precision"] == 1.0
    assert result["per_question"]["a"]["citation_recall"] == 0.5
    assert result["per_question"]["b"]["citation_precision"] == 0.0  # an invalid citation supports nothing
    assert result["invalid_citations_total"] == 1


def test_long_passages_are_judged_in_sentence_windows():
    """A citation to a long passage is supported by its last sentence although the whole would be truncated."""
    from rirag.scoring.attribution import PREMISE_MAX_CHARS, premise_windows

    filler = " ".join(f"Sentence number {i} says nothing." for i in range(80))
    passage = f"{filler} Firms must keep records for six years."
    windows = premise_windows(passage)
    assert len(passage) > PREMISE_MAX_CHARS and len(windows) > 1
    assert all(len(w) <= PREMISE_MAX_CHARS for w in windows) and " ".join(windows) == passage
    seen = []

    def judge(pairs):
        seen.extend(pairs)
        return _overlap_judge(pairs)

    result = AttributionScorer(entails=judge).score(["Firms must keep records [1]."], [[passage]])
    assert result["citation_precision"] == 1.0
    # premises: the windows, then each sentence (81 here), each judged once
    assert len(seen) == len(windows) + 81 and len(set(seen)) == len(seen)


def test_a_sentence_of_the_cited_passage_is_a_premise_too():
    """A judge that only accepts a premise equal to the hypothesis still supports a verbatim sentence."""
    def strict(pairs):
        return [p.strip(". ") == h.strip(". ") for p, h in pairs]

    result = AttributionScorer(entails=strict).score(["Firms must keep records [1]."],
                                                     [["Scope. Firms must keep records. Others may not."]])
    assert result["citation_precision"] == 1.0


def test_evaluate_answers_attribution_flag(tmp_path, monkeypatch, capsys):
    """`rirag evaluate answers --attribution` writes a.attribution.json beside a.repass.csv and prints the table."""
    import argparse

    from rirag.cli import evaluate as evaluate_cli
    from tests._scoring_fixtures import fake_scorer

    records = [{"QuestionID": "a", "Question": "q", "RetrievedPassages": PASSAGES, "RetrievedIDs": ["x", "y"],
                "Answer": "Firms must keep records [1]. The regulator may ask [2]."}]
    src = tmp_path / "a.json"
    src.write_text(json.dumps(records))
    parser = argparse.ArgumentParser()
    evaluate_cli.add_answers_parser(parser.add_subparsers())
    args = parser.parse_args(["answers", "--answers", str(src), "--nli-model", "nli", "--coverage-model", "cov",
                              "--obligation-model", "obl", "--attribution"])
    scorer, _ = fake_scorer()
    monkeypatch.setattr("rirag.scoring.repass.RePASsScorer", lambda config: scorer)
    monkeypatch.setattr("rirag.scoring.attribution.nli_judge", lambda config: _overlap_judge)
    averages = evaluate_cli.run_answers(args)
    written = json.loads((tmp_path / "a.attribution.json").read_text())
    assert written["citation_precision"] == 1.0 and written["per_question"]["a"]["citation_recall"] == 1.0
    assert averages["attribution"]["copy_ratio"] == written["copy_ratio"]
    assert "Citation precision" in capsys.readouterr().out
