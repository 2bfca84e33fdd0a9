"""The walk of the commands (``benchmarks/code_walk.py``) on tiny inputs: ``rirag data ingest --questions`` never
calls back into ``rirag/cli/`` (issue 63), and ``rirag submit`` takes control back in ``cli/`` only from the
answering job."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import code_walk  # noqa: E402


def _walk(tmp_path, *command: str) -> dict:
    return code_walk.trace(code_walk.Config(list(command), "test", "test", results=str(tmp_path / "walk.json")))


def test_ingest_with_questions_never_returns_to_cli(tmp_path):
    source = tmp_path / "rules.md"
    source.write_text("# Records\n\n1.1 A firm must keep client money records for six years.\n")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"QuestionID": "q1", "Question": "How long are records kept?",
                                      "Gold": [{"text": "keep client money records"}]}]))
    walk = _walk(tmp_path, "data", "ingest", str(source), "--out", str(tmp_path / "corpus"), "--questions",
                 str(questions))
    assert walk["exit_status"] == 0
    assert walk["calls_into_cli"] == 0
    # the one climb allowed: the gold mapper calls the BM25 candidate finder the command hands it (an injected
    # index, so that data/ imports nothing of retrieval/)
    assert all(c.split(" -> ")[1].startswith("retrieval/gold_index.py:") for c in walk["climb_list"])
    assert "cli/data.py:cmd_data_ingest -> data/questions.py:ingest_with_questions" in walk["step_list"]
    assert str(tmp_path) not in walk["command"]  # no machine path in what is written


def test_submit_hands_over_to_the_job(tiny_data_dir, tmp_path):
    walk = _walk(tmp_path, "submit", "--data", str(tiny_data_dir), "--out", str(tmp_path / "o"), "--retriever",
                 "bm25", "--generator", "extractive", "--generator-model", "modal-cues")
    assert walk["exit_status"] == 0
    assert walk["cli_entries"] <= 3 and walk["calls_into_cli"] == 0
    assert all("generation/job.py" in entry for entry in walk["cli_entry_list"])
