"""A tiny project holding an artifact of every kind hub_push/manifest.yaml publishes, each where its trainer or
builder puts it, after `make publish`'s command (dry run, load check on): what the Hub round trip and the as-pushed
tests read."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "train"))
sys.path.insert(0, str(REPO / "tests"))

from conftest import write_tiny_obliqa  # noqa: E402
from tiny_causal_lm import tiny_causal_lm  # noqa: E402
from tiny_encoder import tiny_mlm, tiny_sentence_transformer  # noqa: E402

MANIFEST = REPO / "hub_push" / "manifest.yaml"


def _classifier(folder: Path, id2label: dict) -> Path:
    """A tiny BERT sequence classifier with the given labels, and its tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    raw = tiny_mlm(folder.parent / (folder.name + "-raw"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len((raw / "vocab.txt").read_text().split()), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=37, max_position_embeddings=128,
                        id2label=dict(id2label), label2id={v: k for k, v in id2label.items()})
    BertForSequenceClassification(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(raw)).save_pretrained(folder)
    return folder


def _raft(root: Path) -> None:
    """The RAFT instances (the builder's save_raft_dataset) and a 2-step LoRA run of train/raft.py on a tiny LM."""
    from trl import ModelConfig, SFTConfig, TrlParser

    from _raft_fixtures import save_tiny_raft_dataset
    from raft import RaftTrainingArguments, main
    from rirag.generation.raft import RaftDataArguments

    tiny_causal_lm(root / "artifacts" / "models" / "smollm2-135m-instruct")
    save_tiny_raft_dataset("artifacts/datasets/raft/offline")
    args = ["--config", str(REPO / "recipes" / "raft" / "offline.yaml"), "--dataset_name",
            "artifacts/datasets/raft/offline", "--model_name_or_path", "artifacts/models/smollm2-135m-instruct",
            "--from_offline_gguf", "false", "--output_dir", "artifacts/raft/smollm2-135m-raft",
            "--merged_output_dir", "artifacts/raft/smollm2-135m-raft-merged", "--max_train_samples", "4",
            "--max_eval_samples", "2", "--max_length", "1024", "--gradient_accumulation_steps", "1",
            "--max_steps", "2", "--warmup_steps", "0", "--logging_steps", "1", "--report_to", "none"]
    main(*TrlParser((RaftDataArguments, RaftTrainingArguments, SFTConfig, ModelConfig)).parse_args_and_config(args))


def _nli_data(folder: Path) -> None:
    from datasets import Dataset, DatasetDict

    def part(n):
        return Dataset.from_dict({"premise": ["A firm must keep records."] * n, "hypothesis": ["Records are kept."] * n,
                                  "label": [1] * n, "source": ["snli", "mnli"][:n] * (n // min(n, 2))})

    DatasetDict({"train": part(4), "validation": part(2), "test": part(2)}).save_to_disk(str(folder))


def build_tiny_project(root: Path) -> dict:
    """Write the tiny artifacts under ``root`` (a project root: ``src/rirag``, the metric and the demo linked from
    this checkout, the results copied) and run `make publish`'s dry run there; its rows by entry name."""
    import importlib.util

    from rirag.data.obliqa import load_obliqa
    from rirag.hub.dataset_build import BuildConfig, build
    from rirag.scoring.constants import NLI_ID2LABEL, OBLIGATION_ID2LABEL

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.chdir(root)  # the trainers record the paths they were given, relative as in the real project
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(root / "cache"))
    try:
        for tracked in ("src/rirag", "evaluate_scripts/repass", "spaces/demo", "hub_push/nli_sources_licences.md"):
            (root / tracked).parent.mkdir(parents=True, exist_ok=True)
            (root / tracked).symlink_to(REPO / tracked)  # read only: upload folders hold copies
        # the trainers write their results files here: a copy, so that the repository's results stay untouched
        shutil.copytree(REPO / "benchmarks" / "results", root / "benchmarks" / "results")
        data = write_tiny_obliqa(root / "obliqa")
        build(BuildConfig(data=str(data), out="artifacts/datasets/obliqa", audit_embedder="none"), load_obliqa(data))
        _nli_data(root / "artifacts" / "datasets" / "nli")
        encoder = "artifacts/contrastive_tuning/minilm-ct-train"
        tiny_sentence_transformer(root / encoder)
        tiny_sentence_transformer(root / "artifacts/contrastive_tuning/minilm-et-ct-train")
        import learned_fusion

        learned_fusion.main(learned_fusion.LearnedFusionArguments(
            encoders=encoder, data=str(data), train_split="original-dev", eval_split="original-test",
            output_dir="artifacts/learned_fusion/minilm-lf-train", num_boost_round=5, min_data_in_leaf=1,
            num_threads=1))
        from sentence_transformers import CrossEncoder

        CrossEncoder(str(tiny_mlm(root / "reranker-raw")), num_labels=1).save(
            str(root / "artifacts" / "reranker" / "minilm-reranker-train"))
        _classifier(root / "artifacts" / "obligation_classifier", OBLIGATION_ID2LABEL)
        _classifier(root / "artifacts" / "nli_judge", NLI_ID2LABEL)
        _raft(root)
        spec = importlib.util.spec_from_file_location("hub_push_push_roundtrip", REPO / "hub_push" / "push.py")
        push = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = push
        spec.loader.exec_module(push)
        rows = push.main(push.parse_args(["--manifest", str(MANIFEST), "--dry-run", "--root", str(root)]))
    finally:
        monkeypatch.undo()
    return {r.name: r for r in rows}


