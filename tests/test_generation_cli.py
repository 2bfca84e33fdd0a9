"""`rirag answer / ask / submit` on the tiny dataset: the answer JSON, resume after an interruption, an endpoint
that fails mid-run, bad input (empty and 20,000-character questions, a run that lacks a question, a generator that
returns nothing or no citations)."""

from __future__ import annotations

import json
import re

import pytest

from rirag.cli import main
from rirag.data.answers import AnswersFile
from rirag.data.runs import read_trec, write_trec
from rirag.generation import pipeline
from rirag.generation.base import PromptedAnswerer
from rirag.generation.extractive import ExtractiveComposer
from rirag.generation.pipeline import (
    MAX_QUESTION_CHARS,
    WARN_EMPTY,
    WARN_EMPTY_QUESTION,
    WARN_NO_CITATIONS,
    answer_items,
    answer_question,
)
from tests.test_generation_backends import _completion, scripted_server  # noqa: F401 (a fixture)
from tests.test_generation_prompts import _tiny_classifier

SHARED_TASK_FIELDS = ["QuestionID", "Question", "RetrievedPassages", "Answer", "RetrievedIDs", "Citations"]


@pytest.fixture
def classifier(tmp_path):
    return _tiny_classifier(tmp_path / "obligation", "obligation")


@pytest.fixture
def bm25_run(tiny_data_dir, tmp_path):
    """A BM25 run of the tiny dev split (raw scores: the pipeline min-max normalises them before filtering)."""
    path = tmp_path / "dev.trec"
    assert main(["retrieve", "--data", str(tiny_data_dir), "--split", "original-dev", "--retriever", "bm25",
                 "--out", str(path), "--k", "5"]) == 0
    return path


def _answer(tiny_data_dir, run, out, classifier, *extra):
    return main(["answer", "--data", str(tiny_data_dir), "--split", "original-dev", "--run", str(run),
                 "--out", str(out), "--generator", "extractive", "--generator-model", classifier,
                 "--batch-size", "2", *extra])


def test_answer_writes_the_shared_task_json_with_citations(tiny_data_dir, bm25_run, tmp_path, classifier):
    out = tmp_path / "answers.json"
    assert _answer(tiny_data_dir, bm25_run, out, classifier) == 0
    records = json.loads(out.read_text())
    run = read_trec(bm25_run)
    assert [r["QuestionID"] for r in records] == list(run)  # every question, in split order
    for r in records:
        assert list(r)[:6] == SHARED_TASK_FIELDS
        assert r["RetrievedIDs"] and set(r["RetrievedIDs"]) <= set(run[r["QuestionID"]])
        assert len(r["RetrievedPassages"]) == len(r["RetrievedIDs"])
        assert r["Citations"] and all(c["valid"] and c["ID"] in r["RetrievedIDs"] for c in r["Citations"])
    assert not (tmp_path / "answers.json.partial.jsonl").exists()
    # RePASs' reader accepts the file
    from rirag.data.answers import read_answers

    assert len(read_answers(str(out))) == len(records)


def test_resume_after_an_interruption_loses_nothing(tiny_data_dir, bm25_run, tmp_path, classifier, monkeypatch):
    out = tmp_path / "answers.json"
    calls = {"n": 0}
    real = ExtractiveComposer.draft

    def interrupted(self, batch):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the third batch
        return real(self, batch)

    monkeypatch.setattr(ExtractiveComposer, "draft", interrupted)
    assert _answer(tiny_data_dir, bm25_run, out, classifier) == 130  # main() turns Ctrl-C into exit 130
    first = json.loads(out.read_text())
    assert len(first) == 4  # two batches of two, written and finalised

    asked = []

    def counting(self, batch):
        asked.append(len(batch))
        return real(self, batch)

    monkeypatch.setattr(ExtractiveComposer, "draft", counting)
    assert _answer(tiny_data_dir, bm25_run, out, classifier) == 0
    final = json.loads(out.read_text())
    total = len(read_trec(bm25_run))
    assert sum(asked) == total - 4  # only the missing questions were answered
    assert len(final) == total and final[:4] == first
    assert [r["QuestionID"] for r in final] == list(read_trec(bm25_run))


def test_a_torn_journal_line_is_dropped_and_the_rest_kept(tmp_path):
    out = tmp_path / "answers.json"
    journal = tmp_path / "answers.json.partial.jsonl"
    journal.write_text(json.dumps({"QuestionID": "a", "Answer": "x"}) + "\n" + '{"QuestionID": "b", "Ans')
    answers = AnswersFile(out)
    assert "a" in answers and "b" not in answers
    answers.write({"QuestionID": "b", "Answer": "y"})
    answers.finalize(["b", "a"])
    assert [r["QuestionID"] for r in json.loads(out.read_text())] == ["b", "a"]
    assert not journal.exists()


def test_a_run_that_lacks_a_question(tiny_data_dir, bm25_run, tmp_path, classifier, caplog):
    run = read_trec(bm25_run)
    dropped = next(iter(run))
    partial = tmp_path / "partial.trec"
    write_trec({q: r for q, r in run.items() if q != dropped}, partial)
    out = tmp_path / "answers.json"
    assert _answer(tiny_data_dir, partial, out, classifier) == 2
    assert f"1 of {len(run)} questions have no passage" in caplog.text and dropped in caplog.text
    assert not out.exists()
    assert _answer(tiny_data_dir, partial, out, classifier, "--allow-missing") == 0
    record = {r["QuestionID"]: r for r in json.loads(out.read_text())}[dropped]
    assert record["Answer"] == "" and record["RetrievedIDs"] == []
    assert pipeline.WARN_NO_PASSAGES in record["Warnings"]


class _Fixed(PromptedAnswerer):
    """A generator that returns fixed texts (and records what it was asked)."""

    name = "fixed"

    def __init__(self, reply):
        self.reply = reply
        self.prompts = []

    def generate(self, batch):
        self.prompts.extend(batch)
        return [self.reply for _ in batch]


def _passages():
    return [pipeline.RetrievedPassage("p1", "A firm must file a return.", 1.0, 1, "1.1"),
            pipeline.RetrievedPassage("p2", "The Regulator may ask.", 0.8, 1, "1.2")]


def test_empty_and_over_long_questions_and_empty_or_uncited_generations():
    gen = _Fixed("")
    long_question = "Why? " * 4000  # 20,000 characters
    answers = answer_items([("e", "   ", _passages()), ("l", long_question, _passages())], gen)
    assert answers[0].warnings == [WARN_EMPTY_QUESTION] and answers[0].text == ""
    assert len(gen.prompts) == 1  # the empty question was not sent
    sent = gen.prompts[0][-1]["content"]
    assert len(sent) < MAX_QUESTION_CHARS + 500 and "Why?" in sent
    assert answers[1].warnings[0].startswith(f"question cut to {MAX_QUESTION_CHARS} characters (was 19999")
    assert WARN_EMPTY in answers[1].warnings
    assert answers[1].to_record()["Question"] == long_question  # the record keeps the question as asked

    uncited = answer_items([("u", "What must a firm do?", _passages())], _Fixed("It must file a return."))[0]
    assert uncited.text == "It must file a return." and WARN_NO_CITATIONS in uncited.warnings
    assert uncited.to_record()["Citations"] == []

    invalid = answer_items([("i", "Q?", _passages())], _Fixed("It must file [3]. It may ask [2]."))[0]
    assert [c["valid"] for c in invalid.to_record()["Citations"]] == [False, True]
    assert "1 citation(s) outside the passage list" in invalid.warnings

    gen = _Fixed("It must file [1].")
    closed = answer_items([("c", "Q?", _passages())], gen, "closed-book")[0]
    assert "A firm must file" not in str(gen.prompts)  # the prompt carried no passage...
    assert closed.to_record()["RetrievedIDs"] == ["p1", "p2"]  # ...but the record keeps them for scoring
    assert [c["valid"] for c in closed.to_record()["Citations"]] == [False]  # [1] points at nothing it saw


def test_answer_question_with_a_retriever(tiny_data_dir):
    from rirag.data.obliqa import load_obliqa
    from rirag.errors import DataError
    from rirag.retrieval.registry import RetrieverSpec, build_retriever

    obliqa = load_obliqa(tiny_data_dir)
    retriever = build_retriever(obliqa.corpus, RetrieverSpec("rank-fusion"))
    composer = ExtractiveComposer(is_obligation=lambda s: ["must" in x for x in s])
    answer = answer_question("How long must client money records be kept?", retriever, composer,
                             corpus=obliqa.corpus)
    assert answer.passages[0].id == "d3-p1"  # the client money document's records passage
    assert answer.cited and answer.cited[0].id == "d3-p1"
    assert "[1]" in answer.text and answer.warnings == []
    with pytest.raises(DataError, match="empty"):
        answer_question("  ", retriever, composer, corpus=obliqa.corpus)


def test_ask_prints_the_answer_and_its_sources(tiny_data_dir, classifier, capsys):
    assert main(["ask", "How long must client money records be kept?", "--data", str(tiny_data_dir),
                 "--generator", "extractive", "--generator-model", classifier]) == 0
    out = capsys.readouterr().out
    assert "Sources:" in out and "number 3 · 1.1 · id d3-p1 · score 1.000" in out
    assert main(["ask", "", "--data", str(tiny_data_dir), "--generator", "extractive",
                 "--generator-model", classifier]) == 2


def test_submit_writes_both_deliverables(tiny_data_dir, tmp_path, classifier):
    out = tmp_path / "submission"
    assert main(["submit", "--data", str(tiny_data_dir), "--out", str(out), "--retriever", "bm25",
                 "--generator", "extractive", "--generator-model", classifier]) == 0
    run = read_trec(out / "retrieval.trec")
    answers = json.loads((out / "answers.json").read_text())
    assert list(run) == ["u1"] and len(run["u1"]) == 10
    assert [a["QuestionID"] for a in answers] == ["u1"] and answers[0]["Citations"]
    assert json.loads((out / "submission.json").read_text())["questions"] == 1
    # the file for the shared task's scorer: its five fields, the same answer without the [n] markers
    plain = json.loads((out / "answers.shared-task.json").read_text())
    assert list(plain[0]) == ["QuestionID", "Question", "RetrievedPassages", "Answer", "RetrievedIDs"]
    assert "[1]" in answers[0]["Answer"] and "[" not in plain[0]["Answer"]
    assert plain[0]["Answer"] == re.sub(r" \[\d+\]", "", answers[0]["Answer"])
    assert plain[0]["RetrievedIDs"] == answers[0]["RetrievedIDs"]


def test_endpoint_error_mid_run_keeps_answers_and_resumes(tiny_data_dir, bm25_run, tmp_path,
                                                          scripted_server):  # noqa: F811 (the imported fixture)
    url, handler = scripted_server
    handler.script = [(200, _completion("First [1].")), (200, _completion("Second [1]."))] + \
        [(500, b'{"error": {"message": "down"}}')] * 2
    out = tmp_path / "answers.json"
    argv = ["answer", "--data", str(tiny_data_dir), "--split", "original-dev", "--run", str(bm25_run),
            "--out", str(out), "--generator", "endpoint", "--generator-model", "m", "--base-url", url,
            "--batch-size", "2", "--concurrency", "1", "--max-retries", "1"]
    assert main(argv) == 3
    kept = json.loads(out.read_text())
    assert [r["Answer"] for r in kept] == ["First [1].", "Second [1]."]
    handler.script = []  # the server recovers: every reply is "ok [1]."
    assert main(argv) == 0
    final = json.loads(out.read_text())
    assert final[:2] == kept and len(final) == len(read_trec(bm25_run))
    assert all(r["Answer"] == "ok [1]." for r in final[2:])


def test_the_extractive_composer_reads_the_passages_as_retrieved_not_the_one_line_prompt():
    from rirag.generation.extractive import MODAL_CUES
    from rirag.generation.pipeline import RetrievedPassage

    heading = ("REGULATORY REQUIREMENTS FOR AUTHORISED PERSONS\nKey considerations for AML/CFT compliance\n"
               "Authorised Persons must keep records for six years.")
    passages = [RetrievedPassage("p1", heading, 1.0), RetrievedPassage("p2", "A firm shall notify the Regulator.", 0.9)]
    answer = answer_items([("h", "What must a firm do?", passages)], ExtractiveComposer(classifier=MODAL_CUES))[0]
    # through the prompt (one line per passage) the headings would be glued to the first sentence
    assert answer.text == ("Authorised Persons must keep records for six years [1]. "
                           "A firm shall notify the Regulator [2].")
    with pytest.raises(ValueError, match="closed-book needs a language model"):  # not a file of empty answers
        answer_items([("c", "What must a firm do?", passages)], ExtractiveComposer(classifier=MODAL_CUES),
                     "closed-book")


def test_extractive_closed_book_is_refused_before_any_work(tiny_data_dir, tmp_path, caplog):
    out = tmp_path / "submission"
    code = main(["submit", "--data", str(tiny_data_dir), "--out", str(out), "--retriever", "bm25",
                 "--generator", "extractive", "--strategy", "closed-book"])
    assert code == 2 and "closed-book needs a language model" in caplog.text
    assert not (out / "retrieval.trec").exists()
