"""2-step entailment and contrastive tuning runs on a tiny BERT; the no-duplicates batch sampler."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "train"))

from tiny_encoder import tiny_mlm, tiny_sentence_transformer  # noqa: E402

TEXTS = ["passage: an authorised person must maintain records", "query: how long must records be kept"]


def _assert_encoder_card(folder: Path, base: str, tag: str, hyperparameter: str) -> None:
    """The trainer saved EncoderCard data and the README.md hub_push's template renders from it (same bytes)."""
    from rirag.hub.card_data import CARD_FILE, EncoderCard, load_card_data

    card = load_card_data(folder, EncoderCard)
    assert card is not None and card.TEMPLATE == "sentence_transformer.md.j2"
    assert card.base_model == base and tag in card.tags and hyperparameter in card.hyperparameters
    text = (folder / CARD_FILE).read_text(encoding="utf-8")
    assert text == card.render()
    assert f'SentenceTransformer("{folder}")' in text and tag in text and card.train_data in text


def _bert_weights(folder):
    from transformers import AutoModel

    return {k: v.clone() for k, v in AutoModel.from_pretrained(folder).state_dict().items()}


def _changed(before: dict, after: dict) -> int:
    return sum(1 for k, v in after.items()
               if k in before and v.shape == before[k].shape and not torch.equal(v, before[k]))


def test_entailment_tuning_two_steps(tiny_data_dir, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import TrainingArguments

    import entailment_tuning as et

    base = tiny_mlm(tmp_path / "tiny-mlm")
    before = _bert_weights(str(base))
    args = et.EntailmentTuningArguments(model_name_or_path=str(base), data=str(tiny_data_dir),
                                        train_split="original-dev", max_length=48)
    targs = TrainingArguments(output_dir=str(tmp_path / "et"), max_steps=2, per_device_train_batch_size=4,
                              learning_rate=1e-3, save_strategy="no", report_to="none", use_cpu=True,
                              logging_steps=1, max_grad_norm=1.0)
    result = et.main(args, targs)
    assert result["examples"] > 4 and np.isfinite(result["train_loss"])
    out = tmp_path / "et"
    assert (out / "modules.json").exists()
    _assert_encoder_card(out, str(base), "entailment-tuning", "learning_rate")
    reloaded = SentenceTransformer(str(out))
    import re

    after = {re.sub(r"^0\.(auto_)?model\.", "", k): v for k, v in reloaded.state_dict().items()}
    assert len(set(after) & set(before)) > 10
    assert _changed(before, after) > 0
    # the reloaded bi-encoder gives the trained encoder's mean-pooled embeddings
    tok = reloaded.tokenizer
    enc = result["encoder"].eval()
    with torch.no_grad():
        batch = tok(TEXTS, padding=True, return_tensors="pt")
        hidden = enc(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        expected = (hidden * mask).sum(1) / mask.sum(1)
    assert np.allclose(reloaded.encode(TEXTS), expected.numpy(), atol=1e-5)


@pytest.mark.parametrize("hard_negatives", [0, 1])
def test_contrastive_tuning_two_steps(tiny_data_dir, tmp_path, hard_negatives):
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments

    import contrastive_tuning as ct

    start = tiny_sentence_transformer(tmp_path / "tiny-st")
    before = SentenceTransformer(str(start)).encode(TEXTS)
    args = ct.ContrastiveTuningArguments(model_name_or_path=str(start), data=str(tiny_data_dir),
                                         train_split="original-dev", eval_split="", eval_holdout_fraction=0.3,
                                         eval_corpus_size=0, max_seq_length=48, hard_negatives=hard_negatives,
                                         negatives_depth=5, results_path=str(tmp_path / "selection.json"),
                                         precision="fp32")  # exact saved-vs-memory check: no bf16 autocast
    targs = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "ct"), max_steps=2, per_device_train_batch_size=4, learning_rate=1e-3,
        warmup_steps=0, eval_strategy="steps", eval_steps=1, save_strategy="steps", save_steps=1,
        save_total_limit=1, load_best_model_at_end=True, report_to="none", use_cpu=True, logging_steps=1)
    summary = ct.main(args, targs)
    assert targs.batch_sampler == "no_duplicates"
    assert len(summary["per_epoch"]) == 2 and summary["best"] in summary["per_epoch"]
    assert (tmp_path / "selection.json").exists() and summary["hard_negatives"] == hard_negatives
    reloaded = SentenceTransformer(str(tmp_path / "ct"))
    after = reloaded.encode(TEXTS)
    assert not np.allclose(before, after, atol=1e-6)  # weights changed
    assert np.allclose(summary["model"].encode(TEXTS), after, atol=1e-5)  # saved = the best model in memory
    _assert_encoder_card(tmp_path / "ct", str(start), "contrastive-tuning", "hard_negatives" if hard_negatives
                         else "eval_holdout_fraction")


def test_no_duplicates_sampler_never_repeats_question_or_passage(tiny_data_dir):
    from datasets import Dataset
    from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import split_questions
    from rirag.retrieval.dense import question_passage_pairs

    obliqa = load_obliqa(tiny_data_dir)
    questions = split_questions(obliqa, "original-dev")
    pairs = question_passage_pairs(questions, obliqa.corpus, seed=1)
    # the same question with two gold passages, and one passage gold for two questions
    assert len({p[1] for p in pairs}) < len(pairs) and len({p[3] for p in pairs}) < len(pairs)
    ds = Dataset.from_dict({"anchor": [p[1] for p in pairs], "positive": [p[3] for p in pairs]})
    seen = 0
    for seed in range(5):
        sampler = NoDuplicatesBatchSampler(ds, batch_size=4, drop_last=False, seed=seed)
        for batch in sampler:
            anchors = [ds[i]["anchor"] for i in batch]
            positives = [ds[i]["positive"] for i in batch]
            assert len(set(anchors)) == len(anchors)
            assert len(set(positives)) == len(positives)
            seen += len(batch)
    assert seen == 5 * len(ds)  # every pair is still used once per epoch


@pytest.mark.parametrize("script, args_cls, targs", [
    ("entailment_tuning", "EntailmentTuningArguments", "transformers:TrainingArguments"),
    ("contrastive_tuning", "ContrastiveTuningArguments", "sentence_transformers:SentenceTransformerTrainingArguments"),
    ("reranker", "RerankerArguments", "sentence_transformers.cross_encoder:CrossEncoderTrainingArguments"),
])
def test_recipes_parse_and_unknown_keys_fail(script, args_cls, targs, tmp_path):
    import importlib

    from trl import TrlParser

    module = importlib.import_module(script)
    mod, name = targs.split(":")
    parser_types = (getattr(module, args_cls), getattr(importlib.import_module(mod), name))
    recipes = sorted((REPO / "recipes" / script).glob("*.yaml"))
    assert {p.name for p in recipes} >= {"offline.yaml", "paper.yaml"}
    for recipe in recipes:
        script_args, training_args = TrlParser(parser_types).parse_args_and_config(
            ["--config", str(recipe), "--output_dir", str(tmp_path / "o")])  # as written: no recipe forces bf16
        if script != "reranker":  # the paper's AdamW 2e-5 for both retriever stages (the reranker is ours)
            assert training_args.learning_rate == pytest.approx(2e-5)
        assert script_args.model_name_or_path
    bad = tmp_path / "bad.yaml"
    bad.write_text(recipes[0].read_text() + "no_such_key: 1\n")
    with pytest.raises((ValueError, SystemExit)):
        TrlParser(parser_types).parse_args_and_config(["--config", str(bad)])


def test_a_launch_that_got_fewer_processes_than_asked_is_refused_naming_the_config_that_works():
    from types import SimpleNamespace

    from rirag.training.runner import (
        CPU_MULTIPROCESS_CONFIG,
        TrainingRefused,
        batch_facts,
        check_processes,
        requested_processes,
        single_process_only,
    )

    one, two = SimpleNamespace(world_size=1), SimpleNamespace(world_size=2)
    simple_launcher = {"MASTER_ADDR": "127.0.0.1", "ACCELERATE_USE_CPU": "True"}  # --cpu --num_processes 2
    assert requested_processes({}) is None and requested_processes({"ACCELERATE_USE_CPU": "True"}) is None
    assert requested_processes(simple_launcher) == 2 and requested_processes({"WORLD_SIZE": "4"}) == 4
    assert check_processes(one, {}) == 1 and check_processes(two, {"WORLD_SIZE": "2", "RANK": "1"}) == 2
    for env, asked in ((simple_launcher, "several processes"), ({"WORLD_SIZE": "2", "RANK": "0"}, "2 processes")):
        with pytest.raises(TrainingRefused, match=asked) as err:
            check_processes(one, env)
        assert CPU_MULTIPROCESS_CONFIG in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(TrainingRefused, match="one process"):
        single_process_only("learned fusion", {"WORLD_SIZE": "2"})
    single_process_only("learned fusion", {})
    args = SimpleNamespace(world_size=2, per_device_train_batch_size=4, gradient_accumulation_steps=3, max_steps=-1,
                           num_train_epochs=1.0)
    assert batch_facts(args, steps=5) == {"world_size": 2, "per_device_batch": 4, "global_batch": 24,
                                          "examples_seen": 120}
    assert batch_facts(args, steps=5, examples=100)["examples_seen"] == 100  # the last batch was not full


def test_trainers_that_save_from_rank_0_refuse_fsdp():
    from types import SimpleNamespace

    from rirag.training.runner import TrainingRefused, no_sharded_model

    no_sharded_model(SimpleNamespace(fsdp=""), "the judge", environ={})
    for args, env in ((SimpleNamespace(fsdp="full_shard"), {}), (SimpleNamespace(fsdp=""),
                                                                 {"ACCELERATE_USE_FSDP": "true"})):
        with pytest.raises(TrainingRefused, match="ddp.yaml"):
            no_sharded_model(args, "the judge", environ=env)
