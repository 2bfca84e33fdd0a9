"""One retriever, every answering path (issue 47): ``rirag ask``, ``rirag answer --run`` over a run of depth 10 and
of depth 100, and ``rirag submit`` give the answerer the same context for each question, under each context filter
whose depth those runs hold, and under a filter that applies the paper's rule over the top 10."""

from __future__ import annotations

import json

import pytest

from rirag.cli import build_parser, main
from rirag.cli.answers import session_from_args
from rirag.retrieval import filtering
from rirag.retrieval.filtering import CONTEXT_FILTERS, ContextFilter
from tests.conftest import write_tiny_obliqa
from tests.test_generation_prompts import _tiny_classifier

QUESTIONS = ["How long must capital adequacy records be kept?", "What may the Regulator require about sanctions "
             "screening reporting?", "Which client money and market abuse reports apply?"]
#: The paper's rule over the top 10 only: normalised over a fixed depth, so the run's depth cannot matter.
RULE_AT_10 = ContextFilter("rule-at-10", 0.7, 0.2, depth=10)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    t = tmp_path_factory.mktemp("paths")
    data = write_tiny_obliqa(t / "data", n_docs=40)  # 120 passages with text: more than the deepest run
    questions = t / "questions.json"
    questions.write_text(json.dumps([{"QuestionID": f"s{i}", "Question": q} for i, q in enumerate(QUESTIONS)]))
    runs = {}
    for depth in (10, 100):
        runs[depth] = t / f"run{depth}.trec"
        assert main(["retrieve", "--data", str(data), "--questions", str(questions), "--retriever", "bm25",
                     "--k", str(depth), "--out", str(runs[depth])]) == 0
    return t, data, questions, runs, _tiny_classifier(t / "obligation", "obligation")


def _contexts(path) -> dict[str, list[str]]:
    return {r["QuestionID"]: r["RetrievedIDs"] for r in json.loads(path.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("name", [*CONTEXT_FILTERS, RULE_AT_10.name])
def test_one_retriever_every_path_gives_the_same_contexts(corpus, name, monkeypatch, caplog):
    t, data, questions, runs, classifier = corpus
    monkeypatch.setitem(filtering.CONTEXT_FILTERS, RULE_AT_10.name, RULE_AT_10)
    chosen = filtering.CONTEXT_FILTERS[name]
    common = ["--data", str(data), "--generator", "extractive", "--generator-model", classifier,
              "--context-filter", name]
    out = t / name
    paths = {}
    for depth, run in runs.items():
        answers = out / f"answer-run{depth}.json"
        caplog.clear()
        assert main(["answer", "--questions", str(questions), "--run", str(run), "--out", str(answers),
                     *common]) == 0
        shallow = "normalises over the top" in caplog.text
        if depth >= chosen.depth:  # a shallower run cannot hold what the filter normalises over: said
            paths[f"answer --run (depth {depth})"] = _contexts(answers)
        assert shallow == (chosen.filters and depth < chosen.depth)
    assert main(["submit", "--questions", str(questions), "--out", str(out / "submission"), "--retriever", "bm25",
                 *common]) == 0
    paths["submit"] = _contexts(out / "submission" / "answers.json")
    session = session_from_args(build_parser().parse_args(["ask", *common, "--retriever", "bm25", *QUESTIONS]))
    paths["ask"] = {f"s{i}": [p.id for p in session.ask(q).passages] for i, q in enumerate(QUESTIONS)}
    first = next(iter(paths.values()))
    assert all(len(ids) >= 1 for ids in first.values())
    assert {path: c for path, c in paths.items() if c != first} == {}
    assert len(paths) == (4 if chosen.depth <= 10 else 3)
