"""train/raft.py on a tiny random Llama built from a config: the recipes parse, the collated batch the trainer
really uses masks the prompt (label -100), and a short SFTTrainer + LoRA run changes the adapter, whose saved
copy (and the merged model) reload with the same outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "train"))
sys.path.insert(0, str(REPO / "tests"))

from _raft_fixtures import save_tiny_raft_dataset  # noqa: E402
from tiny_causal_lm import tiny_causal_lm  # noqa: E402


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("raft")
    base = tiny_causal_lm(root / "base")
    save_tiny_raft_dataset(root / "data")
    return root, base


def _parse(root: Path, base: Path, *extra: str):
    from trl import ModelConfig, SFTConfig, TrlParser

    from raft import RaftTrainingArguments
    from rirag.generation.raft import RaftDataArguments

    args = ["--config", str(REPO / "recipes" / "raft" / "offline.yaml"), "--dataset_name", str(root / "data"),
            "--model_name_or_path", str(base), "--from_offline_gguf", "false", "--output_dir", str(root / "out"),
            "--merged_output_dir", str(root / "merged"), "--results_path", str(root / "summary.json"),
            "--max_train_samples", "4", "--max_eval_samples", "2", "--max_length", "1024",
            "--gradient_accumulation_steps", "1", "--logging_steps", "1", *extra]
    return TrlParser((RaftDataArguments, RaftTrainingArguments, SFTConfig, ModelConfig)).parse_args_and_config(args)


def test_recipes_parse_with_the_papers_settings(tmp_path):
    from trl import ModelConfig, SFTConfig, TrlParser

    from raft import RaftTrainingArguments
    from rirag.generation.raft import RaftDataArguments

    parser_types = (RaftDataArguments, RaftTrainingArguments, SFTConfig, ModelConfig)
    for name in ("offline.yaml", "paper.yaml"):
        data, script, training, model = TrlParser(parser_types).parse_args_and_config(
            ["--config", str(REPO / "recipes" / "raft" / name)])  # as written: parses on any machine
        assert (model.lora_r, model.lora_alpha, model.lora_dropout) == (16, 32, 0.05)
        assert model.lora_target_modules == ["q_proj", "v_proj"]
        assert training.learning_rate == pytest.approx(2e-4) and training.warmup_steps == pytest.approx(0.05)
        assert training.per_device_train_batch_size == 1 and training.completion_only_loss is True
        assert data.questions_split == "train"
    bad = tmp_path / "bad.yaml"
    bad.write_text((REPO / "recipes" / "raft" / "offline.yaml").read_text() + "no_such_key: 1\n")
    with pytest.raises((ValueError, SystemExit)):
        TrlParser(parser_types).parse_args_and_config(["--config", str(bad)])


def test_qlora_needs_cuda():
    from raft import use_qlora

    assert use_qlora("auto", cuda=False) is False and use_qlora("auto", cuda=True) is True
    assert use_qlora("false", cuda=True) is False
    with pytest.raises(ValueError, match="needs CUDA"):
        use_qlora("true", cuda=False)


def test_collated_batch_masks_the_prompt(tiny_setup):
    from raft import build_trainer

    root, base = tiny_setup
    trainer, info = build_trainer(*_parse(root, base, "--max_steps", "1"))
    assert info["qlora"] is False and info["rows"] == 4
    tokenizer = info["tokenizer"]
    rows = trainer.train_dataset
    batch = next(iter(trainer.get_train_dataloader()))
    assert batch["input_ids"].shape[0] == 1  # batch 1
    checked = 0
    for batch in trainer.get_train_dataloader():
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        # find the row: the prompt rendered alone is a prefix of the sequence
        matches = []
        for prompt in _raw_prompts(root, rows):
            prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
            prompt_ids = tokenizer(prompt_ids, add_special_tokens=False)["input_ids"]
            if ids[:len(prompt_ids)] == prompt_ids:
                matches.append(len(prompt_ids))
        assert matches, "no prompt is a prefix of the collated sequence"
        n = max(matches)
        assert all(label == -100 for label in labels[:n])
        assert labels[n:] == ids[n:] and len(ids) > n
        assert "Answer:" in tokenizer.decode(ids[n:]) and "Passages:" not in tokenizer.decode(ids[n:])
        checked += 1
    assert checked == 4


def _raw_prompts(root: Path, rows):
    from datasets import load_from_disk

    return load_from_disk(str(root / "data"))["train"]["prompt"]


def test_one_step_lora_run_changes_the_adapter_and_reloads(tiny_setup):
    import json

    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from raft import main

    root, base = tiny_setup
    summary = main(*_parse(root, base, "--max_steps", "2", "--learning_rate", "0.01", "--warmup_steps", "0"))
    trainer = summary["trainer"]
    saved = load_file(str(root / "out" / "adapter_model.safetensors"))
    lora_b = [k for k in saved if "lora_B" in k]
    assert lora_b and all(("q_proj" in k or "v_proj" in k) for k in lora_b)
    assert any(saved[k].abs().sum() > 0 for k in lora_b)  # LoRA B starts at zero: the run moved it
    assert summary["steps"] == 2 and summary["tokens_seen"] > 0 and summary["tokens_per_second"] > 0

    x = torch.tensor([[3, 5, 7, 11, 13, 17]])
    trainer.model.eval()
    with torch.no_grad():
        expected = trainer.model(input_ids=x).logits
        plain = AutoModelForCausalLM.from_pretrained(str(base)).eval()(input_ids=x).logits
        reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(base)), str(root / "out"))
        merged = AutoModelForCausalLM.from_pretrained(str(root / "merged")).eval()
        assert torch.allclose(reloaded.eval()(input_ids=x).logits, expected, atol=1e-5)
        assert torch.allclose(merged(input_ids=x).logits, expected, atol=1e-4)
    assert not torch.allclose(plain, expected, atol=1e-4)  # the adapter changes the outputs
    card = (root / "out" / "README.md").read_text()
    assert "library_name: peft" in card and "- lora_r: 16" in card
    assert "completion-only cross-entropy" in card and "train_loss" in card
    assert "library_name: transformers" in (root / "merged" / "README.md").read_text()
    assert json.loads((root / "summary.json").read_text())["summary"]["steps"] == 2
    _check_raft_cards(root, str(base))


def _check_raft_cards(root: Path, base: str) -> None:
    """Both folders' card data (RAFTAdapterCard) and cards, and hub_push rendering them again from the saved data."""
    import json

    import yaml

    from rirag.hub.assemble import assemble
    from rirag.hub.card_data import CARD_DATA_FILE, CARD_FILE, RAFTAdapterCard, load_card_data
    from rirag.hub.manifest import load_manifest

    for folder, variant, library in (("out", "adapter", "peft"), ("merged", "merged", "transformers")):
        text = (root / folder / CARD_FILE).read_text()
        meta = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
        assert meta["base_model"] == base and meta["library_name"] == library and "raft" in meta["tags"]
        saved = json.loads((root / folder / CARD_DATA_FILE).read_text())
        assert saved["kind"] == "raft" and saved["variant"] == variant and saved["adapter"] == str(root / "out")
        assert saved["training"]["steps"] == 2 and saved["raft_data"]["rows"] == 4 and saved["lora"]["lora_r"] == 16
        hyper = saved["hyperparameters"]
        assert hyper["learning_rate"] == 0.01 and hyper["max_steps"] == 2 and "`max_train_samples`: 4" in text
        for default in ("qlora", "weight_decay", "dataset_train_split", "seed"):
            assert default not in hyper and f"`{default}`" not in text
        for ignored in ("output_dir", "merged_output_dir", "dataset_name", "model_name_or_path", "results_path"):
            assert ignored not in hyper
    assert "PeftModel.from_pretrained(base, " in (root / "out" / CARD_FILE).read_text()
    assert f"(`{root / 'out'}`) merged into its weights" in (root / "merged" / CARD_FILE).read_text()
    # hub_push renders the same template from the saved card data: the same bytes when publishing adds nothing
    (root / "manifest.yaml").write_text(yaml.safe_dump({"namespace": "ns", "aliases": {base: "ns/tiny-base"},
                                                        "entries": [
        {"name": "out", "kind": "adapter", "source": "out", "repo": "out", "card": "raft_adapter.md.j2",
         "results": []}]}))
    manifest = load_manifest(root / "manifest.yaml")
    trainer_card = (root / "out" / CARD_FILE).read_bytes()
    assert isinstance(load_card_data(root / "out", RAFTAdapterCard), RAFTAdapterCard)
    row = assemble(manifest.entries[0], manifest, root)
    assert row.status == "assembled" and row.card == "ok", row
    published = (Path(row.folder) / CARD_FILE).read_text()
    assert published.encode() == trainer_card.replace(str(root / "out").encode(), b"ns/out").replace(
        base.encode(), b"ns/tiny-base")  # and the local base model as the Hub id the manifest gives it
    assert json.loads((Path(row.folder) / "adapter_config.json").read_text())["base_model_name_or_path"] == (
        "ns/tiny-base")
