"""Shared-task answer files → per-question CSV: resume after an interruption, averages, bad input."""

import argparse
import csv
import json
import re

import pytest

from _scoring_fixtures import fake_scorer
from rirag.cli import evaluate as evaluate_cli
from rirag.data.answers import read_answers
from rirag.scoring import answers as answers_mod
from rirag.scoring.constants import CSV_COLUMNS

PASSAGE = "Firms must keep records for six years. The sky is blue."


def write_answers(path, n=5):
    records = [{"QuestionID": f"q{i}", "Question": "?", "RetrievedPassages": [PASSAGE], "RetrievedIDs": ["x"],
                "Answer": ("" if i == 2 else ("Firms must keep records for six years." if i % 2
                                              else "The sky is not blue."))}
               for i in range(n)]
    path.write_text(json.dumps(records))
    return records


class Interrupting:
    """Wraps a scorer; raises KeyboardInterrupt on the call after ``allowed`` calls."""

    def __init__(self, scorer, allowed):
        self.scorer, self.allowed, self.calls, self.seen = scorer, allowed, 0, []

    def score(self, predictions, passages):
        if self.calls >= self.allowed:
            raise KeyboardInterrupt
        self.calls += 1
        self.seen.extend(predictions)
        return self.scorer.score(predictions, passages)


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_resume_after_interruption_loses_nothing_and_rescoring_nothing(tmp_path):
    src, out = tmp_path / "answers.json", tmp_path / "scores.csv"
    write_answers(src, n=5)
    scorer, _ = fake_scorer()
    first = Interrupting(scorer, allowed=1)
    with pytest.raises(KeyboardInterrupt):
        answers_mod.score_answers_file(str(src), str(out), first, chunk_size=2)
    rows = read_rows(out)
    assert [r["QuestionID"] for r in rows] == ["q0", "q1"]  # the first chunk survived
    # simulate a torn last line (killed mid-write)
    with open(out, "a") as f:
        f.write("q3,0.9")
    second = Interrupting(scorer, allowed=10)
    averages = answers_mod.score_answers_file(str(src), str(out), second, chunk_size=2)
    rows = read_rows(out)
    assert [r["QuestionID"] for r in rows] == ["q0", "q1", "q3", "q4"]  # q2 has an empty answer: skipped
    assert len(second.seen) == 2  # only q3 and q4 were scored again
    assert list(rows[0]) == list(CSV_COLUMNS)
    full = scorer.score([r for r in ["The sky is not blue.", "Firms must keep records for six years."] * 2],
                        [[PASSAGE]] * 4)
    assert averages["composite_score"] == pytest.approx(sum(full["per_item"]["repass"]) / 4)
    assert averages["n_scored"] == 4 and averages["skipped_empty_answers"] == 1
    assert json.loads((tmp_path / "scores.csv.averages.json").read_text())["n_scored"] == 4
    # a third run does nothing
    third = Interrupting(scorer, allowed=0)
    answers_mod.score_answers_file(str(src), str(out), third)
    assert len(read_rows(out)) == 4


def test_bad_answer_files_name_record_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"QuestionID": "q1", "RetrievedPassages": ["p"]}]))
    with pytest.raises(ValueError, match=r"bad.json: record 0 .*'Answer'"):
        read_answers(str(bad))
    bad.write_text(json.dumps([{"QuestionID": "q1", "RetrievedPassages": [1], "Answer": "a"}]))
    with pytest.raises(ValueError, match="RetrievedPassages"):
        read_answers(str(bad))
    bad.write_text(json.dumps([{"QuestionID": "q1", "RetrievedPassages": "p", "Answer": "a"}] * 2))
    with pytest.raises(ValueError, match="duplicate"):
        read_answers(str(bad))
    import gzip

    packed = tmp_path / "answers.json.gz"  # the benchmarks commit their answers gzipped
    packed.write_bytes(gzip.compress(json.dumps([{"QuestionID": "q1", "RetrievedPassages": "p",
                                                  "Answer": "a"}]).encode()))
    assert [r["QuestionID"] for r in read_answers(str(packed))] == ["q1"]
    not_gzip = tmp_path / "plain.json.gz"
    not_gzip.write_text("[]")
    with pytest.raises(ValueError, match="plain.json.gz: cannot decompress"):  # read with a bound (issue 39)
        read_answers(str(not_gzip))


def test_cli_parser_and_local_judge_label(tmp_path, monkeypatch, capsys):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    evaluate_cli.add_answers_parser(sub)
    src = tmp_path / "a.json"
    write_answers(src, n=3)
    args = parser.parse_args(["answers", "--answers", str(src), "--nli-model", "nli", "--coverage-model", "coverage",
                              "--obligation-model", "obligation"])
    assert args.func is evaluate_cli.run_answers and args.mode == "reference"
    scorer, _ = fake_scorer()
    monkeypatch.setattr("rirag.scoring.repass.RePASsScorer", lambda config: scorer)
    averages = evaluate_cli.run_answers(args)
    printed = capsys.readouterr().out
    assert "RePASs (local judge)" in printed and averages["n_scored"] == 2
    assert (tmp_path / "a.repass.csv").exists()


def test_fresh_clone_without_models_says_in_one_line_how_to_get_them(tmp_path, monkeypatch, caplog):
    """With --require-all a missing model is an error: one line naming every missing model and how to get it, exit
    2, nothing written."""
    from rirag.cli import main
    from rirag.scoring.constants import TRAIN_COMMANDS

    monkeypatch.chdir(tmp_path)  # no artifacts/ here, and the Hub is offline
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_answers(tmp_path / "a.json", n=2)
    rc = main(["evaluate", "answers", "--answers", "a.json", "--nli-model", "artifacts/nli_judge",
               "--coverage-model", "artifacts/nli_judge", "--require-all"])
    assert rc == 2
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "\n" not in errors[0]
    assert TRAIN_COMMANDS["artifacts/nli_judge"] in errors[0]
    assert TRAIN_COMMANDS["artifacts/obligation_classifier"] in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_fresh_clone_without_models_prints_the_model_free_metrics_and_names_what_it_skipped(
        tiny_data_dir, tmp_path, monkeypatch, capsys):
    """Issue 33: right after `make demo` (no judge trained, the Hub offline) `evaluate answers --attribution` prints
    gold-citation precision/recall, length, shared answers and flags, and one line per skipped metric naming its
    model and how to get it; exit 0."""
    from rirag.cli import main

    monkeypatch.chdir(tmp_path)  # no artifacts/ here
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hub cache
    # q1-a cites its gold passage d1-p1, q3-a a passage that is not its gold (d3-p1): precision and recall 0.5
    (tmp_path / "a.json").write_text(json.dumps([
        {"QuestionID": "q1-a", "Question": "q", "RetrievedPassages": ["p", "o"], "RetrievedIDs": ["d1-p1", "d1-p2"],
         "Answer": "Firms must keep records for six years [1]."},
        {"QuestionID": "q3-a", "Question": "q", "RetrievedPassages": ["p"], "RetrievedIDs": ["d3-p2"],
         "Answer": "The Regulator may require a report [1]."}]))
    rc = main(["evaluate", "answers", "--answers", "a.json", "--attribution", "--data", str(tiny_data_dir)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert re.search(r"Gold-citation precision\s+0\.5000", out)
    assert re.search(r"Gold-citation recall \(context holds\)\s+0\.5000", out)
    for label in ("Words (median / p95 / max)", "Answers shared across questions", "Flagged"):
        assert label in out
    skipped = [line for line in out.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 2 and skipped[0].startswith("skipped RePASs: ")
    assert "--obligation-model artifacts/obligation_classifier" in skipped[0] and "make models" in skipped[0]
    assert "--nli-model cross-encoder/nli-deberta-v3-xsmall" in skipped[0]
    assert skipped[1].startswith("skipped NLI citation support (--attribution): --nli-model")
    assert "make models ONLY=nli-judge" in skipped[1]
    assert not (tmp_path / "a.repass.csv").exists() and (tmp_path / "a.quality.json").exists()
    assert not list(tmp_path.glob("*.repass.csv.*"))  # nothing named after the CSV it did not write


def test_official_hub_ids_offline_point_to_the_local_judge(tmp_path, monkeypatch, caplog):
    from rirag.scoring.models import MissingModelError, load_classifier

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty Hub cache
    with pytest.raises(MissingModelError, match=r"--nli-model artifacts/nli_judge"):
        load_classifier.__wrapped__("cross-encoder/nli-deberta-v3-xsmall", "cpu")


def test_citation_markers_are_removed_before_repass_unless_kept(tmp_path):
    src = tmp_path / "answers.json"
    records = [{"QuestionID": "cited", "RetrievedPassages": [PASSAGE],
                "Answer": "Firms must keep records for six years [1]. The sky is blue [1, 2]."},
               {"QuestionID": "markers-only", "RetrievedPassages": [PASSAGE], "Answer": "[1] [2]"},
               {"QuestionID": "plain", "RetrievedPassages": [PASSAGE], "Answer": "The sky is blue."}]
    src.write_text(json.dumps(records))
    scorer, _ = fake_scorer()
    seen = Interrupting(scorer, allowed=10)
    averages = answers_mod.score_answers_file(str(src), str(tmp_path / "a.csv"), seen)
    assert seen.seen == ["Firms must keep records for six years. The sky is blue.", "The sky is blue."]
    assert averages["skipped_empty_answers"] == 1 and averages["citation_markers"] == "removed before scoring"
    kept = Interrupting(scorer, allowed=10)
    averages = answers_mod.score_answers_file(str(src), str(tmp_path / "b.csv"), kept, strip_citation_markers=False)
    assert kept.seen == [r["Answer"] for r in records] and averages["citation_markers"] == "kept"
    assert answers_mod.repass_text(None) is None
    # no marker: as written
    assert answers_mod.repass_text("Rule 1 : a firm must act .") == "Rule 1 : a firm must act ."


def _with_huge_answer(path, size=5_000_000):
    """Four normal answers and one of ``size`` characters (a runaway generation) in the middle."""
    records = write_answers(path, n=5)
    records[3]["Answer"] = ("Firms must keep records for six years. " * (size // 39 + 1))[:size]
    path.write_text(json.dumps(records))
    return records


def test_a_huge_answer_is_recorded_as_a_failure_and_the_rest_are_scored(tmp_path):
    src, out = tmp_path / "answers.json", tmp_path / "scores.csv"
    _with_huge_answer(src)
    scorer, fakes = fake_scorer()
    seen = Interrupting(scorer, allowed=10)
    averages = answers_mod.score_answers_file(str(src), str(out), seen, chunk_size=2)
    assert [r["QuestionID"] for r in read_rows(out)] == ["q0", "q1", "q4"]  # q2 is empty, q3 the huge one
    assert all(len(p) < 100 for p in seen.seen)  # the huge answer never reached the scorer
    assert averages["n_scored"] == 3
    failures = json.loads((tmp_path / "scores.csv.failures.json").read_text())
    assert [f["QuestionID"] for f in failures] == ["q3"] and "5,000,000 characters" in failures[0]["reason"]
    assert averages["failed"] == failures
    assert "not scored" in answers_mod.format_summary(averages, official=False)
    # the limit can be raised; a rerun scores what failed before and drops the failures file
    averages = answers_mod.score_answers_file(str(src), str(out), scorer, chunk_size=2, max_answer_chars=None)
    assert [r["QuestionID"] for r in read_rows(out)] == ["q0", "q1", "q4", "q3"]
    assert averages["failed"] == [] and not (tmp_path / "scores.csv.failures.json").exists()


class FailsOn:
    """Wraps a scorer; raises (as a model or the splitter might) whenever a batch holds a poisoned answer."""

    def __init__(self, scorer, poison):
        self.scorer, self.poison, self.calls = scorer, poison, 0

    def load_models(self):
        self.scorer.load_models()

    def score(self, predictions, passages):
        self.calls += 1
        if any(self.poison in p for p in predictions):
            raise TimeoutError("regular-expression match exceeded its 5.0s time limit")
        return self.scorer.score(predictions, passages)


def test_an_answer_whose_scoring_raises_is_isolated_and_the_rest_scored(tmp_path):
    src, out = tmp_path / "answers.json", tmp_path / "scores.csv"
    records = write_answers(src, n=5)
    records[0]["Answer"] = "POISON must be kept."
    src.write_text(json.dumps(records))
    scorer, _ = fake_scorer()
    averages = answers_mod.score_answers_file(str(src), str(out), FailsOn(scorer, "POISON"), chunk_size=2)
    assert [r["QuestionID"] for r in read_rows(out)] == ["q1", "q3", "q4"]  # q0's chunk-mate q1 is scored alone
    assert [(f["QuestionID"], f["reason"].split(":")[0]) for f in averages["failed"]] == [("q0", "TimeoutError")]


def test_nothing_scored_is_one_error_and_no_header_only_csv(tmp_path, monkeypatch, caplog):
    """Every answer fails: the command fails (one line, exit 2) and leaves the failures, not a header-only CSV."""
    from rirag.cli import main

    src = tmp_path / "answers.json"
    records = [{"QuestionID": "only", "RetrievedPassages": [PASSAGE], "Answer": "POISON must be kept."}]
    src.write_text(json.dumps(records))
    with pytest.raises(answers_mod.NothingScored, match="none of its answers could be scored"):
        answers_mod.score_answers_file(str(src), str(tmp_path / "s.csv"), FailsOn(fake_scorer()[0], "POISON"))
    assert not (tmp_path / "s.csv").exists() and (tmp_path / "s.csv.failures.json").exists()

    # through the command: models present (tiny fakes), one line on stderr, exit 2
    scorer, _ = fake_scorer()
    monkeypatch.setattr("rirag.scoring.repass.RePASsScorer", lambda config: FailsOn(scorer, "POISON"))
    monkeypatch.setattr("rirag.models.model_available", lambda name, what="model": name)
    assert main(["evaluate", "answers", "--answers", str(src), "--nli-model", "n", "--coverage-model", "c",
                 "--obligation-model", "o"]) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "none of its answers could be scored" in errors[0] and "\n" not in errors[0]
    assert caplog.records[-1].levelname == "ERROR"  # the last line
    assert not (tmp_path / "answers.repass.csv").exists()


def test_evaluate_answers_with_a_huge_answer_through_the_command(tmp_path, monkeypatch, capsys):
    from rirag.cli import main

    src = tmp_path / "answers.json"
    _with_huge_answer(src)
    scorer, _ = fake_scorer()
    monkeypatch.setattr("rirag.scoring.repass.RePASsScorer", lambda config: scorer)
    monkeypatch.setattr("rirag.models.model_available", lambda name, what="model": name)
    assert main(["evaluate", "answers", "--answers", str(src), "--nli-model", "n", "--coverage-model", "c",
                 "--obligation-model", "o"]) == 0
    printed = capsys.readouterr().out
    assert "answers scored" in printed and "not scored" in printed and "q3" in printed
    assert [r["QuestionID"] for r in read_rows(tmp_path / "answers.repass.csv")] == ["q0", "q1", "q4"]


def test_the_sentence_splitter_has_a_length_guard(monkeypatch):
    import time

    from rirag.text import sentences

    short = "Firms must keep records. The Regulator may ask for them! Is that so? Yes."
    assert sentences.punkt_split(short) == tuple(sentences.punkt_tokenizer().tokenize(short))
    # 5 MB in one piece took 5 s, NLTK's limit on one regular-expression call; in blocks each call is short
    huge = "Firms must keep records for six years.\nThe Regulator may ask. " * 80_000
    start = time.perf_counter()
    parts = sentences.punkt_split(huge)
    assert time.perf_counter() - start < 60
    assert "".join(parts).replace(" ", "").replace("\n", "") == huge.replace(" ", "").replace("\n", "")
    assert len(parts) == 160_000  # the blocks end at line breaks, so no sentence was cut in two
    blocks = list(sentences.blocks("word " * 10, limit=12))
    assert "".join(blocks) == "word " * 10 and all(len(b) <= 12 for b in blocks)
    assert list(sentences.blocks("x" * 25, limit=10)) == ["x" * 10, "x" * 10, "x" * 5]

    class TimesOut:  # Punkt tripping NLTK's regex time limit: the block falls back to the simple cut
        def tokenize(self, text):
            raise TimeoutError("regular-expression match exceeded its 5.0s time limit")

    sentences.punkt_split.cache_clear()
    monkeypatch.setattr(sentences, "punkt_tokenizer", lambda: TimesOut())
    assert sentences.punkt_split("A firm must file. It may wait! Done?  Yes") == (
        "A firm must file.", "It may wait!", "Done?", "Yes")
    sentences.punkt_split.cache_clear()


class NoSignature:
    """A scorer of the former kind: plain dict results, no signature."""

    def __init__(self, scorer):
        self.scorer = scorer

    def score(self, predictions, passages):
        return {k: v for k, v in self.scorer.score(predictions, passages).items() if k != "signature"}


def test_averages_record_the_signature_across_resumed_runs_and_label_the_summary(tmp_path):
    from rirag.scoring.constants import LOCAL_JUDGE_LABEL, OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL
    from rirag.scoring.signature import parse_signature

    src, out = tmp_path / "answers.json", tmp_path / "scores.csv"
    write_answers(src, n=5)
    scorer, _ = fake_scorer()
    with pytest.raises(KeyboardInterrupt):  # interrupted after one chunk: no averages yet
        answers_mod.score_answers_file(str(src), str(out), Interrupting(scorer, allowed=1), chunk_size=2)
    averages = answers_mod.score_answers_file(str(src), str(out), scorer, chunk_size=2)
    assert averages["signature"] == scorer.signature  # the rows written before the interruption: the same scorer
    assert parse_signature(averages["signature"])["nli"] == "nli"
    assert json.loads((tmp_path / "scores.csv.averages.json").read_text())["signature"] == scorer.signature
    summary = answers_mod.format_summary(averages, official=True)  # the signature wins over the flag
    assert LOCAL_JUDGE_LABEL in summary
    official = scorer.signature.replace("nli=nli", f"nli={OFFICIAL_NLI_MODEL}").replace(
        "coverage=coverage", f"coverage={OFFICIAL_COVERAGE_MODEL}")
    assert LOCAL_JUDGE_LABEL not in answers_mod.format_summary({**averages, "signature": official}, official=False)
    assert LOCAL_JUDGE_LABEL in answers_mod.format_summary({**averages, "signature": None}, official=False)

    # resumed by another scorer (paper mode): the rows are not one scorer's, no signature is claimed
    write_answers(src, n=7)
    paper, _ = fake_scorer("paper")
    assert answers_mod.score_answers_file(str(src), str(out), paper, chunk_size=2)["signature"] is None
    # a fresh CSV scored by a scorer that records no signature: none
    fresh = tmp_path / "fresh.csv"
    assert answers_mod.score_answers_file(str(src), str(fresh), NoSignature(scorer))["signature"] is None
    # a CSV begun before signatures were recorded (no signatures file), resumed now: not known either
    (tmp_path / "fresh.csv.signatures.json").unlink()
    rows = read_rows(fresh)
    with open(fresh, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows[:2])
    assert answers_mod.score_answers_file(str(src), str(fresh), scorer)["signature"] is None
