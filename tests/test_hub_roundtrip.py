"""Hub round trip: every artifact kind of hub_push/manifest.yaml, built tiny where its trainer or builder puts it, is
assembled by `make publish`'s command (dry run) and loaded exactly as its card's usage snippet says, the repo id
replaced by the upload folder: load_dataset, SentenceTransformer, CrossEncoder, pipeline, PeftModel, evaluate.load,
the learned-fusion ranker through `rirag retrieve`'s library equivalent, and both Spaces started as the Hub starts
them (a copy named app/, python app.py) and asked over HTTP."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "train"))
sys.path.insert(0, str(REPO / "tests"))

from _hub_project import build_tiny_project  # noqa: E402

MANIFEST = REPO / "hub_push" / "manifest.yaml"
#: The manifest entries built here: one or more of every kind the manifest has.
BUILT = {
    "obliqa-leakage-free": "dataset", "obliqa-original": "dataset", "raft-instances": "dataset",
    "nli-judge-data": "dataset", "encoder-ct-leakage-free": "encoder", "encoder-et-ct-leakage-free": "encoder",
    "learned-fusion-leakage-free": "ranker",
    "reranker-leakage-free": "reranker", "obligation-classifier": "classifier", "nli-judge": "judge",
    "raft-adapter": "RAFT adapter", "raft-merged": "RAFT merged model", "repass-metric": "metric Space",
    "demo": "demo Space",
}
#: What each load returns (the type the card's snippet binds), as the load column reports it.
LOADED = {
    "obliqa-leakage-free": "ok (Dataset)", "obliqa-original": "ok (Dataset)", "raft-instances": "ok (DatasetDict)",
    "nli-judge-data": "ok (DatasetDict)", "encoder-ct-leakage-free": "ok (SentenceTransformer)",
    "encoder-et-ct-leakage-free": "ok (SentenceTransformer)",
    "learned-fusion-leakage-free": "ok (LearnedFusionRetriever, 4 passages ranked)",
    "reranker-leakage-free": "ok (CrossEncoder)", "obligation-classifier": "ok (TextClassificationPipeline)",
    "nli-judge": "ok (CrossEncoder)", "raft-adapter": "ok (PeftModelForCausalLM)",
    "raft-merged": "ok (LlamaForCausalLM)",
    "repass-metric": "ok (Repass; Space: gradio", "demo": "ok (gradio",
}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A project root holding a tiny artifact at each built entry's source path, after `make publish` (dry run)."""
    root = tmp_path_factory.mktemp("project")
    return root, build_tiny_project(root)


def test_the_round_trip_covers_every_kind_of_the_manifest():
    from rirag.hub.manifest import load_manifest

    manifest = load_manifest(MANIFEST, namespace="ns")
    entries = {e.name: e for e in manifest.entries}
    assert set(BUILT) <= set(entries)
    assert {entries[n].kind for n in BUILT} == {e.kind for e in manifest.entries}
    assert set(BUILT.values()) >= {"dataset", "encoder", "ranker", "classifier", "judge", "RAFT adapter",
                                   "metric Space", "demo Space"}


@pytest.mark.parametrize("name", sorted(BUILT))
def test_each_upload_folder_loads_as_its_card_says(published, name):
    root, rows = published
    row = rows[name]
    assert row.status == "assembled" and row.card == "ok", (row.status, row.card, row.detail)
    assert row.load.startswith(LOADED[name]), row.load
    card = (Path(row.folder) / "README.md").read_text()
    if row.kind != "app-space":
        assert row.repo_id in card  # the snippet that was run names the published repo, not a local path


def test_entries_not_built_are_missing_and_not_loaded(published):
    _, rows = published
    absent = {n: r for n, r in rows.items() if n not in BUILT}
    assert absent and all(r.status == "missing" and r.load == "skipped: not assembled" for r in absent.values())


def test_cards_name_hub_ids_not_local_paths(published):
    root, rows = published
    adapter = (Path(rows["raft-adapter"].folder) / "README.md").read_text()
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in adapter  # not the local folder it trained from
    assert 'PeftModel.from_pretrained(base, "rirag/smollm2-135m-raft-obliqa-lora")' in adapter
    assert "RAFT dataset `rirag/obliqa-raft-instances`" in adapter  # the training data as published
    config = json.loads((Path(rows["raft-adapter"].folder) / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "HuggingFaceTB/SmolLM2-135M-Instruct"  # what AutoPeftModel loads
    trained = json.loads((root / "artifacts/raft/smollm2-135m-raft/adapter_config.json").read_text())
    assert trained["base_model_name_or_path"] == "artifacts/models/smollm2-135m-instruct"  # the source is untouched
    merged = (Path(rows["raft-merged"].folder) / "README.md").read_text()
    assert "adapter (`rirag/smollm2-135m-raft-obliqa-lora`) merged" in merged and "artifacts/raft" not in merged
    dataset = (Path(rows["obliqa-leakage-free"].folder) / "README.md").read_text()
    assert str(root) not in dataset.split("\n---", 1)[0]  # metadata: not the folder the builder read
    assert "source_datasets:\n- RegNLP/ObliQA\n" in dataset
    assert 'load_dataset("rirag/obliqa-leakage-free", "queries", split="train")' in dataset
    metric = (Path(rows["repass-metric"].folder) / "README.md").read_text()
    assert 'evaluate.load("rirag/repass")' in metric and '"evaluate_scripts/repass"' not in metric
    assert 'nli_model="rirag/rirag-nli-judge"' in metric
    ranker = (Path(rows["learned-fusion-leakage-free"].folder) / "README.md").read_text()
    assert "--option encoders=rirag/minilm-ct-obliqa-leakage-free" in ranker
    # the sources' own cards stay as their builders wrote them
    assert "rirag/obliqa-leakage-free" not in (root / "artifacts/datasets/obliqa/leakage-free/README.md").read_text()


def test_a_snippet_that_does_not_load_is_reported_failed(published, tmp_path):
    """The check can fail: an upload folder whose weights are gone, and a card whose snippet names another repo."""
    import shutil

    from rirag.hub.load import check_load
    from rirag.hub.manifest import load_manifest

    root, rows = published
    manifest = load_manifest(MANIFEST)
    entries = {e.name: e for e in manifest.entries}
    broken = tmp_path / "minilm-ct-obliqa-leakage-free"
    shutil.copytree(rows["encoder-ct-leakage-free"].folder, broken)
    (broken / "model.safetensors").unlink()
    assert check_load(entries["encoder-ct-leakage-free"], manifest, broken, {}).startswith("failed: ")
    (broken / "README.md").write_text("# no usage here\n")
    assert check_load(entries["encoder-ct-leakage-free"], manifest, broken, {}) == (
        "failed: the card has no usage snippet that loads rirag/minilm-ct-obliqa-leakage-free")
    assert json.loads((Path(rows["raft-adapter"].folder) / "adapter_config.json").read_text())["peft_type"] == "LORA"


def hub_cache(cache: Path, snapshots: dict) -> dict:
    """An ``HF_HUB_CACHE`` in which each Hub id resolves offline to a copy of a local folder, in the layout a download
    leaves (``models--org--name/refs/main`` -> ``snapshots/<commit>/``): what an ``HF_HUB_OFFLINE=1`` user has after
    fetching those models once. Returns the environment that points at it."""
    commit = "0" * 40
    for repo_id, folder in snapshots.items():
        repo = cache / ("models--" + repo_id.replace("/", "--"))
        shutil.copytree(folder, repo / "snapshots" / commit)
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(commit)
    return {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_HOME": str(cache.parent / "hf-home"),
            "HF_DATASETS_CACHE": str(cache.parent / "datasets-cache")}


def test_the_metric_cards_first_snippet_runs_verbatim_for_a_hub_user(published, tmp_path):
    """The published metric card's first snippet, unchanged, in a fresh interpreter whose only models are the Hub ids
    the metric defaults to (tiny stand-ins in a Hub cache, offline): its defaults must be Hub ids, not local folders.
    The Space itself is where a Hub user's ``evaluate.load("rirag/repass")`` finds it: ``rirag/repass`` in the
    working directory (evaluate looks there first)."""
    import os
    import subprocess

    from rirag.hub.load import code_blocks
    from rirag.scoring.constants import OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL, OFFICIAL_OBLIGATION_MODEL

    _, rows = published
    metric = Path(rows["repass-metric"].folder)
    card = (metric / "README.md").read_text()
    first = next(code for lang, code in code_blocks(card) if lang == "python")
    assert 'evaluate.load("rirag/repass")' in first and ".compute(" in first
    env = {**os.environ, **hub_cache(tmp_path / "hub", {
        OFFICIAL_NLI_MODEL: rows["nli-judge"].folder, OFFICIAL_COVERAGE_MODEL: rows["nli-judge"].folder,
        OFFICIAL_OBLIGATION_MODEL: rows["obligation-classifier"].folder})}
    user = tmp_path / "user"
    shutil.copytree(metric, user / rows["repass-metric"].repo_id)
    script = tmp_path / "snippet.py"
    script.write_text(first + "\nimport json\nprint(json.dumps({k: results[k] for k in ('repass', 'n_scored', "
                      "'signature')}))\n")
    done = subprocess.run([sys.executable, str(script)], cwd=user, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["n_scored"] == 1 and 0.0 <= out["repass"] <= 1.0
    assert f"obligation={OFFICIAL_OBLIGATION_MODEL}" in out["signature"]
    assert f"nli={OFFICIAL_NLI_MODEL}" in out["signature"]


def test_the_metric_defaults_name_the_published_classifier(caplog, tmp_path):
    """The metric's default obligation model is the repo hub_push publishes the classifier to (one namespace); a
    publish under another namespace says that the default is not its classifier."""
    from rirag.hub.manifest import load_manifest
    from rirag.scoring.constants import OFFICIAL_OBLIGATION_MODEL

    manifest = load_manifest(MANIFEST, namespace="rirag")
    entry = next(e for e in manifest.entries if e.name == "obligation-classifier")
    assert manifest.repo_id(entry) == OFFICIAL_OBLIGATION_MODEL
    assert "license: apache-2.0" in (REPO / "evaluate_scripts" / "repass" / "README.md").read_text().split("---")[1]
    from rirag.hub.assemble import assemble_all

    assemble_all(load_manifest(MANIFEST, namespace="my-org"), tmp_path, only=["obligation-classifier"])
    assert "publishes the classifier as my-org/rirag-obligation-classifier" in caplog.text


def _hub_table_lines() -> list[str]:
    section = (REPO / "README.md").read_text().split("## Use it from the Hub", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| what ")]


def test_every_line_of_the_readmes_hub_table_runs_against_the_assembled_folders(published):
    """Each line of the README's "Use it from the Hub" table, as written, with the Hub ids mapped to the assembled
    upload folders (offline) in a fresh datasets cache: the Python calls run, the ranker's download + `rirag retrieve`
    runs through its library equivalent, the Space named is assembled and builds."""
    import re

    from transformers import AutoModelForCausalLM

    from rirag.hub.load import _replace_ids, fresh_datasets_cache, local_ids, run_retrieve_snippet
    from rirag.hub.manifest import load_manifest

    root, rows = published
    manifest = load_manifest(MANIFEST)
    ids = local_ids(manifest, root)
    by_repo = {r.repo_id: r for r in rows.values()}
    namespace = {"base": AutoModelForCausalLM.from_pretrained(str(root / "artifacts/models/smollm2-135m-instruct"))}
    exec("from datasets import load_dataset\nfrom sentence_transformers import SentenceTransformer\n"  # noqa: S102
         "from peft import PeftModel\nimport evaluate\n", namespace)
    lines = _hub_table_lines()
    assert len(lines) == 6
    checked = {}
    for line in lines:
        spans = re.findall(r"`([^`]+)`", line)
        downloads = [s for s in spans if s.startswith("hf download ")]
        for span in spans:
            if "(" in span and '"' in span:  # a Python call naming a repo
                with fresh_datasets_cache():
                    value = eval(_replace_ids(span, ids), namespace)  # noqa: S307 (the README's own line)
                checked[span] = type(value).__name__
            elif span.startswith("rirag retrieve"):
                repo = downloads[0].split()[2]
                checked[span] = run_retrieve_snippet("\n".join(downloads + [span]), repo, ids)
            elif span in by_repo:  # a Space by its repo id
                assert by_repo[span].load.startswith("ok"), by_repo[span].load
                checked[span] = by_repo[span].load
            elif span.startswith("python "):
                assert (REPO / span.split()[1]).is_file()
                checked[span] = "file"
        assert any(s in checked for s in spans), line  # every line is exercised
    assert checked['load_dataset("rirag/obliqa-original", "qrels", split="test")'] == "Dataset"
    assert checked['SentenceTransformer("rirag/minilm-et-ct-obliqa-leakage-free")'] == "SentenceTransformer"
    assert checked['PeftModel.from_pretrained(base, "rirag/smollm2-135m-raft-obliqa-lora")'].startswith("Peft")
    assert checked['evaluate.load("rirag/repass")'] == "Repass"
    assert "passages ranked" in checked["rirag retrieve --retriever learned-fusion --option ranker=out/lf"]


def test_a_ranker_downloaded_from_the_hub_names_its_encoders_by_hub_id(published):
    root, rows = published
    config = json.loads((Path(rows["learned-fusion-leakage-free"].folder) / "learned_fusion.json").read_text())
    assert config["encoders"] == ["rirag/minilm-ct-obliqa-leakage-free"]
    trained = json.loads((root / "artifacts/learned_fusion/minilm-lf-train/learned_fusion.json").read_text())
    assert trained["encoders"] == ["artifacts/contrastive_tuning/minilm-ct-train"]  # the source is untouched


def test_the_demo_cards_limits_match_its_code(published):
    """The Space card states the generator the app defaults to and the question limit the app enforces."""
    import re

    from rirag.generation.base import DEFAULT_GENERATOR
    from rirag.generation.pipeline import MAX_QUESTION_CHARS
    from rirag.generation.registry import PASSAGE_GENERATORS

    _, rows = published
    card = " ".join((Path(rows["demo"].folder) / "README.md").read_text().split())
    assert f"The default answer is {DEFAULT_GENERATOR} " in card
    for other in set(PASSAGE_GENERATORS) - {DEFAULT_GENERATOR}:
        assert f"The default answer is {other}" not in card
    assert f"Questions are limited to {MAX_QUESTION_CHARS:,} characters" in card
    assert re.search(rf"`RIRAG_DEMO_GENERATOR` \| `{DEFAULT_GENERATOR}`", card)  # the variables table, from backend
