"""The rirag command end to end on the tiny dataset: retrieve → TREC → evaluate; errors exit 2 with a message."""

from __future__ import annotations

import json

import pytest

from rirag.cli import main
from rirag.data.runs import read_trec

#: `rirag retrieve` with BM25 named (its default is the CV table's best row, as for ask / answer / submit).
RETRIEVE = ["retrieve", "--retriever", "bm25"]


def test_retrieve_then_evaluate(tiny_data_dir, tmp_path, capsys):
    run_path = tmp_path / "run.trec"
    assert main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(run_path),
                 "--k", "5"]) == 0
    run = read_trec(run_path)
    assert len(run) == 7 and all(len(v) <= 5 for v in run.values())
    assert main(["evaluate", "retrieval", "--data", str(tiny_data_dir), "--split", "original-dev",
                 "--run", str(run_path), "--json", str(tmp_path / "m.json"),
                 "--per-query", str(tmp_path / "pq.json")]) == 0
    table = capsys.readouterr().out
    assert "recall@10" in table and "| run.trec | original-dev |" in table
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert 0.0 < metrics["recall@10"] <= 1.0
    assert len(json.loads((tmp_path / "pq.json").read_text())) == metrics["n_questions"]


def test_unknown_split_and_missing_data_exit_2(tiny_data_dir, tmp_path, capsys):
    assert main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "dev", "--out", str(tmp_path / "r")]) == 2
    assert "unknown split 'dev'" in capsys.readouterr().err  # refused when parsed, before the data loads
    assert main(["evaluate", "retrieval", "--data", str(tmp_path / "none"), "--split", "original-test",
                 "--run", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


def test_data_build_command(tiny_data_dir, tmp_path, capsys):
    assert main(["data", "build", "--data", str(tiny_data_dir), "--out", str(tmp_path / "ds"),
                 "--audit-embedder", "none"]) == 0
    out = capsys.readouterr().out
    assert "## leakage-free" in out and "overlap audit: exact" in out
    assert (tmp_path / "ds" / "leakage-free" / "audit.json").exists()


def test_retriever_options_from_the_command_line(tiny_data_dir, tmp_path, capsys):
    from rirag.data.runs import read_trec

    base, tuned = tmp_path / "a.trec", tmp_path / "b.trec"
    assert main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(base)]) == 0
    assert main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(tuned),
                 "--option", "k1=0.5", "--option", "b=0", "--option", "stemmer=none"]) == 0
    assert read_trec(base) != read_trec(tuned)
    assert main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(tuned),
                 "--option", "kay1=0.5"]) == 2
    assert "--option kay1: unknown option" in capsys.readouterr().err
    assert main([*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(tuned),
                 "--option", "k1"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_only_the_program_itself_freezes_the_garbage_collector_before_exiting(tiny_data_dir, tmp_path, monkeypatch):
    """`rirag` (main() reading sys.argv) skips Python's final collections; a caller passing argv keeps its own GC."""
    import gc
    import sys

    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    argv = [*RETRIEVE, "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(tmp_path / "run.trec")]
    assert main(argv) == 0 and frozen == []
    monkeypatch.setattr(sys, "argv", ["rirag", *argv])
    assert main() == 0 and frozen == [True]


def test_retrieve_without_retriever_uses_the_default_of_ask_answer_and_submit(tiny_data_dir, tmp_path, capsys):
    """Issue 68, item 6: `rirag retrieve` alone used BM25 while ask, answer and submit used the CV table's best row;
    one default now, named in each command's help (the tests' table is absent: rirag's fallback, rank-fusion)."""
    import contextlib
    import io

    from rirag.cli import build_parser
    from rirag.cli.options import WHY_DEFAULT_RETRIEVER
    from rirag.retrieval.defaults import default_retriever

    out = tmp_path / "run.trec"
    assert main(["retrieve", "--data", str(tiny_data_dir), "--split", "original-dev", "--out", str(out)]) == 0
    assert {line.split()[-1] for line in out.read_text("utf-8").splitlines()} == {default_retriever().name}
    for command in (["retrieve", "--out", "r"], ["ask", "q"], ["answer", "--out", "a"], ["submit", "--out", "s"],
                    ["serve"]):
        assert build_parser().parse_args(command).retriever is None
        command = command[:1]
        text = io.StringIO()
        with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
            build_parser().parse_args([*command, "--help"])
        assert WHY_DEFAULT_RETRIEVER in " ".join(text.getvalue().split()).replace("- ", "-"), command
