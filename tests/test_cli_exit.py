"""`rirag ask` leaves without the interpreter's teardown (:func:`rirag.cli.exit_at_once`): what it prints, logs and
writes is all there, and its exit status is the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ask(args: list[str], data: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "RIRAG_DATA_DIR": str(data)}
    return subprocess.run([sys.executable, "-m", "rirag.cli", "ask", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)


def test_ask_prints_logs_and_writes_everything_before_it_leaves(tiny_data_dir, tmp_path):
    timings = tmp_path / "timings.json"
    proc = _ask(["What records must be kept?", "What may the Regulator require?", "--data", str(tiny_data_dir),
                 "--retriever", "bm25", "--generator", "extractive", "--generator-model", "modal-cues",
                 "--timings", str(timings)], tiny_data_dir, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Sources:") == 2 and proc.stdout.endswith("\n")  # the second answer too, flushed
    assert "cold start to first answer" in proc.stderr  # the last log line
    assert len(json.loads(timings.read_text())["answer_s"]) == 2


def test_a_refused_ask_keeps_its_exit_status(tiny_data_dir, tmp_path):
    proc = _ask(["What records must be kept?", "--data", str(tmp_path / "missing"), "--retriever", "bm25",
                 "--generator", "extractive", "--generator-model", "modal-cues"], tiny_data_dir, tmp_path)
    assert proc.returncode == 2 and "missing" in proc.stderr


def test_a_caller_of_main_keeps_its_process(tiny_data_dir, tmp_path):
    """Only the program (console script, ``python -m rirag.cli``) ends at once; ``main()`` returns to its caller."""
    code = ("import sys\nfrom rirag.cli import main\n"
            f"sys.argv = ['rirag', 'ask', 'What records must be kept?', '--data', {str(tiny_data_dir)!r}, "
            "'--retriever', 'bm25', '--generator', 'extractive', '--generator-model', 'modal-cues']\n"
            "status = main()\nprint('returned', status)")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("returned 0")
