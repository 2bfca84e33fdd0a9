"""Run folders and files that never mix (issue 23, item 2): ``rirag answer`` / ``submit`` write a manifest beside
their answers, resume only under the same manifest, refuse another run's answers (one line, exit 2) unless
``--overwrite``, and lock out a second writer; every such check comes before retrieval or any model loads.

Each case of the issue is run as a subprocess (what a user sees: the last line of stderr, the exit status, the files
left), and again in-process with retrieval, the generator and the run reader replaced by a sentinel that fails the
test if it is reached before the check.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rirag.cli import main
from rirag.constants import DEFAULT_CONTEXT_FILTER
from rirag.generation.runfiles import AnswersRun, build_manifest, differences, fingerprint
from rirag.retrieval.filtering import CONTEXT_FILTERS
from tests.test_generation_prompts import _tiny_classifier

OTHER_FILTER = next(name for name in CONTEXT_FILTERS if name != DEFAULT_CONTEXT_FILTER)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def classifier(tmp_path):
    return _tiny_classifier(tmp_path / "obligation", "obligation")


def _retrieve(data, split, out):
    assert main(["retrieve", "--data", str(data), "--split", split, "--retriever", "bm25", "--out", str(out),
                 "--k", "5"]) == 0
    return out


def _generator(classifier):
    return ["--generator", "extractive", "--generator-model", classifier]


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the cases: (setup in-process, then the refused argv) ------------------------------------------------------------


def _case_submit_over_older_answers(t, data, clf):
    """An older answers.json of other questions in the submission folder (written by submit on another file)."""
    other = t / "other.json"
    other.write_text(json.dumps([{"QuestionID": "old-1", "Question": "What must a firm report?"}]))
    out = t / "submission"
    assert main(["submit", "--data", str(data), "--out", str(out), "--questions", str(other), "--retriever",
                 "bm25", *_generator(clf)]) == 0
    return (["submit", "--data", str(data), "--out", str(out), "--retriever", "bm25", *_generator(clf)],
            ["holds answers of another run", "the questions", "1 questions from", "--overwrite"])


def _case_submit_over_answers_without_manifest(t, data, clf):
    """An answers.json written by an older rirag (no manifest): five records of other questions."""
    out = t / "submission"
    out.mkdir()
    (out / "answers.json").write_text(json.dumps([{"QuestionID": f"old-{i}", "Answer": "x"} for i in range(5)]))
    return (["submit", "--data", str(data), "--out", str(out), "--retriever", "bm25", *_generator(clf)],
            ["without a manifest", "--overwrite"])


def _case_submit_with_another_retriever(t, data, clf):
    out = t / "submission"
    assert main(["submit", "--data", str(data), "--out", str(out), "--retriever", "bm25", *_generator(clf)]) == 0
    return (["submit", "--data", str(data), "--out", str(out), "--retriever", "rank-fusion", *_generator(clf)],
            ["holds answers of another run", "retriever (bm25 there, rank-fusion now)"])


def _case_answer_out_reused_across_splits(t, data, clf):
    dev, test = _retrieve(data, "original-dev", t / "dev.trec"), _retrieve(data, "original-test", t / "test.trec")
    out = t / "answers.json"
    assert main(["answer", "--data", str(data), "--split", "original-dev", "--run", str(dev), "--out", str(out),
                 *_generator(clf)]) == 0
    return (["answer", "--data", str(data), "--split", "original-test", "--run", str(test), "--out", str(out),
             *_generator(clf)], ["the questions", "split original-dev", "split original-test"])


def _case_answer_with_another_generator_option(t, data, clf):
    dev = _retrieve(data, "original-dev", t / "dev.trec")
    out = t / "answers.json"
    assert main(["answer", "--data", str(data), "--split", "original-dev", "--run", str(dev), "--out", str(out),
                 *_generator(clf)]) == 0
    return (["answer", "--data", str(data), "--split", "original-dev", "--run", str(dev), "--out", str(out),
             *_generator(clf), "--context-filter", OTHER_FILTER],
            [f"context filter ({DEFAULT_CONTEXT_FILTER} there, {OTHER_FILTER} now)"])


def _case_submit_out_is_a_file(t, data, clf):
    (t / "submission.json").write_text("{}")
    return (["submit", "--data", str(data), "--out", str(t / "submission.json"), "--retriever", "bm25",
             *_generator(clf)], ["--out", "submission.json", "exists and is not a folder"])


CASES = {
    "submit into a folder holding older answers of other questions": _case_submit_over_older_answers,
    "submit over answers without a manifest": _case_submit_over_answers_without_manifest,
    "rerun submit with another retriever": _case_submit_with_another_retriever,
    "answer --out reused across splits": _case_answer_out_reused_across_splits,
    "answer rerun with another option": _case_answer_with_another_generator_option,
    "submit --out names an existing file": _case_submit_out_is_a_file,
}


def _env(data):
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "RIRAG_DATA_DIR": str(data)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_mixed_run_is_one_line_exit_2_and_nothing_changes(case, tiny_data_dir, tmp_path, classifier):
    work = tmp_path / "work"
    work.mkdir()
    argv, words = CASES[case](work, tiny_data_dir, classifier)
    before = _snapshot(work)
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", *argv], cwd=work, env=_env(tiny_data_dir),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ERROR rirag: "), proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("ERROR")] == [last]
    for word in words:
        assert word in last, last
    assert _snapshot(work) == before  # no partial, mixed or rewritten file; no lock left behind


class Heavy(BaseException):
    """Raised by retrieval, the generator or the run reader reached before the check."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_checks_come_before_retrieval_and_models(case, tiny_data_dir, tmp_path, classifier, patch_everywhere):
    import rirag.data.runs
    import rirag.generation.session as session

    argv, _ = CASES[case](tmp_path, tiny_data_dir, classifier)

    def heavy(*args, **kwargs):
        raise Heavy("heavy work before the check")

    for module, name in ((session, "build_generator"), (session, "build_retriever"),
                         (rirag.data.runs, "read_trec")):  # read_trec: the commands' own binding too
        patch_everywhere(module, name, heavy)
    assert main(argv) == 2


def test_the_sentinel_does_fire(tiny_data_dir, tmp_path, classifier, monkeypatch):
    import rirag.generation.session as session

    def heavy(*args, **kwargs):
        raise Heavy("reached")

    monkeypatch.setattr(session, "build_retriever", heavy)
    with pytest.raises(Heavy):
        main(["submit", "--data", str(tiny_data_dir), "--out", str(tmp_path / "s"), "--retriever", "bm25",
              *_generator(classifier)])


def test_two_writers_at_once(tiny_data_dir, tmp_path, classifier):
    """A second ``rirag answer`` on the same --out while the first holds the lock: one line, exit 2, nothing
    written; once the first is done, the same command runs."""
    import threading

    run = _retrieve(tiny_data_dir, "original-dev", tmp_path / "dev.trec")
    out = tmp_path / "answers.json"
    argv = ["answer", "--data", str(tiny_data_dir), "--split", "original-dev", "--run", str(run), "--out", str(out),
            *_generator(classifier)]
    # the first writer: a real rirag process, held inside its answering loop until the test lets it go
    script = ("import sys, time, pathlib, rirag.generation.session as c, rirag.cli\n"
              "real = c.answer_all\n"
              "def held(*a, **k):\n"
              "    pathlib.Path(sys.argv[1]).write_text('inside')\n"
              "    while not pathlib.Path(sys.argv[2]).exists():\n"
              "        time.sleep(0.05)\n"
              "    return real(*a, **k)\n"
              "c.answer_all = held\n"
              "sys.exit(rirag.cli.main(sys.argv[3:]))\n")
    inside, go = tmp_path / "inside", tmp_path / "go"
    first = subprocess.Popen([sys.executable, "-c", script, str(inside), str(go), *argv], env=_env(tiny_data_dir),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        timer = threading.Timer(150, first.kill)
        timer.start()
        while not inside.exists():
            assert first.poll() is None, first.communicate()
            threading.Event().wait(0.05)
        second = subprocess.run([sys.executable, "-m", "rirag.cli", *argv], env=_env(tiny_data_dir),
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        last = second.stderr.strip().splitlines()[-1]
        assert "another rirag command is writing these answers" in last and "answers.json.lock" in last
        assert not out.exists()
    finally:
        go.write_text("go")
        _, err = first.communicate(timeout=150)
        timer.cancel()
    assert first.returncode == 0, err
    records = json.loads(out.read_text())
    assert len(records) == len(rirag_read_trec(run))
    assert not (tmp_path / "answers.json.lock").exists()
    # the finished run, resumed under the same manifest, answers nothing new
    assert main(argv) == 0
    assert json.loads(out.read_text()) == records


def rirag_read_trec(path):
    from rirag.data.runs import read_trec

    return read_trec(path)


def test_overwrite_starts_afresh(tiny_data_dir, tmp_path, classifier, monkeypatch):
    import rirag.generation.session as session
    from rirag.errors import DataError

    out = tmp_path / "submission"
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"QuestionID": "old-1", "Question": "What must a firm report?"}]))
    base = ["submit", "--data", str(tiny_data_dir), "--out", str(out), *_generator(classifier)]
    assert main([*base, "--questions", str(other), "--retriever", "bm25"]) == 0
    assert main([*base, "--retriever", "rank-fusion"]) == 2
    assert [r["QuestionID"] for r in json.loads((out / "answers.json").read_text())] == ["old-1"]
    # --overwrite, then a failure before the first answer: the folder is left as it was (the old run put back,
    # its manifest too), nothing of the failed run beside it
    real = session.build_retriever

    def failing(*args, **kwargs):
        raise DataError("the retriever failed")

    before = _snapshot(out)
    monkeypatch.setattr(session, "build_retriever", failing)
    assert main([*base, "--retriever", "rank-fusion", "--overwrite"]) == 2
    assert _snapshot(out) == before and "answers.json.manifest.json" in before
    monkeypatch.setattr(session, "build_retriever", real)
    assert main([*base, "--retriever", "rank-fusion", "--overwrite"]) == 0
    assert [r["QuestionID"] for r in json.loads((out / "answers.json").read_text())] == ["u1"]  # no old record
    manifest = json.loads((out / "answers.json.manifest.json").read_text())
    assert manifest["retriever"] == "rank-fusion" and manifest["questions"].startswith("1 questions from")
    assert manifest["generator"] == "extractive" and manifest["k"] == 10 \
        and manifest["filter"] == DEFAULT_CONTEXT_FILTER
    assert "device" not in manifest["generator_options"]  # how, not what: not compared
    assert main([*base, "--retriever", "rank-fusion"]) == 0  # the same run resumes
    assert main([*base, "--retriever", "rank-fusion", "--device", "cpu"]) == 0  # another device: still the same run


def test_manifest_differences_and_check(tmp_path):
    questions = [("q1", "What?"), ("q2", "Why?")]
    assert fingerprint(questions) == fingerprint(list(questions)) != fingerprint(questions[::-1])
    common = dict(generator={"generator": "extractive", "generator_options": {"adapter": None}}, strategy="zero-shot",
                  k=10, context_filter="rirag")
    a = build_manifest("answer", questions, "split validation", passages={"retriever": "bm25"}, **common)
    b = build_manifest("answer", questions, "a copy", passages={"retriever": "bm25"}, **common)
    assert differences(a, b) == []  # where the questions came from is information, not identity
    c = build_manifest("answer", questions[:1], "q.json", passages={"retriever": "dense"}, **common)
    assert [d.split(" (")[0] for d in differences(a, c)] == ["the questions", "retriever"]
    out = tmp_path / "answers.json"
    AnswersRun(out, a).check()  # nothing there: fine
    with AnswersRun(out, a):
        assert (tmp_path / "answers.json.lock").exists()
        assert (tmp_path / "answers.json.manifest.json").exists()
    # no answer written: neither the lock nor the manifest is left behind
    assert not (tmp_path / "answers.json.lock").exists() and list(tmp_path.iterdir()) == []
    with AnswersRun(out, a):
        out.write_text("[]")  # an answers file: its manifest stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.json", "answers.json.manifest.json"]
    AnswersRun(out, b).check()
    from rirag.errors import UsageError

    with pytest.raises(UsageError, match="differs in the questions"):
        AnswersRun(out, c).check()
    (tmp_path / "answers.json.manifest.json").write_text("{not json")
    with pytest.raises(UsageError, match="unreadable"):
        AnswersRun(out, a).check()
    AnswersRun(out, c, overwrite=True).check()


def test_answers_of_a_format_1_manifest_are_not_resumed(tmp_path):
    """Format 1 answers said the missing-part line by default without naming it; the default is now off, so such
    answers are refused (with the field named), never resumed as if written without the line."""
    from rirag.errors import DataError
    from rirag.generation.runfiles import AnswersRun, build_manifest

    manifest = build_manifest("answer", [("q1", "a question")], "q.json", passages={"run": "r.trec", "run_sha256": "x"},
                              generator={"generator": "focused", "generator_options": {}}, strategy="zero-shot", k=10,
                              context_filter="top-k")
    answers = tmp_path / "a.json"
    answers.write_text("[]")
    (tmp_path / "a.json.manifest.json").write_text(json.dumps({**manifest, "format": 1}))
    with pytest.raises(DataError, match="manifest format"):
        AnswersRun(answers, manifest).check()
