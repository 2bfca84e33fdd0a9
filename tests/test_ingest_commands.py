"""The commands after `rirag data ingest` on any corpus (issue 48): ``--k`` and its help follow the corpus size, a
mistyped local ``--data`` path is not a Hub id, and ``evaluate retrieval --questions`` whose gold maps nowhere says
so (not "wrong split?"). On a five-passage corpus the tests write."""

from __future__ import annotations

import contextlib
import io
import json
import logging

import pytest

from rirag import validation
from rirag.cli import build_parser, main
from rirag.data import obliqa
from rirag.data.ingest.corpus import ingest
from rirag.errors import DataError


@pytest.fixture()
def five(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "rules.txt").write_text("A firm must keep records.\n\nA firm must report yearly.\n\nA firm must hold "
                                   "capital.\n\nA firm must notify the PRA.\n\nA firm must treat customers fairly.\n",
                                   "utf-8")
    ingest(src, tmp_path / "five")
    return tmp_path / "five"


@pytest.mark.parametrize("argv", [["ask", "Who keeps records?"], ["answer", "--questions", "q.json", "--out", "a"],
                                  ["submit", "--questions", "q.json", "--out", "o"]])
def test_the_default_k_fits_a_corpus_smaller_than_it(argv):
    args = build_parser().parse_args(argv)
    assert args.k == 10
    assert validation.k_within_corpus(args.k, 5) == 5  # fitted, not exit 2
    given = build_parser().parse_args([*argv, "--k", "10"])
    with pytest.raises(validation.UsageError, match="the corpus has 5 passages"):
        validation.k_within_corpus(given.k, 5)  # a k the user gave is still refused


def test_k_is_bounded_by_the_corpus_not_by_obliqa():
    args = build_parser().parse_args(["retrieve", "--out", "r.trec", "--k", "13982"])  # the PRA corpus's size
    assert args.k == 13982
    for argv in (["retrieve", "--help"], ["evaluate", "retrieval", "--help"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        assert "13012" not in out.getvalue() and "corpus size" in out.getvalue()


def test_a_mistyped_local_path_is_not_taken_as_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    monkeypatch.setattr(obliqa, "_hub_snapshot", lambda repo: pytest.fail(f"{repo} taken as a Hub id"))
    for typo in ("out/pra", "out/pra/documents", "corpora/pra/x", "out/p.json", "./pra/x", "C:\\pra/x"):
        with pytest.raises(DataError, match="data folder not found"):
            obliqa.resolve_data_dir(typo)
    asked = []
    monkeypatch.setattr(obliqa, "_hub_snapshot", lambda repo: asked.append(repo) or tmp_path)
    assert obliqa.resolve_data_dir("RegNLP/ObliQA") == tmp_path and asked == ["RegNLP/ObliQA"]


def test_evaluate_questions_whose_gold_maps_nowhere_says_so(five, tmp_path, caplog):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"QuestionID": "q1", "Question": "What must an insurer file?",
                                      "Gold": [{"text": "An insurer must file a solvency return."}]}]), "utf-8")
    run = tmp_path / "r.trec"
    passage = json.loads((five / "documents" / "1.json").read_text("utf-8"))[0]["ID"]
    run.write_text(f"q1 Q0 {passage} 1 1.0 bm25\n", "utf-8")
    with caplog.at_level(logging.ERROR):
        rc = main(["evaluate", "retrieval", "--data", str(five), "--questions", str(questions), "--run", str(run)])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert rc == 2 and len(errors) == 1, errors
    assert "wrong split" not in errors[0] and "none of its 1 gold passages maps to the corpus" in errors[0]


def test_ingest_counts_its_passages_in_the_right_number(tmp_path):
    """One text file of one rule: 'wrote 1 passage of 1 document', not '1 passages of 1 documents'."""
    source = tmp_path / "rules"
    source.mkdir()
    (source / "rule.txt").write_text("1.1 A firm must keep records of every client order.\n", encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["data", "ingest", str(source), "--out", str(tmp_path / "corpus")]) == 0
    assert f"wrote 1 passage of 1 document to {tmp_path / 'corpus'}" in out.getvalue()
