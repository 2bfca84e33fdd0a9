"""Right after `make install`, with no trained model: the README's `rirag ask`, `rirag answer`, `rirag submit` and
the demo Space answer with citations through the default (focused) answerer.

Each command runs as a user would run it, in a folder without ``artifacts/`` (so no obligation classifier, judge or
trained encoder can be found), on the real ObliQA data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RIRAG = [sys.executable, "-m", "rirag.cli"]
CITED = re.compile(r"\[\d+\]")

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, data: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RIRAG_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(RIRAG + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, real_data_dir):
    """An empty working folder (no artifacts/) and two validation questions of the committed best run."""
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import split_questions

    folder = tmp_path_factory.mktemp("fresh")
    run = read_trec(REPO / "benchmarks" / "runs" / "validation.best.trec.gz")
    questions = [q for q in split_questions(load_obliqa(real_data_dir), "validation") if q.id in run][:2]
    (folder / "questions.json").write_text(json.dumps([{"QuestionID": q.id, "Question": q.text}
                                                       for q in questions]))
    assert not (folder / "artifacts").exists()
    return folder


def test_ask_answers_with_citations(fresh, real_data_dir):
    result = _run(["ask", "What must a PFP Operator that holds Client Assets do?"], fresh, real_data_dir)
    assert result.returncode == 0, result.stderr
    assert CITED.search(result.stdout) and "Sources:" in result.stdout
    assert "focused answerer" in result.stdout and "deontic cues" in result.stdout  # says what it used


def test_answer_and_submit_answer_with_citations(fresh, real_data_dir):
    answer = _run(["answer", "--questions", "questions.json", "--run",
                   str(REPO / "benchmarks" / "runs" / "validation.best.trec.gz"), "--out", "answers.json"],
                  fresh, real_data_dir)
    assert answer.returncode == 0, answer.stderr
    records = json.loads((fresh / "answers.json").read_text())
    assert len(records) == 2 and all(CITED.search(r["Answer"]) and r["Citations"] for r in records)

    submit = _run(["submit", "--questions", "questions.json", "--out", "submission"], fresh, real_data_dir)
    assert submit.returncode == 0, submit.stderr
    cited = json.loads((fresh / "submission" / "answers.json").read_text())
    assert len(cited) == 2 and all(CITED.search(r["Answer"]) for r in cited)
    manifest = json.loads((fresh / "submission" / "submission.json").read_text())
    assert manifest["generator"] == "focused"


def test_the_demo_space_answers_with_citations(fresh, real_data_dir, monkeypatch):
    sys.path.insert(0, str(REPO / "spaces" / "demo"))
    try:
        from backend import Backend, DemoSettings
    finally:
        sys.path.remove(str(REPO / "spaces" / "demo"))
    monkeypatch.chdir(fresh)
    settings = DemoSettings.from_env({"RIRAG_DATA_DIR": str(real_data_dir)})
    assert settings.generator == "focused"
    backend = Backend(settings)
    result = backend.answer("What must a PFP Operator that holds Client Assets do?")
    assert CITED.search(result["answer"]) and result["citations"]
