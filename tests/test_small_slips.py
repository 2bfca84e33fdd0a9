"""Small slips of issue 68, item 7, each against what a user saw: the metric Space splitting a multi-line passage,
the xref graph card naming a config its front matter does not declare, a quality file named after a CSV that was
not written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rirag.errors import DataError

REPO = Path(__file__).resolve().parents[1]


def _metric_space_app():
    spec = importlib.util.spec_from_file_location("repass_space_app", REPO / "evaluate_scripts" / "repass" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Recording:
    def __init__(self, shown):
        self.passages, self.shown = [], shown

    def compute(self, predictions, passages):
        self.passages.append(passages)
        return dict.fromkeys(self.shown, 0)


def test_the_metric_space_keeps_a_multi_line_passage_whole():
    app = _metric_space_app()
    metric = _Recording(app.SHOWN)
    rule = "3.1 A firm must:\n(a) keep records; and\n(b) report them yearly."
    app.score(metric, "Firms must keep records [1].", f"{rule}\n\n3.2 A firm must notify the PRA.\n")
    app.score(metric, "Firms must keep records [1].", '["' + rule.replace("\n", "\\n") + '", "3.2 Notify."]')
    assert metric.passages == [[[rule, "3.2 A firm must notify the PRA."]], [[rule, "3.2 Notify."]]]


def test_a_written_xref_graph_card_names_its_own_config(tmp_path):
    from rirag.xref.graph import GRAPH_CONFIG, card_section, write_graph

    summary = {"passages": 2, "passages_with_references": 0, "references": 0, "resolved": 0, "edges": 0,
               "unresolved": {}, "by_kind": {}}
    readme = (write_graph([], summary, tmp_path / "xref") / "README.md").read_text("utf-8")
    config = readme.split("config_name: ", 1)[1].split()[0]
    assert config.startswith(f"{GRAPH_CONFIG}-") and f"## Cross-references (`{config}` config)" in readme
    assert f"(`{GRAPH_CONFIG}` config)" in card_section(summary)  # the Hub card's config is plain xref


def test_quality_and_attribution_files_are_not_named_after_the_csv():
    from rirag.scoring.answers import metrics_path

    assert metrics_path("out/a.repass.csv", "quality") == "out/a.quality.json"
    assert metrics_path("scores.csv", "attribution") == "scores.attribution.json"


def test_ingest_does_not_list_its_own_temporary_folder(tmp_path):
    """`rirag data ingest src --out src/out` listed `.out.<random>.tmp: hidden folder` under skipped."""
    from rirag.data.ingest.corpus import ingest

    source = tmp_path / "src"
    (source / ".git").mkdir(parents=True)  # a user's hidden folder is still listed
    (source / "rules.txt").write_text("1.1 A firm must keep records of every client order.\n", "utf-8")
    report = ingest(source, source / "out")
    assert report["skipped"] == [{"file": ".git", "reason": "hidden folder"}], report["skipped"]


def test_card_text_in_the_manifest_names_no_build_machine_path():
    """Issue 68, item 3: a card said `make rulebook-data (rirag data ingest ../shared/data/pra_rulebook --out
    artifacts/datasets/pra)`: paths of the build machine, not names a reader can map to their own."""
    import yaml

    manifest = yaml.safe_load((REPO / "hub_push" / "manifest.yaml").read_text("utf-8"))

    def strings(value):
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    texts = [s for entry in manifest["entries"] for s in strings(entry.get("context", {}))]
    texts += strings(manifest.get("defaults", {}))
    assert texts and not [s for s in texts if "../shared" in s or "artifacts/" in s]


def test_the_classifier_card_writes_no_empty_datasets_list():
    """Its training data (ObligationClassificationDataset, on GitHub) has no Hub id: `datasets: []` said nothing."""
    from dataclasses import asdict

    from rirag.hub.card_data import ClassifierCard
    from rirag.hub.cards import render_card

    def front(datasets):
        card = render_card(ClassifierCard.TEMPLATE, **asdict(ClassifierCard(name="c", license="apache-2.0",
                                                                             base_model="m", datasets=datasets)))
        assert card.startswith("---\n")
        return card.split("---\n")[1]

    assert "datasets" not in front([])
    assert "datasets:\n- org/data\n" in front(["org/data"])


def test_ingest_tells_a_file_too_large_by_its_size_before_parsing(tmp_path, monkeypatch, caplog):
    """Issue 68, item 5: a page over the input limit is refused by its size alone, before any reader parses it, with
    the --max-input-bytes that reads it. A file the raised limit lets in, though over a corpus file's size, is said
    at once."""
    import logging

    from rirag.data.ingest import corpus
    from rirag.io import input_limit

    source = tmp_path / "src"
    source.mkdir()
    (source / "small.md").write_text("A firm must keep records.\n", "utf-8")
    (source / "big.md").write_text("".join(f"{i}. A firm must report item {i}.\n\n" for i in range(100)), "utf-8")
    size = (source / "big.md").stat().st_size
    monkeypatch.setattr(corpus, "CORPUS_FILE_LIMIT", 1000)
    parsed = []
    original = corpus._read_file
    monkeypatch.setattr(corpus, "_read_file", lambda reader, path, *a: parsed.append(path.name) or original(
        reader, path, *a))
    with input_limit(500):  # over a corpus file's size too: the N that reads it, and when its passages are kept
        (why,) = [s["reason"] for s in corpus.ingest(source, tmp_path / "o1")["skipped"] if s["file"] == "big.md"]
    assert parsed == ["small.md"] and f"--max-input-bytes N to read a larger file (N ≥ {size})" in why, why
    assert "kept only if their JSON comes to at most 1000 bytes" in why and "split it into smaller files" in why, why
    monkeypatch.setattr(corpus, "CORPUS_FILE_LIMIT", size + 100)
    with input_limit(500):  # a corpus file may hold it: raising the limit helps, and the hint says by how much
        (why,) = [s["reason"] for s in corpus.ingest(source, tmp_path / "o2")["skipped"] if s["file"] == "big.md"]
    assert why.endswith(f"pass --max-input-bytes N to read a larger file (N ≥ {size})"), why
    monkeypatch.setattr(corpus, "CORPUS_FILE_LIMIT", size - 1)
    with input_limit(size), caplog.at_level(logging.WARNING):
        corpus.ingest(source, tmp_path / "o3")
    assert any("big.md" in r.getMessage() and "read, but its passages are kept only if" in r.getMessage()
               for r in caplog.records)


def test_the_raised_input_limit_holds_where_the_html_page_is_parsed(tmp_path, monkeypatch):
    """Issue 68, item 5: "--max-input-bytes is a dead end". A page over the default limit, refused with "pass
    --max-input-bytes N", was read with that N, parsed once (85 s), then refused by the thread the page is parsed in
    ("... this command reads no larger file"): a new thread's context had the default limit, not the command's. Here
    with a tiny default limit (a 300 MB page over the 256 MiB default, scaled down)."""
    import contextvars

    from rirag import io as rio
    from rirag.data.ingest import corpus

    monkeypatch.setattr(rio, "_INPUT_LIMIT", contextvars.ContextVar("tiny_default_limit", default=200))
    source = tmp_path / "src"
    source.mkdir()
    rules = "".join(f"<h2>Rule {i}</h2><p>A firm must keep record {i} for {i} years.</p>" for i in range(1, 30))
    (source / "page.html").write_text(f"<html><head><title>T</title></head><body><h1>Records</h1>{rules}"
                                      "</body></html>", "utf-8")
    size = (source / "page.html").stat().st_size
    with pytest.raises(DataError, match=rf"N ≥ {size}\)"):  # refused by its size, with the N that reads it
        corpus.ingest(source, tmp_path / "o1")
    with rio.input_limit(size):  # the hint followed
        report = corpus.ingest(source, tmp_path / "o2")
    assert report["passages"] >= 29 and "skipped" not in report, report


def test_ask_numbers_its_sources_consecutively_and_the_answers_file_keeps_the_places():
    """`rirag ask` listed sources [1] [3] [4]: the answer's markers and its sources are now numbered as shown, the
    cited passages 1, 2, 3 in order; the answer record (RetrievedIDs, the shared task's file, RePASs) keeps ``[n]`` as
    the passage's place among those given to the answerer."""
    from rirag.cli.answers import format_answer
    from rirag.generation.extractive import ExtractiveComposer
    from rirag.generation.pipeline import RetrievedPassage, answer_items

    passages = [RetrievedPassage("p1", "A firm must keep records for six years.", 3.0, 1, "1.1"),
                RetrievedPassage("p2", "This chapter applies to banks.", 2.0, 1, "1.2"),
                RetrievedPassage("p3", "A firm must report the records [2] yearly.", 1.0, 1, "1.3")]
    composer = ExtractiveComposer(is_obligation=lambda sentences: ["must" in s for s in sentences])
    [answer] = answer_items([("q1", "What must a firm keep and report?", passages)], composer)
    assert [p.id for p in answer.cited] == ["p1", "p3"], answer.text
    record = answer.to_record()
    assert "[3]" in record["Answer"] and record["RetrievedIDs"] == ["p1", "p2", "p3"]
    shown = format_answer(answer, {1: "Rulebook"})
    assert "[1] Rulebook · 1.1" in shown and "[2] Rulebook · 1.3" in shown and "[3]" not in shown, shown
    # the quoted "[2]" of passage p3 is its text, not a marker: left as it is
    assert "six years [1]." in shown and "the records [2] yearly [2]." in shown, shown
    assert "(1 more passage given to the answerer, not cited)" in shown


def test_a_language_models_markers_are_shown_renumbered_too():
    from rirag.generation.pipeline import Answer, RetrievedPassage
    from rirag.text.citations import parse_citations, renumbered

    passages = [RetrievedPassage(f"p{i}", f"text {i}", 1.0, 1, f"1.{i}") for i in range(1, 5)]
    answer = Answer("q", "q?", passages, text="Keep records [3]. Report them [1; 4]. See [9].")
    answer.parsed = parse_citations(answer.text, [p.id for p in passages])
    assert answer.shown_numbers() == {1: 2, 2: 4, 3: 1, 4: 3}
    assert answer.shown_text() == "Keep records [1]. Report them [2, 3]. See [9]."  # [9] is invalid: as written
    assert renumbered("a [1] b [2].", {1: 2, 2: 1}, markers=[(8, 2)]) == "a [1] b [1]."


