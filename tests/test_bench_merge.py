"""Benchmarks never destroy results: ``make bench`` merges its rows into the committed results file.

``make bench`` runs ``benchmarks/retrieval.py`` with its defaults (plain mode: BM25 on every split, into
``benchmarks/results/retrieval.json``). Here the same code path runs on the tiny dataset against a copy of the
committed file: every row it did not re-measure, and every top-level field, must come back unchanged.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from _scripts import load_script
from rirag.errors import DataError
from rirag.io import merge_results_file, merge_rows

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "benchmarks" / "results" / "retrieval.json"


def _load_benchmark(name: str):
    return load_script(f"benchmarks/{name}.py", f"bench_{name}")


def test_make_bench_runs_the_plain_mode_of_the_retrieval_benchmark():
    """The test below exercises what ``make bench`` runs: benchmarks/retrieval.py without mode flags."""
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M).group(1)
    assert "benchmarks/retrieval.py" in recipe
    assert not re.search(r"--(ablation|update-|out)", recipe)


def test_make_bench_keeps_every_committed_row_it_did_not_remeasure(tiny_data_dir, tmp_path, monkeypatch):
    bench = _load_benchmark("retrieval")
    out = tmp_path / "retrieval.json"
    shutil.copy(COMMITTED, out)
    before = json.loads(out.read_text())
    monkeypatch.setattr("sys.argv", ["benchmarks/retrieval.py"])
    config = bench.parse_args(["--data", str(tiny_data_dir), "--out", str(out), "--splits",
                               "original-dev,original-test"])
    assert config.out == str(out) and not config.ablation
    bench.main(config)
    after = json.loads(out.read_text())

    measured = {("original", "original-dev", "bm25"), ("original", "original-test", "bm25")}
    key = lambda r: tuple(r.get(k) for k in bench.ROW_KEY)  # noqa: E731
    kept_before = [r for r in before["rows"] if key(r) not in measured]
    kept_after = [r for r in after["rows"] if key(r) not in measured]
    assert kept_after == kept_before  # same rows, same values, same order
    assert len(kept_before) == len(before["rows"]) - 1  # the committed file has an original-test BM25 row
    new = {key(r): r for r in after["rows"] if key(r) in measured}
    assert set(new) == measured
    assert new[("original", "original-test", "bm25")]["questions"] == 6  # the tiny split, re-measured
    # top-level fields (command, best rows, settings) unchanged; the run is logged under updates
    for field in set(before) - {"updates"}:
        if field != "rows":
            assert after[field] == before[field], field
    assert after["updates"][:-1] == before.get("updates", [])
    assert sorted(map(tuple, after["updates"][-1]["rows"])) == sorted(measured)
    assert after["updates"][-1]["command"].startswith("python benchmarks/retrieval.py")


def test_a_new_results_file_is_written_whole(tiny_data_dir, tmp_path, monkeypatch):
    bench = _load_benchmark("retrieval")
    out = tmp_path / "new.json"
    monkeypatch.setattr("sys.argv", ["benchmarks/retrieval.py"])
    bench.main(bench.parse_args(["--data", str(tiny_data_dir), "--out", str(out), "--splits", "original-dev"]))
    result = json.loads(out.read_text())
    assert "updates" not in result and result["command"].startswith("python ")
    assert [r["row"] for r in result["rows"]] == ["bm25"]


def test_merge_rows_replaces_in_place_and_appends():
    old = [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]
    keep = copy.deepcopy(old)
    assert merge_rows(old, [{"k": 2, "v": "B"}, {"k": 3, "v": "c"}], ["k"]) == [
        {"k": 1, "v": "a"}, {"k": 2, "v": "B"}, {"k": 3, "v": "c"}]
    assert old == keep  # the input is not modified


def test_a_file_that_is_not_a_results_file_is_never_overwritten(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('[{"a": 1}]')
    with pytest.raises(DataError, match="not a results file"):
        merge_results_file(path, [{"k": 1}], ["k"], {"command": "x"})
    assert path.read_text() == '[{"a": 1}]'
