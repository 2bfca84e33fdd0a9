"""One card path: a trainer fills its kind's card data, saves card_data.json + README.md beside the weights, and
hub_push renders the same template from that saved data (the same bytes when publishing adds nothing)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert
from _scripts import load_script
from rirag.hub.assemble import assemble
from rirag.hub.card_data import (
    CARD_DATA_FILE,
    CARD_FILE,
    ClassifierCard,
    EncoderCard,
    JudgeCard,
    card_type,
    load_card_data,
    non_default_hyperparameters,
    save_card,
)
from rirag.hub.cards import CardError
from rirag.hub.manifest import Manifest, load_manifest

RESULTS = "benchmarks/results/obligation_classifier.json"


def _front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("\n---\n", 1)[0][4:])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny run of train/obligation_classifier.py in a project root, paths relative as in the real project."""
    from transformers import TrainingArguments

    root = tmp_path_factory.mktemp("project")
    script = load_script("train/obligation_classifier.py")
    base = tiny_bert("card_obl_base", OBLIGATION_LABELS, seed=5, head_scale=1.0)
    data = [{"Text": f"Firms must keep records for {w} years.", "Obligation": True} for w in "abcdefghij"]
    data += [{"Text": f"The sky is blue on day {w}.", "Obligation": False} for w in "abcdefghij"]
    (root / "obl.json").write_text(json.dumps(data))
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.chdir(root)
    try:
        args = script.ObligationScriptArguments(data_path="obl.json", model_name_or_path=base, results_path=RESULTS,
                                                max_train_samples=12)
        targs = TrainingArguments(output_dir="artifacts/obl", hub_model_id="ns/obl", max_steps=2,
                                  per_device_train_batch_size=8, learning_rate=5e-3, report_to="none", use_cpu=True,
                                  save_strategy="no", eval_strategy="no", disable_tqdm=True)
        script.main(args, targs)
    finally:
        monkeypatch.undo()
    return root, base


def _manifest(root: Path, **entry) -> Manifest:
    path = root / "manifest.yaml"
    path.write_text(yaml.safe_dump({"namespace": "ns", "entries": [
        {"name": "obl", "kind": "model", "source": "artifacts/obl", "repo": "obl",
         "card": "obligation_classifier.md.j2", "results": ["obligation_classifier.json"], **entry}]}))
    return load_manifest(path)


def test_a_trainers_tiny_run_leaves_card_data_and_a_card_naming_its_base_model(trained):
    root, base = trained
    folder = root / "artifacts" / "obl"
    assert (folder / CARD_DATA_FILE).is_file() and (folder / CARD_FILE).is_file()
    text = (folder / CARD_FILE).read_text()
    meta = _front_matter(text)
    assert meta["base_model"] == base and meta["library_name"] == "transformers"
    assert ModelCard.load(folder / CARD_FILE).data.base_model == base  # as the Hub parses it
    saved = json.loads((folder / CARD_DATA_FILE).read_text())
    assert saved["kind"] == "classifier" and saved["base_model"] == base
    results = json.loads((root / RESULTS).read_text())
    metrics = {m["type"]: m["value"] for m in meta["model-index"][0]["results"][0]["metrics"]}
    assert metrics["accuracy"] == results["accuracy"] and metrics["f1"] == results["f1"]
    assert 'pipeline("text-classification", model="ns/obl")' in text  # the usage snippet loads hub_model_id


def test_non_default_hyperparameters_are_in_the_card_and_defaults_are_not(trained):
    root, _ = trained
    folder = root / "artifacts" / "obl"
    hyper = json.loads((folder / CARD_DATA_FILE).read_text())["hyperparameters"]
    text = (folder / CARD_FILE).read_text()
    assert hyper["learning_rate"] == 0.005 and hyper["max_steps"] == 2 and hyper["max_train_samples"] == 12
    assert "`learning_rate`: 0.005" in text and "`max_train_samples`: 12" in text
    for default in ("weight_decay", "num_train_epochs", "test_size", "max_length", "split_seed"):
        assert default not in hyper and f"`{default}`" not in text
    for ignored in ("output_dir", "hub_model_id", "report_to", "hub_token", "data_path", "results_path"):
        assert ignored not in hyper


def test_the_publish_path_renders_the_trainers_bytes_from_the_saved_card_data(trained):
    root, _ = trained
    folder = root / "artifacts" / "obl"
    trainer_card = (folder / CARD_FILE).read_bytes()
    assert load_card_data(folder).render().encode() == trainer_card
    manifest = _manifest(root)
    row = assemble(manifest.entries[0], manifest, root)
    assert row.status == "assembled" and row.card == "ok", row
    assert (Path(row.folder) / CARD_FILE).read_bytes() == trainer_card
    assert not (Path(row.folder) / CARD_DATA_FILE).exists()  # rendered into README.md, not uploaded


def test_the_manifests_words_replace_the_trainers_and_the_artifacts_facts_stay(trained):
    root, base = trained
    manifest = _manifest(root, context={"description": "Curated words.", "base_model": "someone/else",
                                        "limits": ["A curated limit."]})
    manifest.aliases = {base: "org/tiny-bert"}  # the local base model is a copy of this Hub id
    row = assemble(manifest.entries[0], manifest, root)
    text = (Path(row.folder) / CARD_FILE).read_text()
    assert "Curated words." in text and "- A curated limit." in text
    assert "Sentence classifier for regulatory obligations" not in text
    assert _front_matter(text)["base_model"] == "org/tiny-bert"  # the artifact's record, as its Hub id
    assert "`learning_rate`: 0.005" in text


def test_a_publish_without_results_files_keeps_the_saved_model_index_under_the_repo_name(tmp_path):
    card = ClassifierCard(name="local", repo_id="artifacts/obl", base_model="b").with_results(
        {"accuracy": 0.75, "f1": 0.5, "n_test": 4, "split": "s"}, "artifacts/obl", RESULTS)
    (tmp_path / "artifacts" / "obl").mkdir(parents=True)
    (tmp_path / "artifacts" / "obl" / "model.safetensors").write_bytes(b"\1" * 64)  # saved before the card, as a
    save_card(card, tmp_path / "artifacts" / "obl")  # trainer does: the card data records these weights
    (tmp_path / "artifacts" / "obl" / "config.json").write_text("{}")
    manifest = _manifest(tmp_path, results=[], repo="published-obl")
    row = assemble(manifest.entries[0], manifest, tmp_path)
    data = ModelCard.load(Path(row.folder) / CARD_FILE).data
    assert row.card == "ok" and data.model_name == "published-obl"
    assert {r.metric_type: r.metric_value for r in data.eval_results} == {"accuracy": 0.75, "f1": 0.5}
    (tmp_path / "artifacts" / "obl" / "model.safetensors").write_bytes(b"\2" * 64)  # other weights, same card data
    row = assemble(manifest.entries[0], manifest, tmp_path)
    assert row.card == "ok" and not ModelCard.load(Path(row.folder) / CARD_FILE).data.eval_results


def test_card_data_files_that_cannot_be_used_are_named(tmp_path):
    (tmp_path / CARD_DATA_FILE).write_text(json.dumps({"kind": "judge", "nmae": "x"}))
    with pytest.raises(CardError, match=r"unknown field\(s\) \['nmae'\] for a judge card"):
        load_card_data(tmp_path)
    save_card(JudgeCard(name="j", repo_id="j"), tmp_path)
    with pytest.raises(CardError, match="a judge card, but obligation_classifier.md.j2 renders classifier cards"):
        load_card_data(tmp_path, ClassifierCard)
    assert isinstance(load_card_data(tmp_path, JudgeCard), JudgeCard)
    assert load_card_data(tmp_path / "nothing") is None
    with pytest.raises(CardError, match="no card data type for 'raft_dataset.md.j2'"):
        card_type("raft_dataset.md.j2")  # a builder's own card, kept from its source


def test_an_unknown_key_in_a_manifest_context_is_an_error_row(tmp_path):
    from rirag.hub.assemble import assemble_all

    (tmp_path / "artifacts" / "obl").mkdir(parents=True)
    (tmp_path / "artifacts" / "obl" / "config.json").write_text("{}")
    manifest = _manifest(tmp_path, context={"descripton": "typo"})
    [row] = assemble_all(manifest, tmp_path)
    assert row.status == "error" and "unknown field(s) ['descripton']" in row.detail


@dataclass
class _Args:
    lr: float = 1e-3
    names: list = field(default_factory=lambda: ["a"])
    output_dir: str = "out"
    untouched: int = 3


def test_non_default_hyperparameters_compare_with_the_dataclass_defaults():
    from transformers import TrainingArguments

    assert non_default_hyperparameters(_Args(lr=0.1, names=["a", "b"], output_dir="elsewhere")) == {
        "lr": 0.1, "names": ["a", "b"]}
    assert non_default_hyperparameters(_Args()) == {}
    got = non_default_hyperparameters(TrainingArguments(output_dir="o", warmup_steps=7, hub_token="secret",
                                                        lr_scheduler_type="cosine", report_to="none"))
    assert got == {"warmup_steps": 7, "lr_scheduler_type": "cosine"}  # enums by value; secrets and logging left out


def test_an_unpublished_local_base_model_gives_way_to_the_manifests(tmp_path):
    """A contrastive run began from the entailment-tuned folder, which is not published: the Hub card names the
    manifest's base model; a start model that is published keeps its own Hub id."""
    folder = tmp_path / "artifacts" / "ct"
    save_card(EncoderCard(name="ct", repo_id="artifacts/ct", base_model="artifacts/et", tags=["contrastive-tuning"]),
              folder)
    (folder / "config.json").write_text("{}")
    (folder / "modules.json").write_text("[]")

    def published_base(**entry) -> str:
        path = tmp_path / "manifest.yaml"
        path.write_text(yaml.safe_dump({"namespace": "ns", "entries": [
            {"name": "ct", "kind": "model", "source": "artifacts/ct", "repo": "ct",
             "card": "sentence_transformer.md.j2", "results": [], **entry}]}))
        manifest = load_manifest(path)
        row = assemble(manifest.entries[0], manifest, tmp_path)
        return _front_matter((Path(row.folder) / CARD_FILE).read_text())["base_model"]

    assert published_base(context={"base_model": "sentence-transformers/all-MiniLM-L6-v2"}) == \
        "sentence-transformers/all-MiniLM-L6-v2"
    assert published_base() == "artifacts/et"  # nothing better to name: the record stays


def test_non_default_hyperparameters_leave_accelerates_state_alone():
    """A fresh TrainingArguments would reset accelerate's shared state (every rank then says it is process 0 of 1):
    the defaults are built on the configured state instead."""
    from accelerate import PartialState
    from transformers import TrainingArguments

    args = TrainingArguments(output_dir="o", use_cpu=True, learning_rate=1e-3, report_to="none")
    assert args.world_size == 1
    PartialState._shared_state["_rirag_sentinel"] = True  # gone if the state is reset
    try:
        assert non_default_hyperparameters(args)["learning_rate"] == 1e-3
        assert PartialState._shared_state.get("_rirag_sentinel") is True
    finally:
        PartialState._shared_state.pop("_rirag_sentinel", None)


def test_card_kinds_are_declared_once_each_with_its_template():
    """Every card class with a template registers itself (CARD_TYPES is not a hand-kept list), its template exists,
    and the Hub card kinds table (rirag.hub.card_kinds) names only registered kinds; a second class claiming a kind
    or template already taken is refused (the can-fail twin)."""
    from rirag.hub.card_data import CARD_TYPES, CardData
    from rirag.hub.card_kinds import HUB_CARD_KINDS, card_kind
    from rirag.hub.cards import TEMPLATES_DIR

    assert len(CARD_TYPES) == len({c.KIND for c in CARD_TYPES}) == len({c.TEMPLATE for c in CARD_TYPES}) >= 10
    assert all((TEMPLATES_DIR / c.TEMPLATE).is_file() for c in CARD_TYPES)
    assert set(HUB_CARD_KINDS) <= set(CARD_TYPES)
    assert card_kind(EncoderCard).context is None and card_kind(EncoderCard).publish is None
    with pytest.raises(TypeError, match="is taken"):
        @dataclass
        class Twin(CardData):
            TEMPLATE = EncoderCard.TEMPLATE
            KIND = "twin"
    assert "twin" not in {c.KIND for c in CARD_TYPES}


def test_a_new_card_kind_is_its_class_and_one_table_row(tmp_path, monkeypatch):
    """What adding a Hub artifact kind takes: its card class (registered when defined), its template, and one row of
    HUB_CARD_KINDS for what publishing adds (here: an id of its own rewritten as the Hub id of an entry)."""
    from rirag.hub import card_kinds
    from rirag.hub.card_data import CARD_TYPES, CardData
    from rirag.hub.entry_cards import publish_card
    from rirag.hub.manifest import Entry

    (tmp_path / "probe.md.j2").write_text("---\nlicense: {{ license }}\n---\n# {{ name }}: {{ partner }}\n")

    @dataclass
    class ProbeCard(CardData):
        TEMPLATE = "probe.md.j2"
        KIND = "probe-kind"
        partner: str = ""

    try:
        def publish(card, entry, manifest, folder, saved):
            card.partner = card_kinds.hub_id(manifest, card.partner)

        monkeypatch.setitem(card_kinds.HUB_CARD_KINDS, ProbeCard, card_kinds.CardKind(publish=publish))
        entries = [Entry(name="probe", kind="model", repo="probe-repo", source="src", card="probe.md.j2",
                         context={"partner": "other"}),
                   Entry(name="other", kind="model", repo="other-repo", source="elsewhere")]
        (tmp_path / "src").mkdir()
        card = publish_card(entries[0], Manifest(namespace="ns", entries=entries), tmp_path / "src", tmp_path)
        assert isinstance(card, ProbeCard) and card.partner == "ns/other-repo"
        assert card.render(tmp_path).endswith("# probe-repo: ns/other-repo\n")
    finally:
        CARD_TYPES.remove(ProbeCard)


def test_the_classifier_card_says_its_weights_are_float16_when_they_are(tmp_path):
    import torch
    from safetensors.torch import save_file

    from rirag.hub.card_data import weights_dtype

    save_file({"w": torch.zeros(2, dtype=torch.float16)}, str(tmp_path / "model.safetensors"))
    assert weights_dtype(tmp_path) == "float16"
    card = ClassifierCard(name="c", repo_id="ns/c", weights_dtype=weights_dtype(tmp_path))
    assert "Weights: stored as **float16** (half precision" in card.render()
    save_file({"w": torch.zeros(2)}, str(tmp_path / "model.safetensors"))  # the twin: float32 weights say so
    assert weights_dtype(tmp_path) == "float32" and "float16" not in ClassifierCard(
        name="c", repo_id="ns/c", weights_dtype=weights_dtype(tmp_path)).render()


def test_the_classifier_card_says_converted_weights_were_converted(tmp_path):
    """float16 weights beside a config that declares float32 (the shared cache's copy) are not "as the trainer saved
    them": the card says they were converted and load as float32."""
    import torch
    from safetensors.torch import save_file

    from rirag.hub.card_data import config_dtype, save_card

    save_file({"w": torch.zeros(2, dtype=torch.float16)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"dtype": "float32"}), encoding="utf-8")
    assert config_dtype(tmp_path) == "float32"
    text = " ".join(save_card(ClassifierCard(name="c", repo_id="ns/c"), tmp_path).split())
    assert "stored as **float16** (converted from the trainer's float32" in text and "as the trainer saved" not in text
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "float16"}), encoding="utf-8")
    text = " ".join(save_card(ClassifierCard(name="c", repo_id="ns/c"), tmp_path).split())
    assert "(half precision, as the trainer saved them)" in text and "converted" not in text
