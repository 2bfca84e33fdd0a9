"""Publishing a rulebook: a builder-only corpus card (no passage text uploaded), a builder-only and a full
cross-reference graph, each card stating source, capture date, terms and the build's numbers, each assembled folder
holding what its card says; built from a tiny corpus and graph the test writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import DatasetCard

from rirag.cli import main
from rirag.data.ingest.corpus import ingest
from rirag.hub.assemble import assemble_all
from rirag.hub.load import check_loads
from rirag.hub.manifest import ManifestError, load_manifest

REPO = Path(__file__).resolve().parents[1]
SECRET = "A firm must keep its liquidity buffer of unencumbered assets"  # passage text: never in a builder-only upload
PASSAGES = [
    {"document": "Liquidity", "rule": "1.1", "text": f"{SECRET} at all times."},
    {"document": "Liquidity", "rule": "1.2", "text": "A firm must report the buffer in accordance with rule 1.1."},
    {"document": "Liquidity", "rule": "2.1", "text": "Chapter 1 does not apply to a small firm."},
]
TERMS = {"source_text": "three test rules", "captured": "01-02-2026", "terms": "Test terms: no redistribution."}


@pytest.fixture
def project(tmp_path):
    """A tiny ingested corpus, its graph (as `make rulebook-data` writes them) and a manifest publishing both."""
    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in PASSAGES), "utf-8")
    corpus = tmp_path / "artifacts" / "datasets" / "rb"
    ingest(source, corpus)
    assert main(["data", "xref", "--data", str(corpus), "--out", str(tmp_path / "artifacts" / "rb-xref" / "xref")]) == 0
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "xref.json").write_text(json.dumps({
        "command": "python benchmarks/xref_eval.py", "labels": "labels.jsonl", "guidelines": "GUIDELINES.md",
        "rows": [{"corpus": "rb", "set": "held-out", "labelled_references": 40, "labelled_in_corpus": 35,
                  "detection_precision": 0.975, "detection_recall": 0.95, "resolution_precision": 0.9412,
                  "resolution_recall": 0.9143},
                 {"corpus": "other", "set": "held-out", "resolution_precision": 0.1}]}))
    common = {"license": "other", "license_name": "rb-terms", "datasets": [], "command": "make rulebook-data", **TERMS,
              "rebuild": ["rirag data ingest PAGES --out rb", "rirag data xref --data rb"]}
    entries = [
        {"name": "rb-corpus", "kind": "dataset", "source": "artifacts/datasets/rb", "repo": "rb-corpus",
         "card": "rulebook_corpus.md.j2", "builder_only": True, "context": {**common, "description": "The rules."}},
        {"name": "rb-xref", "kind": "dataset", "source": "artifacts/rb-xref", "repo": "rb-xref",
         "card": "xref_dataset.md.j2", "builder_only": True,
         "context": {**common, "description": "Its graph.", "quality": {"corpus": "rb"}}},
        {"name": "rb-xref-open", "kind": "dataset", "source": "artifacts/rb-xref", "repo": "rb-xref-open",
         "card": "xref_dataset.md.j2", "exclude": ["README.md"],
         "context": {**common, "license": "apache-2.0", "description": "Its graph, published.",
                     "quality": {"corpus": "rb"}}},
        {"name": "not-built", "kind": "dataset", "source": "artifacts/datasets/nothing", "repo": "not-built",
         "card": "rulebook_corpus.md.j2", "builder_only": True, "context": {**common, "description": "x"}},
    ]
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump({"namespace": "me", "results_dir": "results", "entries": entries}))
    return tmp_path, load_manifest(path)


def _files(folder: str) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())


def test_builder_only_uploads_hold_the_card_alone_with_source_terms_and_build_numbers(project):
    root, manifest = project
    rows = {r.name: r for r in check_loads(manifest, assemble_all(manifest, root), root)}
    assert rows["not-built"].status == "missing" and "not found" in rows["not-built"].detail
    report = json.loads((root / "artifacts" / "datasets" / "rb" / "ingest_report.json").read_text())
    summary = json.loads((root / "artifacts" / "rb-xref" / "xref" / "summary.json").read_text())
    for name in ("rb-corpus", "rb-xref"):
        row = rows[name]
        assert row.status == "assembled" and row.card == "ok", row
        assert _files(row.folder) == ["README.md"]  # no documents, no graph rows
        text = (Path(row.folder) / "README.md").read_text()
        assert SECRET not in text and "holds no" in text
        card = DatasetCard.load(Path(row.folder) / "README.md")
        assert card.data.license == "other" and "configs" not in card.data.to_dict()  # nothing to load
        for fact in ("three test rules", "01-02-2026", "Test terms: no redistribution.", "rirag data ingest PAGES"):
            assert fact in text, (name, fact)
        assert row.load.startswith("ok (builder only"), row.load
        # the card tells users to run rirag, which is on no package index: it says how to install it
        from rirag.hub.cards import SOURCE_REPOSITORY

        assert f'pip install "rirag @ git+{SOURCE_REPOSITORY}"' in text, name
        assert card.data.to_dict()["license_name"] == "rb-terms"
    corpus_card = (Path(rows["rb-corpus"].folder) / "README.md").read_text()
    assert f"| passages | {report['passages']} |" in corpus_card and report["passages"] == 3
    xref_card = (Path(rows["rb-xref"].folder) / "README.md").read_text()
    assert f"{summary['references']} references in {summary['passages_with_references']} of 3 passages" in xref_card
    assert "| held-out | 40 | 35 | 0.975 | 0.95 | 0.9412 | 0.9143 |" in xref_card and "0.1 |" not in xref_card


def test_a_published_graph_holds_its_rows_and_loads_as_its_card_says(project):
    root, manifest = project
    (row,) = check_loads(manifest, assemble_all(manifest, root, only=["rb-xref-open"]), root)
    assert _files(row.folder) == ["README.md", "xref/references.jsonl", "xref/summary.json"]
    card = DatasetCard.load(Path(row.folder) / "README.md")
    assert card.data.license == "apache-2.0"
    assert card.data.configs == [{"config_name": "xref",
                                  "data_files": [{"split": "train", "path": "xref/references.jsonl"}]}]
    rows = [json.loads(line) for line in (Path(row.folder) / "xref" / "references.jsonl").read_text().splitlines()]
    assert row.load == "ok (Dataset)" and len(rows) >= 2
    assert any(r["surface"].lower() == "rule 1.1" and r["resolved"] for r in rows)


def test_a_builder_only_folder_that_holds_data_fails_its_load_check(project):
    root, manifest = project
    (row,) = assemble_all(manifest, root, only=["rb-corpus"])
    (Path(row.folder) / "documents").mkdir()
    (Path(row.folder) / "documents" / "1.json").write_text(json.dumps([{"Passage": SECRET}]))
    (checked,) = check_loads(manifest, [row], root)
    assert checked.load == "failed: builder-only, yet the folder holds documents/1.json"


def test_builder_only_must_be_a_boolean(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"namespace": "me", "entries": [
        {"name": "a", "kind": "dataset", "source": "x", "repo": "r", "builder_only": "yes"}]}))
    with pytest.raises(ManifestError, match="builder_only must be true or false"):
        load_manifest(path)


def test_the_project_publishes_the_pra_text_nowhere():
    """The PRA entries are builder-only (its terms do not clearly allow redistribution); the ObliQA graph is not."""
    manifest = load_manifest(REPO / "hub_push" / "manifest.yaml", namespace="ns")
    entries = {e.name: e for e in manifest.entries}
    assert entries["pra-rulebook-corpus"].builder_only and entries["pra-rulebook-xref"].builder_only
    assert not entries["obliqa-xref"].builder_only
    for name in ("pra-rulebook-corpus", "pra-rulebook-xref", "obliqa-xref"):
        context = entries[name].context
        assert context["terms"] and context["captured"] and context["source_text"], name
    assert "21-01-2026" in entries["pra-rulebook-corpus"].context["captured"]


def test_the_project_entries_assemble_from_what_make_rulebook_data_writes(tmp_path):
    """The manifest's own three rulebook entries, over tiny sources at the paths `make rulebook-data` writes: builder-
    only cards for the PRA corpus and graph, the ObliQA graph in full, each card parsing and loading."""
    import shutil

    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in PASSAGES), "utf-8")
    ingest(source, tmp_path / "artifacts" / "datasets" / "pra")
    for corpus, out in (("artifacts/datasets/pra", "artifacts/datasets/pra-xref/xref"),
                        ("artifacts/datasets/pra", "artifacts/datasets/obliqa-xref/xref")):
        assert main(["data", "xref", "--data", str(tmp_path / corpus), "--out", str(tmp_path / out)]) == 0
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    shutil.copy(REPO / "benchmarks" / "results" / "xref.json", tmp_path / "benchmarks" / "results")
    manifest = load_manifest(REPO / "hub_push" / "manifest.yaml", namespace="ns")
    names = ["pra-rulebook-corpus", "pra-rulebook-xref", "obliqa-xref"]
    rows = {r.name: r for r in check_loads(manifest, assemble_all(manifest, tmp_path, only=names), tmp_path)}
    assert [rows[n].card for n in names] == ["ok"] * 3, rows
    for name in names[:2]:
        assert _files(rows[name].folder) == ["README.md"] and rows[name].load.startswith("ok (builder only")
        text = (Path(rows[name].folder) / "README.md").read_text()
        assert "Bank of England copyright" in text and "21-01-2026" in text and SECRET not in text
    assert rows["obliqa-xref"].load == "ok (Dataset)"
    graph = (Path(rows["pra-rulebook-xref"].folder) / "README.md").read_text()
    assert "| held-out |" in graph and "resolution recall" in graph  # the resolver's measured quality, from xref.json
