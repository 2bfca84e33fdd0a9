"""A trainer's --push_to_hub goes through rirag.hub with the typed card: the Trainer's own pushes (checkpoints, the
library's generated README.md) are off, and what is uploaded names Hub ids, not local paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert
from _scripts import load_script

REPO = Path(__file__).resolve().parents[1]


class RecordingHfApi:
    """Records each call and, at upload time, the files of the folder uploaded (it may be a temporary copy)."""

    calls: list = []

    def __init__(self, token=None, **kwargs):
        pass

    def create_repo(self, repo_id, **kwargs):
        RecordingHfApi.calls.append(("create_repo", repo_id))

    def upload_folder(self, **kwargs):
        folder = Path(kwargs["folder_path"])
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        RecordingHfApi.calls.append(("upload_folder", kwargs["repo_id"], files))

        class Info:
            commit_url = "https://hub.invalid/commit/1"
            pr_url = None

        return Info()


@pytest.fixture
def hub_api(monkeypatch):
    import huggingface_hub

    RecordingHfApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHfApi)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    return RecordingHfApi


def test_the_classifier_pushes_once_after_saving_its_typed_card(tmp_path, hub_api):
    """With push_to_hub the Trainer would create the repo at start (offline: an error), push checkpoints and write its
    own card on save_model; here one upload happens, after training, of the folder with the typed card."""
    from transformers import TrainingArguments

    from rirag.io import WEIGHTS_FINGERPRINT, weights_fingerprint

    script = load_script("train/obligation_classifier.py")
    base = tiny_bert("obl_push_base", OBLIGATION_LABELS, seed=5, head_scale=1.0)
    data = [{"Text": f"Firms must keep records for {w} years.", "Obligation": True} for w in "abcdefgh"]
    data += [{"Text": f"The sky is blue on day {w}.", "Obligation": False} for w in "abcdefgh"]
    (tmp_path / "obl.json").write_text(json.dumps(data))
    out = tmp_path / "model"
    args = script.ObligationScriptArguments(data_path=str(tmp_path / "obl.json"), model_name_or_path=base,
                                            results_path=str(tmp_path / "res.json"))
    targs = TrainingArguments(output_dir=str(out), max_steps=2, per_device_train_batch_size=8, report_to="none",
                              use_cpu=True, save_strategy="no", eval_strategy="no", disable_tqdm=True,
                              push_to_hub=True, hub_model_id="me/obligation-classifier")
    script.main(args, targs)
    uploads = [c for c in hub_api.calls if c[0] == "upload_folder"]
    assert [c[1] for c in uploads] == ["me/obligation-classifier"]
    card = uploads[0][2]["README.md"].decode()
    assert card == (out / "README.md").read_text()  # the typed card, as saved beside the weights
    assert "Sentence classifier for regulatory obligations" in card and "base_model: " in card
    assert "card_data.json" not in uploads[0][2] and not any(n.startswith("checkpoint-") for n in uploads[0][2])
    recorded = json.loads((tmp_path / "res.json").read_text())[WEIGHTS_FINGERPRINT]
    assert recorded == weights_fingerprint(out) == json.loads((out / "card_data.json").read_text())[WEIGHTS_FINGERPRINT]


def test_no_trainer_calls_a_librarys_own_push():
    """Every trainer built on a transformers Trainer holds its push and pushes through rirag.hub."""
    scripts = sorted((REPO / "train").glob("*.py"))
    own = {p.name for p in scripts if re.search(r"\.push_to_hub\(", p.read_text())}
    assert not own, f"{own} push with the library's own card"
    trainers = [p for p in scripts if re.search(r"TrainingArguments|SFTConfig", p.read_text())]
    assert len(trainers) >= 6
    assert [p.name for p in trainers if "hold_trainer_push(training_args)" not in p.read_text()] == []


def test_a_pushed_adapter_names_its_base_models_hub_id(tmp_path, hub_api):
    from rirag.hub.push import push_trained

    adapter = tmp_path / "artifacts" / "raft" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_bytes(b"\1" * 64)
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": "artifacts/models/smollm2-135m-instruct", "peft_type": "LORA"}))
    (adapter / "README.md").write_text("typed card\n")
    push_trained((str(adapter), "me/adapter"), REPO / "hub_push" / "manifest.yaml")
    (_, repo, files), = [c for c in hub_api.calls if c[0] == "upload_folder"]
    assert repo == "me/adapter" and files["README.md"] == b"typed card\n"
    assert json.loads(files["adapter_config.json"])["base_model_name_or_path"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"].startswith("artifacts")
