"""benchmarks/generation.py: the fixed sample, resumable generation into gzipped answers files, results merged
without losing other rows, and the score stage's metric keys (with stand-in scorers)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

import generation as bench  # noqa: E402


def test_systems_cover_the_issue_rows():
    assert set(bench.SYSTEMS) == {"focused", "focused-lists", "focused-rirag", "focused-passage-set",
                                  "focused-answer-parts", "extractive",
                                  "zero-shot", "few-shot", "few-shot-cot", "raft", "zero-shot-closed-book",
                                  "raft-closed-book"}
    assert bench.SYSTEMS["raft-closed-book"] == ("raft", "closed-book")
    # the focused-lists row is the focused answerer with --focus-lists, and only that row turns it on
    assert bench.SYSTEMS["focused-lists"] == bench.SYSTEMS["focused"]
    assert [row for row, options in bench.ROW_GENERATOR_OPTIONS.items() if options.get("focus_lists")] == \
        ["focused-lists"]
    # the focused rows answer from the commands' default context; focused-rirag and the other rows from the paper's
    # filter they were measured with
    assert bench.row_context_filter("focused") == bench.DEFAULT_CONTEXT_FILTER
    assert bench.row_context_filter("focused-rirag") == bench.row_context_filter("raft") == "rirag"
    assert bench.row_options(bench.GenerationBenchArguments(), "focused-rirag").context.depth == 100


class _Scorer:
    def score(self, answers, passages):
        assert len(answers) == len(passages)
        return {"repass": 0.5, "entailment": 0.9, "contradiction": 0.1, "obligation_coverage": 0.3,
                "n_scored": sum(bool(a.strip()) for a in answers)}


def test_score_row_has_every_metric_key():
    records = [{"QuestionID": "a", "Answer": "A firm must file [1].", "RetrievedPassages": ["A firm must file."]},
               {"QuestionID": "b", "Answer": "", "RetrievedPassages": ["x"]}]
    from rirag.scoring.attribution import AttributionScorer

    attribution = AttributionScorer(entails=lambda pairs: [True] * len(pairs))
    metrics = bench.score_row(records, _Scorer(), attribution)
    assert set(bench.QUALITY_KEYS) <= set(metrics)
    assert metrics["citation_precision"] == 1.0 and metrics["citation_recall"] == 1.0
    assert metrics["mean_answer_words"] == 2.5 and metrics["empty_answers"] == 1 and metrics["scored_answers"] == 1
    assert metrics["repass_signature"] is None  # a scorer that records no signature: none is invented


def test_score_row_records_the_repass_signature():
    from _scoring_fixtures import fake_scorer
    from rirag.scoring.attribution import AttributionScorer
    from rirag.scoring.signature import parse_signature

    records = [{"QuestionID": "a", "Answer": "Firms must keep records [1].",
                "RetrievedPassages": ["Firms must keep records."]}]
    scorer, _ = fake_scorer()
    metrics = bench.score_row(records, scorer, AttributionScorer(entails=lambda pairs: [True] * len(pairs)))
    assert metrics["repass_signature"] == scorer.signature
    assert parse_signature(metrics["repass_signature"])["nli"] == "nli"


def test_quality_row_and_the_mismatched_test():
    """The model-free metrics against gold; the mismatched test answers each question from its partner's passages."""
    records = [{"QuestionID": "a", "Question": "What must a firm file?", "Answer": "A firm must file [1].",
                "RetrievedIDs": ["p1", "p2"], "RetrievedPassages": ["A firm must file.", "A firm may pay."]},
               {"QuestionID": "b", "Question": "What may a firm pay?", "Answer": "A firm may pay [2].",
                "RetrievedIDs": ["p3", "p4"], "RetrievedPassages": ["Fees are due.", "A firm may pay."]}]
    golds = {"a": ["p1"], "b": ["p3", "p4"]}
    metrics = bench.quality_row(records, golds)
    assert set(bench.ANSWER_KEYS) <= set(metrics)
    assert metrics["gold_citation_precision"] == 1.0 and metrics["gold_citation_recall"] == 0.75
    assert metrics["words_max"] == 4 and metrics["broken_units"] == 0 and metrics["flag_rate"] == 0.0

    seen = []

    class _Flagger:  # flags everything and records what it was given
        name = "flagger"
        needs_passages = True

        def draft(self, requests):
            from rirag.generation.base import Draft, DraftPart

            seen.extend((r.question, list(r.passages)) for r in requests)
            return [Draft([DraftPart("x", (0,))], addressed=False) for _ in requests]

    result = bench.mismatched_flag_rate(records, golds, _Flagger(), seed=42)
    assert result["flag_rate_mismatched"] == 1.0 and result["mismatched_questions"] == 2
    assert seen == [("What must a firm file?", records[1]["RetrievedPassages"]),
                    ("What may a firm pay?", records[0]["RetrievedPassages"])]


def test_merge_keeps_other_rows(tmp_path):
    path = tmp_path / "generation.json"
    path.write_text(json.dumps({"rows": {"extractive": {"repass": 0.9}, "raft": {"repass": 0.6, "questions": 20}}}))
    bench.merge_results(str(path), {"raft": {"seconds_per_answer": 3.0}}, {"sample_size": 150})
    data = json.loads(path.read_text())
    assert data["rows"]["extractive"] == {"repass": 0.9}
    assert data["rows"]["raft"] == {"repass": 0.6, "questions": 20, "seconds_per_answer": 3.0}
    assert data["sample_size"] == 150
    # new answers for a row: its old scores described other answers, so the row is written anew
    bench.merge_results(str(path), {"raft": {"gold_citation_precision": 0.5}}, {}, replace={"raft"})
    data = json.loads(path.read_text())
    assert data["rows"]["raft"] == {"gold_citation_precision": 0.5} and data["rows"]["extractive"] == {"repass": 0.9}


@pytest.mark.slow
def test_sample_is_fixed_and_validation_only(real_obliqa):
    from rirag.data.runs import read_trec
    from rirag.data.splits import split_questions

    run = read_trec(REPO / "benchmarks" / "runs" / "validation.best.trec.gz")
    validation = split_questions(real_obliqa, "validation")
    a = bench.sample_questions(validation, run, 150, 42)
    b = bench.sample_questions(list(reversed(validation)), run, 150, 42)
    assert [q.id for q in a] == [q.id for q in b] and len({q.id for q in a}) == 150
    train_ids = {q.id for q in split_questions(real_obliqa, "train")}
    assert not {q.id for q in a} & train_ids
    with pytest.raises(ValueError, match="needs 1000"):
        bench.sample_questions(validation, run, 1000, 42)


@pytest.mark.slow
def test_generate_is_resumable_and_gzipped(real_obliqa, tmp_path):
    from rirag.data.runs import read_trec
    from rirag.data.splits import split_questions
    from tiny_causal_lm import tiny_causal_lm

    base = tiny_causal_lm(tmp_path / "lm")
    args = bench.GenerationBenchArguments(stage="generate", rows="zero-shot,zero-shot-closed-book", limit=2,
                                          base_model=str(base), answers_dir=str(tmp_path / "answers"),
                                          results=str(tmp_path / "generation.json"), max_new_tokens=4,
                                          batch_size=2)
    run = read_trec(args.run)
    sample = bench.sample_questions(split_questions(real_obliqa, "validation"), run, 150, 42)
    first = bench.generate_row(args, "zero-shot", sample[:1], run, real_obliqa.corpus)
    assert first["answered_now"] == 1 and "generated_tokens_now" in first  # the tiny LM's context may be too short
    packed = tmp_path / "answers" / "zero-shot.json.gz"
    assert packed.exists() and not (tmp_path / "answers" / "zero-shot.json").exists()
    second = bench.generate_row(args, "zero-shot", sample[:2], run, real_obliqa.corpus)
    assert second["answered_now"] == 1  # the first answer was kept, not regenerated
    with gzip.open(packed, "rt") as f:
        records = json.load(f)
    assert [r["QuestionID"] for r in records] == [q.id for q in sample[:2]]
    assert all(len(r["RetrievedPassages"]) >= 1 for r in records)
    closed = bench.generate_row(args, "zero-shot-closed-book", sample[:1], run, real_obliqa.corpus)
    assert closed["answered_now"] == 1 and closed["generated_tokens_now"] > 0 and closed["load_seconds"] >= 0
    rec = bench.read_answers(args, "zero-shot-closed-book")[0]
    assert rec["RetrievedPassages"] == records[0]["RetrievedPassages"]  # scored against the passages it never saw
