"""docs/results.md and the README's results table are generated from benchmarks/results/*.json and are current."""

from __future__ import annotations

import json
import re
from pathlib import Path

from _scripts import load_script

REPO = Path(__file__).resolve().parents[1]


def _builder():
    return load_script("docs/build_results.py")


def test_regenerating_gives_the_committed_files_byte_for_byte():
    b = _builder()
    results = b.load_results(REPO / "benchmarks" / "results")
    assert (REPO / "docs" / "results.md").read_text(encoding="utf-8") == b.render_results(results)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert b.render_readme(readme, results) == readme
    assert b.main(b.Config(check=True)) == 0


def test_the_readme_starts_with_the_two_commands_and_stays_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[:6] == ["# rirag", "", "```bash",
                         "make demo   # end-to-end on the offline defaults: build the datasets, retrieve, evaluate, "
                         "show sources",
                         "make test   # the test suite (offline, tiny models, real data where cheap)", "```"]
    assert len(lines) <= 130


def test_every_readme_score_is_a_stored_value_printed_by_the_one_formatter():
    """Each score in the README's generated table is a value of retrieval.json, and appears in docs/results.md."""
    b = _builder()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split(b.README_BEGIN, 1)[1].split(b.README_END, 1)[0]
    data = json.loads((REPO / "benchmarks" / "results" / "retrieval.json").read_text(encoding="utf-8"))
    stored = {b.fmt(r[m], m) for r in data["rows"] for m in b.METRICS if r.get(m) is not None}
    scores = re.findall(r"\| (0\.\d{4}) ", block)
    assert len(scores) >= 12
    assert set(scores) <= stored
    results_md = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    for line in block.strip().splitlines()[2:]:
        triple = " / ".join(re.findall(r"\| (0\.\d{4}) ", line))
        assert triple in results_md, line


def test_missing_changed_and_new_results_files_still_render(tmp_path):
    """Another helper's new file gets a generic section; a file whose layout changed falls back to it; none: no
    section (and the README is left as it is)."""
    b = _builder()
    results = {
        "generation.json": {"command": "python benchmarks/generation.py", "rows": [{"model": "m", "score": 0.51234}],
                            "per_model": {"m": {"seconds": 12.5}}},
        "retrieval.json": {"command": "x", "rows": "not a list"},
        "nli_judge.json": [{"source": "snli", "accuracy": 0.5}],
    }
    text = b.render_results(results)
    assert "## generation.json" in text and "| m | 0.5123 |" in text and "| m | 12.5 |" in text
    assert "## Retrieval: benchmark and ablation" in text and "not a list" in text
    assert "| snli | 0.5000 |" in text
    readme = f"intro\n{b.README_BEGIN}\nold\n{b.README_END}\n"
    assert b.render_readme(readme, {}) == readme
    # the answers and judge blocks: an unexpected layout leaves the block as it is instead of failing
    blocks = f"{b.ANSWERS_BEGIN}\nold answers\n{b.ANSWERS_END}\n{b.JUDGE_BEGIN}\nold judge\n{b.JUDGE_END}\n"
    assert b.render_readme(blocks, results) == blocks


def test_answer_and_judge_blocks_print_the_stored_rows():
    """Each answer row's scores come from generation.json, with its question count when it is incomplete."""
    b = _builder()
    generation = {"sample_size": 150, "rows": {
        "raft": {"repass": 0.72311, "citation_precision": 0.8021, "questions": 150, "complete": True},
        "focused-rirag": {"repass": 0.29879, "questions": 24, "complete": False},
        "few-shot": {"repass": 0.31, "questions": 150, "complete": True},
        "focused": {"gold_citation_precision": 0.70333, "gold_citation_recall": 0.69667, "words_median": 73.5,
                    "words_p95": 156.0, "words_max": 216, "flag_rate": 0.02, "flag_rate_mismatched": 0.98667,
                    "questions": 150, "complete": True}}}
    table = b.render_answers_headline(generation)
    raft = next(line for line in table.splitlines() if "RAFT-LoRA" in line)
    assert "0.7231" in raft and "0.8021" in raft
    assert "(24 of 150)" in next(line for line in table.splitlines() if "context-filter rirag" in line)
    assert "few-shot" not in table  # a row the README leaves to docs/results.md
    focused = next(line for line in table.splitlines() if "focused answerer" in line)
    assert "0.7033" in focused and "0.6967" in focused and "73.5 / 156 / 216" in focused
    assert "0.0200 / 0.9867" in focused
    assert "extractive" not in table  # rows that were not measured are not invented
    judge = {"per_source": {"mnli": {"accuracy": 0.704}}, "overall_3way_accuracy": 0.7115,
             "probe": {"accuracy": 0.98, "per_type": {"negation": {"accuracy": 0.97}}}, "train_seconds": 3055.3}
    text = b.render_judge_headline(judge, None)
    assert "0.7040" in text and "0.7115" in text and "50.9" in text and "0.9700" in text


def test_fmt_prints_stored_scores_without_rounding_them_again():
    b = _builder()
    assert b.fmt(0.6155, "map@10") == "0.6155"  # the old README printed this one as 0.615 and as 0.616
    assert b.fmt(0.5677852348993289, "overall_3way_accuracy") == "0.5678"
    assert b.fmt(3516.1, "queries_per_s") == "3516.1"
    assert b.fmt("a|b") == "a\\|b"


def _signature(nli: str, coverage: str) -> str:
    from types import SimpleNamespace

    from rirag.scoring.signature import repass_signature

    return repass_signature(SimpleNamespace(mode="reference", nli_model=nli, coverage_model=coverage,
                                            obligation_model="artifacts/obligation_classifier", precision="float32",
                                            sentence_splitter="punkt", threshold=0.7))


def test_answer_table_reads_its_repass_label_from_the_signatures():
    from rirag.scoring.constants import LOCAL_JUDGE_LABEL, OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL

    b = _builder()
    local = _signature("artifacts/nli_judge", "artifacts/nli_judge")
    official = _signature(OFFICIAL_NLI_MODEL, OFFICIAL_COVERAGE_MODEL)

    def headline(rows):
        table = b.render_answers_headline({"sample_size": 150, "rows": rows})
        return table, {line.split(" | ")[0]: line for line in table.splitlines()}

    # rows scored before signatures: today's label, marked in the header (no signature invented)
    table, lines = headline({"raft": {"repass": 0.7}, "focused": {"repass": 0.8}})
    assert f"| {LOCAL_JUDGE_LABEL}, signature not recorded |" in lines["| system"]
    assert "| 0.7000 |" in lines["| SmolLM2-135M RAFT-LoRA"]
    # every row signed by the official models: the plain label
    table, lines = headline({"raft": {"repass": 0.7, "repass_signature": official},
                             "focused": {"repass": 0.8, "repass_signature": official}})
    assert "| RePASs |" in lines["| system"] and "local judge" not in table and "not recorded" not in table
    # every row signed by the local judge: its label, as before, now read from the signatures
    table, lines = headline({"raft": {"repass": 0.7, "repass_signature": local}})
    assert f"| {LOCAL_JUDGE_LABEL} |" in lines["| system"] and "not recorded" not in table
    # mixed: each cell says its own label, and the unsigned row that its signature is missing
    table, lines = headline({"raft": {"repass": 0.7, "repass_signature": official},
                             "focused": {"repass": 0.8, "repass_signature": local},
                             "extractive": {"repass": 0.9}})
    assert "| RePASs |" in lines["| system"]
    assert "| 0.7000 (RePASs) |" in lines["| SmolLM2-135M RAFT-LoRA"]
    assert f"| 0.8000 ({LOCAL_JUDGE_LABEL}) |" in lines["| focused answerer (default)"]
    assert f"| 0.9000 ({LOCAL_JUDGE_LABEL}; signature not recorded) |" in lines[
        "| all obligations (extractive composer)"]
    # no RePASs score at all: the header as it always was
    assert f"| {LOCAL_JUDGE_LABEL} |" in headline({"focused": {"flag_rate": 0.1}})[1]["| system"]


def test_results_page_marks_repass_rows_without_a_signature():
    b = _builder()
    local = _signature("artifacts/nli_judge", "artifacts/nli_judge")
    data = {"rows": {"old": {"repass": 0.5}, "new": {"repass": 0.6, "repass_signature": local},
                     "unscored": {"words_median": 3}}}
    marked = b.mark_unrecorded_signatures(data)
    assert marked["rows"]["old"]["repass_signature"] == "signature not recorded"
    assert marked["rows"]["new"]["repass_signature"] == local
    assert "repass_signature" not in marked["rows"]["unscored"] and "repass_signature" not in data["rows"]["old"]
    assert b.mark_unrecorded_signatures({"rows": [1]}) == {"rows": [1]}
    text = b.render_results({"generation.json": data})
    assert "## generation.json" in text and "signature not recorded" in text
    # the committed results: the page marks exactly the scored rows without a signature and prints the others',
    # and the README's RePASs header is the label the signatures give (marked when no row has one)
    committed = json.loads((REPO / "benchmarks" / "results" / "generation.json").read_text(encoding="utf-8"))
    scored = [r for r in committed["rows"].values() if r.get("repass") is not None]
    unsigned = [r for r in scored if not r.get("repass_signature")]
    assert scored
    results_md = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    section = results_md.split("## generation.json", 1)[1].split("\n## ", 1)[0]
    assert section.count("| signature not recorded |") == len(unsigned)
    for row in scored:
        if row.get("repass_signature"):
            assert b.fmt(row["repass_signature"]) in section
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split(b.ANSWERS_BEGIN, 1)[1].split(b.ANSWERS_END)[0]
    header = block.strip().splitlines()[0]
    labels = {b.repass_label(r) for r in scored}
    expected = (f"{b.LOCAL_JUDGE_LABEL}, signature not recorded" if len(unsigned) == len(scored)
                else labels.pop() if len(labels) == 1 else "RePASs")
    assert f"| {expected} |" in header


def test_the_cv_table_shows_differences_from_bm25_and_minutes():
    b = _builder()
    rows = [{"row": "bm25", "questions": 10, "recall@10": 0.79, "recall@10 95% CI": [0.78, 0.8],
             "minutes per fold": [0.01, 0.02]},
            {"row": "learned fusion", "questions": 10, "recall@10": 0.84, "recall@10 95% CI": [0.83, 0.85],
             "recall@10 − bm25": 0.05, "recall@10 − bm25 95% CI": [0.04, 0.06], "mrr@10 − bm25": -0.01,
             "mrr@10 − bm25 95% CI": [-0.02, 0.003], "minutes per fold": [2.5, 3.25],
             "p vs bm25 (paired t)": {"recall@10": 0.00001}}]
    lines = b.render_cv_headline({"rows": rows}).splitlines()
    assert "R@10 − BM25 (95% CI)" in lines[0] and "minutes per fold" in lines[0]
    assert lines[2].endswith("| — | — | — | 0.01 / 0.02 |")
    assert "| +0.0500 (+0.0400–+0.0600) | -0.0100 (-0.0200–+0.0030) | 2.50 / 3.25 |" in lines[3]
    assert "< 0.0001" in lines[3]
