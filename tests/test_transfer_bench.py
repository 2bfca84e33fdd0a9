"""benchmarks/transfer.py's per-question metrics, verdicts and skips, and its section of docs/results.md."""

from __future__ import annotations

import numpy as np
import pytest

from _scripts import load_script


@pytest.fixture(scope="module")
def transfer():
    return load_script("benchmarks/transfer.py")


def test_all_at_10_needs_every_gold_item_and_agrees_with_both_at_10(transfer):
    from rirag.retrieval.metrics import pair_metrics

    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 3.0, "x": 2.0}, "q3": {"a": 1.0},
           "q4": {"a": 2.0, "b": 1.0, "c": 0.5}}
    gold = {"q1": ("a", "b"), "q2": ("a", "b"), "q3": ("a", None), "q4": ("a", "b", "c")}
    values = transfer.per_question(run, gold, k=2)
    # q3's second gold text mapped to no passage: never all retrieved; q4 needs three passages in a top 2
    assert values["all@10"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert values["recall@10"].tolist() == [1.0, 0.5, 1.0, pytest.approx(2 / 3)]
    pairs = {q: gold[q] for q in ("q1", "q2", "q3")}
    assert pair_metrics(pairs, run, k=2)["both@2"] == pytest.approx(values["all@10"][:3].mean())


def test_a_difference_transfers_only_when_its_interval_is_above_zero(transfer):
    assert transfer.verdict([0.01, 0.2]) == "transfers"
    assert transfer.verdict([-0.2, -0.01]) == "hurts"
    assert transfer.verdict([-0.05, 0.1]) == "no clear difference"
    better = np.array([1.0] * 40 + [0.0] * 10)
    worse = np.array([0.0] * 40 + [1.0] * 10)
    interval = transfer.paired_difference_interval(better, worse, 500, 0)
    assert transfer.verdict(interval) == "transfers" and interval == transfer.paired_difference_interval(
        better, worse, 500, 0)  # seeded


def test_a_row_whose_artifact_is_not_built_is_skipped_with_the_stage_to_build(transfer, tmp_path):
    config = transfer.TransferConfig(models_root=str(tmp_path))
    label, spec, why = transfer.row_spec(config, "et", None)
    assert label == "dense ET" and why and "make models ONLY=et-train" in why[0]
    _, _, why = transfer.row_spec(config, "learned-fusion", None)
    assert len(why) == 3  # the ranker and two of its three encoders (the zero-shot one needs no build)
    assert transfer.row_spec(config, "bm25", None)[2] == []
    label, spec, why = transfer.row_spec(config, "hybrid-tuned", "et")
    assert spec.name == "hybrid" and spec.model.endswith("minilm-et-train") and "ET" in label and not why
    assert transfer.row_spec(config, "rrf-tuned", None)[1] is None


def test_the_results_page_prints_the_table_verdicts_answers_and_regnlp():
    build = load_script("docs/build_results.py", "build_results_transfer")
    row = {"questions": "ukfin", "row": "et", "label": "dense ET", "status": "ok", "recall@10": 0.61234,
           "recall@10 95% CI": [0.5, 0.7], "map@10": 0.4, "all@10": 0.3, "all@10 95% CI": [0.2, 0.4],
           "compared_with": "zero-shot", "all@10 − zero-shot": -0.05, "all@10 − zero-shot 95% CI": [-0.1, -0.01],
           "all@10 verdict": "hurts", "recall@10 − zero-shot": 0.0, "recall@10 − zero-shot 95% CI": [-0.1, 0.1],
           "recall@10 verdict": "no clear difference", "best": True}
    skipped = {"questions": "ukfin", "row": "ct", "label": "dense CT", "status": "skipped: not built"}
    data = {"command": "python benchmarks/transfer.py", "rows": [row, skipped],
            "summaries": {"ukfin": {"questions": 80, "mapping": {"passages": 9, "gold_mapped": 160, "gold_items": 160},
                                    "answers": {"row": "et", "answers": 80, "cite_all": 0.25,
                                                "cite_all 95% CI": [0.15, 0.35]},
                                    "answers_filtered": {"row": "et", "answers": 80, "cite_all": 0.0,
                                                         "context": "top 10, RIRAG score filtering"}}},
            "regnlp_ukfin": {"source": "SOURCE.md", "BM25": {"recall@10": 0.719, "both@10": 0.562},
                             "E5": {"recall@10": 0.881, "both@10": 0.775},
                             "BM25+E5 RRF": {"recall@10": 0.887, "both@10": 0.8}}}
    text = build.render_results({"transfer.json": data})
    assert "## Transfer" in text and "| dense ET (best) | 0.6123 (0.5000–0.7000) |" in text
    assert "dense ET: hurts on All@10 (-0.0500 (-0.1000–-0.0100): hurts)" in text
    assert "dense CT (skipped: not built)" in text
    assert "(et, top 10, RIRAG score filtering), 80 questions" in text  # both answer contexts are printed
    assert "0.2500 (0.1500–0.3500)" in text and "BM25+E5 RRF 0.8000 / 0.8870" in text
