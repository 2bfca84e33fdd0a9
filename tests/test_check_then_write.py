"""Nothing half-written, nothing silent (issue 33): each bad input of its Why list, run as a user runs it (a
subprocess on the tiny dataset), ends with one line on stderr naming the file, record or field, exit status 2, and
the folder of ``--out`` byte-identical before and after (no ``[]`` answers, no manifest, no lock, no folder made);
the corrected command into the same ``--out`` then succeeds without ``--overwrite``.
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
from rirag.data.runs import read_trec
from tests.test_generation_prompts import _tiny_classifier

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def classifier(tmp_path):
    return _tiny_classifier(tmp_path / "obligation", "obligation")


def _tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: files with a hash of their bytes, folders as such."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder")
            for p in sorted(folder.rglob("*"))}


def _refused(argv: list[str], work: Path, data: Path) -> str:
    """Run ``rirag argv`` in ``work``; it must exit 2 with one error line, the last on stderr, and leave ``work`` as
    it was. Returns that line."""
    before = _tree(work)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "RIRAG_DATA_DIR": str(data)}
    proc = subprocess.run([sys.executable, "-m", "rirag.cli", *argv], cwd=work, env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR") or ": error:" in line]
    assert len(errors) == 1 and errors[0] == proc.stderr.strip().splitlines()[-1], proc.stderr
    assert _tree(work) == before  # nothing written, nothing left behind
    return errors[0]


def _bm25_run(data: Path, out: Path, split: str = "original-dev") -> Path:
    assert main(["retrieve", "--data", str(data), "--split", split, "--retriever", "bm25", "--out", str(out),
                 "--k", "5"]) == 0
    return out


def _answer(data, run, out, clf, *extra) -> list[str]:
    return ["answer", "--data", str(data), "--split", "original-dev", "--run", str(run), "--out", str(out),
            "--generator", "extractive", "--generator-model", str(clf), *extra]


def _answered(out: Path) -> list[str]:
    return [r["QuestionID"] for r in json.loads(out.read_text())]


def test_a_run_with_passage_ids_not_in_the_corpus(tiny_data_dir, tmp_path, classifier):
    """It wrote `a.json` ([]) and its manifest, and the corrected rerun was refused ('holds answers of another run')."""
    work = tmp_path / "work"
    work.mkdir()
    good = _bm25_run(tiny_data_dir, tmp_path / "good.trec")
    bad = work / "bogus.trec"
    bad.write_text(good.read_text().replace("d1-p1", "no-such-passage"))
    out = work / "out" / "a.json"
    line = _refused(_answer(tiny_data_dir, bad, out, classifier), work, tiny_data_dir)
    assert "bogus.trec" in line and "'no-such-passage'" in line and "not in the corpus" in line
    assert not (work / "out").exists()
    assert main(_answer(tiny_data_dir, good, out, classifier)) == 0  # the corrected run, no --overwrite
    assert _answered(out) == list(read_trec(good))  # every question of the split, in order


def test_nan_and_infinite_scores_are_refused_naming_the_line(tiny_data_dir, tmp_path, classifier):
    """A run with every third score nan was evaluated (MAP@10 0.661 -> 0.462, no warning) and answered."""
    work = tmp_path / "work"
    work.mkdir()
    good = _bm25_run(tiny_data_dir, tmp_path / "good.trec")
    lines = good.read_text().splitlines(keepends=True)
    nan = work / "nan.trec"
    nan.write_text("".join(" ".join([*ln.split()[:4], "nan", ln.split()[5]]) + "\n" if i % 3 == 2 else ln
                           for i, ln in enumerate(lines)))
    inf = work / "inf.trec"
    inf.write_text("".join(lines[:1]) + " ".join([*lines[1].split()[:4], "-inf", "bm25"]) + "\n"
                   + "".join(lines[2:]))
    line = _refused(["evaluate", "retrieval", "--data", str(tiny_data_dir), "--split", "original-dev", "--run",
                     str(nan), "--json", str(work / "m.json")], work, tiny_data_dir)
    assert "nan.trec: line 3:" in line and "'nan'" in line and "not a finite number" in line
    out = work / "a.json"
    line = _refused(_answer(tiny_data_dir, inf, out, classifier), work, tiny_data_dir)
    assert "inf.trec: line 2:" in line and "'-inf'" in line
    assert main(_answer(tiny_data_dir, good, out, classifier)) == 0 and _answered(out) == list(read_trec(good))


def test_an_empty_question_is_refused_before_the_data_loads(tiny_data_dir, tmp_path, classifier, monkeypatch):
    """It was refused only after the data load and the BM25 index, left a manifest, and named neither the file nor
    the record ('query q1: empty query text')."""
    work = tmp_path / "work"
    work.mkdir()
    questions = work / "questions.json"
    records = [{"QuestionID": "x1", "Question": "What records must be kept?"}, {"QuestionID": "x2", "Question": "  "}]
    questions.write_text(json.dumps(records))
    out = work / "a.json"
    argv = ["answer", "--data", str(tiny_data_dir), "--questions", str(questions), "--out", str(out), "--retriever",
            "bm25", "--generator", "extractive", "--generator-model", str(classifier)]
    line = _refused(argv, work, tiny_data_dir)
    assert "questions.json: record 1 (QuestionID 'x2'): field 'Question' is empty" in line
    import rirag.generation.session as session

    def no_load(*args, **kwargs):
        raise AssertionError("the data loaded before the questions were checked")

    with monkeypatch.context() as m:  # in-process: refused before the data loads (so before any index is built)
        m.setattr(session, "load_obliqa", no_load)
        assert main(argv) == 2
    records[1]["Question"] = "What may the Regulator require?"
    questions.write_text(json.dumps(records))
    assert main(argv) == 0 and _answered(out) == ["x1", "x2"]


def test_submit_with_its_generator_model_missing(tiny_data_dir, tmp_path, classifier, monkeypatch):
    """`submit --generator extractive` without the trained classifier exited 2 after answers.json and the manifest
    were written."""
    work = tmp_path / "work"
    work.mkdir()
    out = work / "submission"
    base = ["submit", "--data", str(tiny_data_dir), "--out", str(out), "--retriever", "bm25", "--generator",
            "extractive"]
    line = _refused(base, work, tiny_data_dir)  # no artifacts/obligation_classifier under work/
    assert "--generator-model artifacts/obligation_classifier: folder not found" in line and "make models" in line
    assert not out.exists()
    monkeypatch.chdir(work)
    assert main([*base, "--generator-model", str(classifier)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["answers.json", "answers.json.manifest.json",
                                                     "answers.shared-task.json", "retrieval.trec", "submission.json"]


def test_a_manifest_alone_never_blocks_a_rerun(tiny_data_dir, tmp_path, classifier):
    """A manifest of another run without answers beside it (left by an older rirag) is not a run to protect."""
    good = _bm25_run(tiny_data_dir, tmp_path / "good.trec")
    out = tmp_path / "a.json"
    (tmp_path / "a.json.manifest.json").write_text(json.dumps({"format": 1, "command": "answer", "k": 99}))
    assert main(_answer(tiny_data_dir, good, out, classifier)) == 0 and _answered(out) == list(read_trec(good))
    assert json.loads((tmp_path / "a.json.manifest.json").read_text())["k"] == 10


def test_a_failure_before_the_first_answer_leaves_out_as_it_was(tiny_data_dir, tmp_path, classifier, monkeypatch):
    """Whatever fails after the checks and before the first answer (here the generator), --out is left as it was,
    the manifest of the run before included; the rerun then resumes nothing and needs no --overwrite."""
    import rirag.generation.session as session

    good = _bm25_run(tiny_data_dir, tmp_path / "good.trec")
    work = tmp_path / "work"
    work.mkdir()
    old_manifest = work / "a.json.manifest.json"
    old_manifest.write_text('{"format": 1, "k": 3}')  # a manifest alone, of another run
    before = _tree(work)
    real = session.answer_all

    def failing(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session, "answer_all", failing)
    assert main(_answer(tiny_data_dir, good, work / "a.json", classifier)) == 2
    assert _tree(work) == before
    assert main(_answer(tiny_data_dir, good, work / "sub" / "a.json", classifier)) == 2
    assert _tree(work) == before  # the folder it made for --out is gone too
    monkeypatch.setattr(session, "answer_all", real)
    assert main(_answer(tiny_data_dir, good, work / "a.json", classifier)) == 0


def test_a_run_larger_than_max_bytes_is_refused_before_it_is_built(tiny_data_dir, tmp_path):
    """`--k 13012` on original-test wrote a 2.09 GB run at 6.6 GB peak memory with no warning."""
    work = tmp_path / "work"
    work.mkdir()
    out = work / "run.trec"
    argv = ["retrieve", "--data", str(tiny_data_dir), "--split", "original-dev", "--retriever", "bm25", "--out",
            str(out), "--k", "10", "--max-bytes", "1000"]
    line = _refused(argv, work, tiny_data_dir)
    assert "--out" in line and "the run would be up to about" in line and "the 1.0 kB limit" in line
    assert "--max-bytes" in line
    estimate = int(line.split("--max-bytes ")[1].split()[0])
    assert main(argv[:-1] + [str(estimate)]) == 0
    assert 0 < out.stat().st_size <= estimate  # the estimate is an upper bound of what is written


def test_one_corpus_size_what_the_index_holds(real_obliqa):
    """The parse-time bound of the depths says what the index holds, and the build report records all three."""
    from rirag.constants import OBLIQA_EMPTY_PASSAGES, OBLIQA_PASSAGE_RECORDS, OBLIQA_PASSAGES
    from rirag.validation import LIMITS

    report = real_obliqa.report()
    assert len(real_obliqa.corpus) == report["indexed_passages"] == OBLIQA_PASSAGES == LIMITS["depth"][0]
    assert report["passage_records"] == OBLIQA_PASSAGE_RECORDS
    assert report["empty_passages"] == OBLIQA_EMPTY_PASSAGES
