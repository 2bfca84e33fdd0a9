"""Metrics on a hand-built example, tie-breaking, and the TREC round trip."""

from __future__ import annotations

import pytest

from rirag.data.runs import read_trec, write_trec
from rirag.errors import DataError
from rirag.retrieval.metrics import evaluate_run

QRELS = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
RUN = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7}, "q2": {"y": 0.5, "z": 0.4, "c": 0.3}}  # q3: nothing retrieved


def test_metrics_match_hand_computation():
    # q1: hits at ranks 1 and 3 of 2 relevant; q2: hit at rank 3; q3: no result
    ap1, ap2 = (1 / 1 + 2 / 3) / 2, (1 / 3) / 1
    import math

    ndcg1 = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    ndcg2 = (1 / math.log2(4)) / 1
    m = evaluate_run(QRELS, RUN, k=10, per_query=True)
    assert m["n_questions"] == 3
    assert m["recall@10"] == pytest.approx((1 + 1 + 0) / 3)
    assert m["map@10"] == pytest.approx((ap1 + ap2) / 3)
    assert m["mrr@10"] == pytest.approx((1 + 1 / 3) / 3)
    assert m["ndcg@10"] == pytest.approx((ndcg1 + ndcg2) / 3)
    assert m["per_query"]["q3"]["recall@10"] == 0.0
    assert m["per_query"]["q1"]["map@10"] == pytest.approx(ap1)
    m2 = evaluate_run(QRELS, RUN, k=2)
    # at depth 2 only q1's first hit counts: recall 1/2, AP (1/1)/2
    assert m2["recall@2"] == pytest.approx(0.5 / 3)
    assert m2["map@2"] == pytest.approx(0.5 / 3)


def test_ties_are_broken_by_document_id():
    qrels = {"q": {"b": 1}}
    m = evaluate_run(qrels, {"q": {"b": 1.0, "a": 1.0}}, k=1)
    assert m["recall@1"] == 0.0  # "a" sorts first among equal scores
    m = evaluate_run(qrels, {"q": {"b": 1.0, "c": 1.0}}, k=1)
    assert m["recall@1"] == 1.0


def test_empty_qrels_is_an_error():
    with pytest.raises(DataError):
        evaluate_run({}, RUN)


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz"])
def test_trec_round_trip(tmp_path, name):
    run = {"q1": {"a": 0.123456789012, "x": 0.8, "b": 1 / 3}, "q2": {"c": 2.0, "d": 2.0}}
    path = write_trec(run, tmp_path / name, system="bm25")
    back = read_trec(path)
    assert back == run  # full precision survives
    lines = (path.read_bytes() if name.endswith(".trec") else __import__("gzip").decompress(path.read_bytes()))
    first = lines.decode().splitlines()
    assert first[0].split() == ["q1", "Q0", "x", "1", "0.8", "bm25"]
    assert [ln.split()[2] for ln in first if ln.startswith("q2")] == ["c", "d"]  # tie: by id
    assert evaluate_run(QRELS, back, k=10) == evaluate_run(QRELS, run, k=10)


def test_trec_depth_and_bad_lines(tmp_path):
    path = write_trec({"q": {str(i): float(i) for i in range(20)}}, tmp_path / "r.trec", depth=5)
    assert len(path.read_text().splitlines()) == 5
    bad = tmp_path / "bad.trec"
    bad.write_text("q Q0 a 1 0.5 sys\nq Q0 b 2 notanumber sys\n")
    with pytest.raises(DataError, match=r"bad\.trec: line 2"):
        read_trec(bad)
    bad.write_text("q Q0 a 1 0.5\n")
    with pytest.raises(DataError, match="line 1: expected 6 fields"):
        read_trec(bad)
    with pytest.raises(DataError, match="not found"):
        read_trec(tmp_path / "missing.trec")


def test_refused_system_name_leaves_previous_file(tmp_path):
    """The argument check comes before anything is written."""
    path = write_trec({"q": {"a": 1.0}}, tmp_path / "r.trec")
    before = path.read_text()
    with pytest.raises(ValueError):
        write_trec({"q": {"a": 1.0}}, path, system="two words")
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.trec"]


def test_failed_write_leaves_previous_file(tmp_path, monkeypatch):
    """A write that fails part-way (the disk fills after half the bytes are out) leaves the previous run as it was,
    and no temporary file behind."""
    import os

    import rirag.io

    path = write_trec({"q": {"a": 1.0}}, tmp_path / "r.trec")
    before = path.read_bytes()
    real_fdopen = os.fdopen
    written = []

    class DiskFull:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[: len(data) // 2])
            self.fh.flush()
            written.append(len(data) // 2)
            raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(rirag.io.os, "fdopen", lambda fd, mode: DiskFull(real_fdopen(fd, mode)))
        with pytest.raises(OSError, match="No space left on device"):
            write_trec({"q": {"a": 1.0, "b": 0.5, "c": 0.25}}, path)
    assert written and written[0] > 0  # the failure came during the write itself, after part of it was out
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.trec"]


@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_nan_and_infinite_scores_are_refused_naming_the_line(tmp_path, score):
    """Issue 33: a nan score was read, ranked nowhere, and changed MAP@10 from 0.661 to 0.462 without a word."""
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d1 1 2.5 s\nq1 Q0 d2 2 {score} s\n")
    with pytest.raises(DataError, match=rf"run.trec: line 2: score '{score}' of document d2 \(query q1\) is not a "
                                        "finite number"):
        read_trec(path)
    out = tmp_path / "written.trec"
    with pytest.raises(DataError, match="not a finite number; nothing written"):
        write_trec({"q1": {"d1": 1.0, "d2": float(score)}}, out)
    assert not out.exists()
