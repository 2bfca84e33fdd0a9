"""The answering job (:class:`rirag.generation.job.AnsweringJob`) driven directly, as a library caller would, on the
tiny corpus: ``submit``'s deliverables, ``ask``'s answers, the checks that stop it before anything is written, the
unseen questions read by the one questions reader, and ``rirag data ingest --questions`` mapping its gold in the
library (:func:`rirag.data.questions.ingest_with_questions`)."""

from __future__ import annotations

import argparse
import json

import pytest

from rirag.cli import build_parser
from rirag.data.obliqa import load_obliqa
from rirag.data.questions import ingest_with_questions, unseen_questions
from rirag.errors import DataError, UsageError
from rirag.generation.job import SUBMIT_FILES, AnsweringJob, generator_manifest
from tests.test_generation_prompts import _tiny_classifier


@pytest.fixture
def classifier(tmp_path):
    return _tiny_classifier(tmp_path / "obligation", "obligation")


def _settings(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def _submit(data, out, classifier, *extra) -> argparse.Namespace:
    return _settings("submit", "--data", str(data), "--out", str(out), "--retriever", "bm25", "--generator",
                     "extractive", "--generator-model", classifier, *extra)


def test_submit_writes_the_deliverables_and_returns_what_it_did(tiny_data_dir, tmp_path, classifier):
    out = tmp_path / "submission"
    job = AnsweringJob("submit", _submit(tiny_data_dir, out, classifier))
    result = job.run()
    assert not result.failed and result.queries == 1
    assert sorted(p.name for p in out.iterdir() if p.name in SUBMIT_FILES) == sorted(SUBMIT_FILES)
    assert result.run_path == out / "retrieval.trec" and result.plain_answers_path == out / "answers.shared-task.json"
    assert result.summary["answered"] == 1 and result.summary["out"] == str(out / "answers.json")
    summary = json.loads((out / "submission.json").read_text())
    assert summary["questions"] == 1 and summary["retriever"] == "bm25"
    # the manifest names where the questions came from: the corpus's unseen file
    manifest = json.loads((out / "answers.json.manifest.json").read_text())
    assert manifest["questions"].endswith("RIRAG_Unseen_Questions.json") and manifest["command"] == "submit"
    # a rerun of the same job resumes: nothing left to answer
    again = AnsweringJob("submit", _submit(tiny_data_dir, out, classifier)).run()
    assert again.summary["answered"] == 0 and again.summary["already_done"] == 1


def test_the_manifest_holds_the_commands_generator_options_or_else_the_specs(tiny_data_dir, classifier):
    settings = _submit(tiny_data_dir, "unused", classifier)
    assert settings.generator_option_names  # recorded by the parser
    by_command = generator_manifest(settings, settings.generator_option_names)
    assert by_command["generator"] == "extractive" and "batch_size" not in by_command["generator_options"]
    assert by_command["generator_options"]["generator_model"] == classifier


def test_a_malformed_unseen_file_is_read_questions_error_naming_the_file(tiny_data_dir, tmp_path, classifier):
    unseen = tiny_data_dir / "RIRAG_Unseen_Questions.json"
    unseen.write_text(json.dumps([{"QuestionID": "u1", "Question": "Kept?"}, {"QuestionID": "u2"}]))
    out = tmp_path / "submission"
    with pytest.raises(DataError, match=r"RIRAG_Unseen_Questions.json: record 1 \(id u2\): missing field 'Question'"):
        AnsweringJob("submit", _submit(tiny_data_dir, out, classifier)).run()
    assert not out.exists()  # refused before anything was written
    unseen.write_text(json.dumps([{"QuestionID": "u1", "Question": "\u200b "}]))
    with pytest.raises(DataError, match="RIRAG_Unseen_Questions.json: record 0 .*'Question' is empty"):
        unseen_questions(load_obliqa(tiny_data_dir))
    unseen.unlink()  # no unseen file: the job asks for --questions
    with pytest.raises(DataError, match="no RIRAG_Unseen_Questions.json; pass --questions FILE"):
        AnsweringJob("submit", _submit(tiny_data_dir, out, classifier)).run()


def test_the_unseen_questions_are_questions_of_the_corpus_folder(tiny_data_dir):
    assert [(q.id, q.text) for q in unseen_questions(load_obliqa(tiny_data_dir))] == [
        ("u1", "What records must be kept about client money?")]


def test_checks_come_before_the_corpus_loads(tiny_data_dir, tmp_path, classifier, monkeypatch):
    import rirag.generation.session as session

    def no_load(*_):
        raise AssertionError("the corpus loaded before the checks")

    monkeypatch.setattr(session, "load_obliqa", no_load)
    settings = _submit(tiny_data_dir, tmp_path / "o", classifier)
    settings.batch_size = 0  # a namespace built in code: the parser's bound never saw it
    with pytest.raises(UsageError, match="--batch-size"):  # the generator's bounds, first
        AnsweringJob("submit", settings).run()
    (tmp_path / "o" / "answers.json").mkdir(parents=True)
    with pytest.raises(DataError, match="answers.json is a folder; the submission writes a file there"):
        AnsweringJob("submit", _submit(tiny_data_dir, tmp_path / "o", classifier)).run()
    answer = _settings("answer", "--data", str(tiny_data_dir), "--out", str(tmp_path / "a.json"))
    with pytest.raises(DataError, match="pass exactly one of --split SPLIT"):
        AnsweringJob("answer", answer).run()
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps([{"QuestionID": "two words", "Question": "Why?"}]))
    answer = _settings("answer", "--data", str(tiny_data_dir), "--out", str(tmp_path / "a.json"), "--questions",
                       str(bad), "--retriever", "bm25", "--generator", "extractive", "--generator-model", classifier)
    with pytest.raises((DataError, UsageError), match="q.json: record 0"):
        AnsweringJob("answer", answer).run()
    assert not (tmp_path / "a.json").exists()


def test_ask_yields_each_answer_with_its_titles(tiny_data_dir, tmp_path, classifier):
    timings = tmp_path / "t.json"
    settings = _settings("ask", "How long must client money records be kept?", "Who may require a report?",
                         "--data", str(tiny_data_dir), "--retriever", "bm25", "--generator", "extractive",
                         "--generator-model", classifier, "--timings", str(timings))
    asked = list(AnsweringJob("ask", settings).ask())
    assert [a.question for a in asked] == list(settings.question)
    assert asked[1].description is None  # the generator is described once, with the first answer
    assert asked[0].answer.cited and asked[0].titles[3] == "Rulebook – number 3"
    assert len(json.loads(timings.read_text())["answer_s"]) == 2


def test_an_unknown_command_is_refused():
    with pytest.raises(ValueError, match="unknown answering command"):
        AnsweringJob("retrieve", argparse.Namespace())
    with pytest.raises(ValueError, match="through ask"):
        AnsweringJob("ask", argparse.Namespace()).run()


def test_ingest_maps_its_own_questions_gold(tmp_path):
    source = tmp_path / "rules.md"
    source.write_text("# Records\n\n1.1 A firm must keep client money records for six years.\n\n"
                      "1.2 A firm must report breaches to the regulator at once.\n")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"QuestionID": "q1", "Question": "How long are records kept?",
                                      "Gold": [{"text": "keep client money records for six years"}]}]))
    report = ingest_with_questions(source, tmp_path / "corpus", questions)
    assert report["questions"]["file"] == "q.json"
    assert report["questions"]["gold_mapped"] == 1 and report["questions"]["by"] == {"exact": 1}
    kept = json.loads((tmp_path / "corpus" / "ingest_report.json").read_text())
    assert kept["questions"]["gold_items"] == 1
    assert "questions" not in ingest_with_questions(source, tmp_path / "corpus2")
