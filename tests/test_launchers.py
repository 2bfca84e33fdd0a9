"""Every trainer under every launcher, in one process (the 2-process launches are in ``test_distributed.py``):
sharded launches (FSDP, DeepSpeed ZeRO-3) are refused where the save cannot gather the model, and configured so it
does where it can; QLoRA's needs are checked before any data is built; RAFT's data is built once per job; too little
data is one line and exit 2; the focused scorer does nothing on a rank other than 0.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from _scripts import load_script
from rirag.exit_codes import EXIT_USAGE
from rirag.training.runner import (
    TrainingRefused,
    check_parts,
    no_sharded_model,
    require_full_state_dict,
    run_trainer,
    sharding,
)

REPO = Path(__file__).resolve().parents[1]
FSDP_ENV = {"ACCELERATE_USE_FSDP": "true", "FSDP_STATE_DICT_TYPE": "FULL_STATE_DICT"}
ZERO3_ENV = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}
LAUNCH_VARS = ("ACCELERATE_USE_FSDP", "FSDP_STATE_DICT_TYPE", "FSDP_VERSION", "ACCELERATE_USE_DEEPSPEED",
               "ACCELERATE_DEEPSPEED_ZERO_STAGE", "ACCELERATE_DEEPSPEED_CONFIG_FILE",
               "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "RANK", "WORLD_SIZE")


@pytest.fixture(autouse=True)
def _no_launcher(monkeypatch):
    for name in LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)


def _one_line_refusal(caplog, status: int, *words: str) -> str:
    said = [r.getMessage() for r in caplog.records if r.name == "rirag.training.runner" and r.levelno == logging.ERROR]
    assert status == EXIT_USAGE and len(said) == 1 and "\n" not in said[0], said
    for word in words:
        assert word in said[0], (word, said[0])
    return said[0]


def test_sharding_is_read_from_the_trainer_arguments_and_from_accelerate(tmp_path):
    plain = SimpleNamespace(fsdp="", deepspeed=None)
    assert sharding(plain, {}) is None
    assert sharding(SimpleNamespace(fsdp="full_shard", deepspeed=None), {}) == "FSDP"
    assert sharding(plain, FSDP_ENV) == "FSDP"
    assert sharding(plain, ZERO3_ENV) == "DeepSpeed ZeRO-3"
    assert sharding(plain, ZERO3_ENV | {"ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"}) is None
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3}}))
    assert sharding(SimpleNamespace(fsdp="", deepspeed=str(ds)), {}) == "DeepSpeed ZeRO-3"
    assert sharding(SimpleNamespace(fsdp="", deepspeed={"zero_optimization": {"stage": 2}}), {}) is None
    assert sharding(plain, {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(ds)}) \
        == "DeepSpeed ZeRO-3"


def test_whole_model_trainers_refuse_fsdp_and_zero3_in_one_line():
    plain = SimpleNamespace(fsdp="", deepspeed=None)
    no_sharded_model(plain, "the judge", environ={})
    for env, how in ((FSDP_ENV, "FSDP"), (ZERO3_ENV, "DeepSpeed ZeRO-3")):
        with pytest.raises(TrainingRefused, match="ddp.yaml") as err:
            no_sharded_model(plain, "the judge", environ=env)
        assert f"a {how}-sharded one" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("script, args_cls, targs_module, targs_cls", [
    ("contrastive_tuning", "ContrastiveTuningArguments", "sentence_transformers",
     "SentenceTransformerTrainingArguments"),
    ("reranker", "RerankerArguments", "sentence_transformers.cross_encoder", "CrossEncoderTrainingArguments"),
    ("entailment_tuning", "EntailmentTuningArguments", "transformers", "TrainingArguments"),
    ("nli_judge", "NLIJudgeArguments", "sentence_transformers.cross_encoder", "CrossEncoderTrainingArguments"),
])
@pytest.mark.parametrize("env", [FSDP_ENV, ZERO3_ENV], ids=["fsdp", "zero3"])
def test_sentence_transformers_trainers_refuse_a_sharded_launch_before_any_work(script, args_cls, targs_module,
                                                                                 targs_cls, env, tmp_path,
                                                                                 monkeypatch, caplog):
    """sentence-transformers' ``_save`` ignores the state dict ``save_model`` gathers (and entailment tuning saves
    rank 0's copy): contrastive tuning and the reranker refuse FSDP and ZeRO-3, as entailment tuning and the judge
    do, in one line, exit 2, nothing written (no data was even loaded: the data path does not exist)."""
    import importlib

    module = load_script(f"train/{script}.py", f"{script}_launch")
    targs = getattr(importlib.import_module(targs_module), targs_cls)(output_dir=str(tmp_path / "out"),
                                                                     report_to="none", use_cpu=True)
    fields = {"data": str(tmp_path / "absent")} if script in ("contrastive_tuning", "reranker") else {}
    args = getattr(module, args_cls)(**fields)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.ERROR)
    status = run_trainer(module.main, args, targs)
    _one_line_refusal(caplog, status, "ddp.yaml", "nothing was written")
    assert not (tmp_path / "out").exists()


def test_transformers_saves_need_a_full_state_dict_or_zero3_gathering(tmp_path):
    plain = SimpleNamespace(fsdp="", deepspeed=None)
    require_full_state_dict(plain, "RAFT", {})
    require_full_state_dict(plain, "RAFT", FSDP_ENV)  # recipes/accelerate/fsdp.yaml
    require_full_state_dict(SimpleNamespace(fsdp="full_shard", fsdp_config={}, deepspeed=None), "RAFT", {})
    for env in (FSDP_ENV | {"FSDP_STATE_DICT_TYPE": "SHARDED_STATE_DICT"}, {"ACCELERATE_USE_FSDP": "true",
                                                                            "FSDP_VERSION": "2"}):
        with pytest.raises(TrainingRefused, match="FULL_STATE_DICT"):
            require_full_state_dict(plain, "RAFT", env)
    with pytest.raises(TrainingRefused, match="zero3_save_16bit_model"):
        require_full_state_dict(plain, "RAFT", ZERO3_ENV)
    require_full_state_dict(plain, "RAFT", ZERO3_ENV | {"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL": "true"})
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True}}))
    require_full_state_dict(SimpleNamespace(fsdp="", deepspeed=str(ds)), "RAFT", {})


def test_too_little_data_names_the_data_and_every_part():
    check_parts("RAFT", "data/x", {"train": 3, "held_out": 1})
    with pytest.raises(TrainingRefused) as err:
        check_parts("RAFT", "data/x", {"train": 3, "held_out": 0}, hint="build more")
    assert str(err.value) == ("RAFT: data/x: too little data (train: 3, held_out: 0; each part needs at least 1); "
                              "build more; nothing was written")


# --- RAFT -------------------------------------------------------------------------------------------------------


def _small_raft_dataset(out: Path, n: int) -> None:
    """A RAFT DatasetDict of ``n`` rows split as the builder splits it (no ``held_out`` below 11 rows)."""
    from _raft_fixtures import CiteEveryPassage
    from rirag.data.obliqa import Passage
    from rirag.generation.raft import ExtractiveTeacher, RaftInstance, raft_rows, split_rows
    from rirag.hub.dataset_build import save_raft_dataset

    corpus = {f"p{i}": Passage(f"p{i}", 1, str(i), f"A firm must file a return {i}.") for i in range(8)}
    instances = [RaftInstance(f"q{j}", "Must a firm file a return?", tuple(f"p{(j + k) % 8}" for k in range(4)),
                              (f"p{j % 8}",)) for j in range(n)]
    rows, _ = raft_rows(instances, corpus, ExtractiveTeacher(CiteEveryPassage()))
    report = {"questions": n, "instances": n, "with_oracle": n, "oracle_share": 1.0, "oracle_probability": 0.7,
              "distractors_with_oracle": 3, "distractors_without_oracle": 4, "seed": 42, "skipped": {},
              "split": "train", "split_seed": 42, "distractor_source": "hand-made", "negatives_depth": 20,
              "teacher": "extractive", "teacher_dropped": 0}
    save_raft_dataset(split_rows(rows), report, str(out), "pytest")


def _raft_args(tmp_path: Path, *extra: str):
    from trl import ModelConfig, SFTConfig, TrlParser

    from rirag.generation.raft import RaftDataArguments

    raft = load_script("train/raft.py", "raft_launch")
    args = ["--config", str(REPO / "recipes" / "raft" / "offline.yaml"), "--dataset_name", str(tmp_path / "data"),
            "--model_name_or_path", str(tmp_path / "no-model"), "--from_offline_gguf", "false",
            "--output_dir", str(tmp_path / "out"), "--merged_output_dir", str(tmp_path / "merged"),
            "--results_path", str(tmp_path / "summary.json"), *extra]
    parsed = TrlParser((RaftDataArguments, raft.RaftTrainingArguments, SFTConfig, ModelConfig)).parse_args_and_config(
        args)
    return raft, parsed


def test_raft_with_too_few_rows_for_a_held_out_split_is_one_line_and_exit_2(tmp_path, monkeypatch, caplog):
    """Fewer than 11 rows: the builder writes no ``held_out``; the recipe evaluates on it: one line naming the
    dataset and its splits, exit 2 (was a raw KeyError), before any model is loaded (there is none)."""
    _small_raft_dataset(tmp_path / "data", 6)
    raft, parsed = _raft_args(tmp_path)
    assert parsed[1].dataset_eval_split == "held_out"
    firsts = []
    original = type(parsed[2]).main_process_first

    def recording(self, local=True, desc="work"):
        firsts.append(local)
        return original(self, local=local, desc=desc)

    monkeypatch.setattr(type(parsed[2]), "main_process_first", recording)
    caplog.set_level(logging.ERROR)
    status = run_trainer(raft.main, *parsed)
    line = _one_line_refusal(caplog, status, str(tmp_path / "data"), "'held_out'", "train: 6 rows", "11 rows")
    assert "KeyError" not in line
    assert firsts == [False]  # the data is built by the job's main process, not by each machine's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_raft_data_built_on_another_machine_is_named_not_a_traceback(tmp_path, monkeypatch, caplog):
    """Several machines without shared storage: the job's main process built the data on its own disk; a rank of
    another machine waits, never builds it itself (no second teacher run), finds none and says so in one line."""
    raft, parsed = _raft_args(tmp_path, "--teacher", "focused")
    monkeypatch.setattr(type(parsed[2]), "process_index", property(lambda self: 1))  # not the job's main process
    monkeypatch.setattr("rirag.generation.raft.build_raft_dataset", lambda *a: pytest.fail("built on a non-main rank"))
    caplog.set_level(logging.ERROR)
    status = run_trainer(raft.main, *parsed)
    _one_line_refusal(caplog, status, str(tmp_path / "data"), "not on this machine", "storage they share")
    assert not list(tmp_path.iterdir())


def test_qlora_is_checked_before_any_data_is_built(tmp_path, monkeypatch, caplog):
    """CUDA present, bitsandbytes missing, the data not built yet: one line naming the gpu extra, exit 2, and the
    teacher never ran."""
    import importlib.util

    import torch

    raft, parsed = _raft_args(tmp_path, "--use_cpu", "false")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "bitsandbytes" else real_find_spec(name, *a))
    monkeypatch.setattr("rirag.generation.raft.build_raft_dataset", lambda *a: pytest.fail("data built first"))
    caplog.set_level(logging.ERROR)
    status = run_trainer(raft.main, *parsed)
    _one_line_refusal(caplog, status, "bitsandbytes", "pip install 'rirag[gpu]'", "qlora: false")
    assert not list(tmp_path.iterdir())
    with pytest.raises(TrainingRefused, match="needs CUDA"):
        raft.check_qlora("true", cuda=False)
    assert raft.check_qlora("false", cuda=True) is False


@pytest.mark.parametrize("env, sharded", [({}, False), (FSDP_ENV, True), (ZERO3_ENV, True)],
                         ids=["ddp", "fsdp", "zero3"])
def test_qlora_stores_its_4bit_weights_in_the_compute_dtype_when_sharded(env, sharded, monkeypatch):
    raft = load_script("train/raft.py", "raft_launch")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    training_args = SimpleNamespace(bf16=False, fp16=False, use_cpu=False, mixed_precision="no", optim="adamw_torch",
                                    model_init_kwargs=None, fsdp="", deepspeed=None)
    model_args = SimpleNamespace(load_in_4bit=False, bnb_4bit_quant_type=None, dtype=None, bnb_4bit_quant_storage=None)
    script_args = raft.RaftTrainingArguments(qlora="auto")
    assert raft.configure_precision(script_args, training_args, model_args, cuda=True) is True
    assert model_args.bnb_4bit_quant_storage == (model_args.dtype if sharded else None)
    assert model_args.dtype in ("bfloat16", "float32")


# --- the other trainers' small data ----------------------------------------------------------------------------------


def test_obligation_classifier_with_one_record_is_one_line_and_exit_2(tmp_path, caplog):
    from transformers import TrainingArguments

    from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert

    script = load_script("train/obligation_classifier.py", "obligation_launch")
    data = tmp_path / "obl.json"
    data.write_text(json.dumps([{"Text": "Firms must keep records.", "Obligation": True}]))
    args = script.ObligationScriptArguments(data_path=str(data), results_path=str(tmp_path / "res.json"),
                                            model_name_or_path=tiny_bert("obl_small", OBLIGATION_LABELS))
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none", use_cpu=True)
    caplog.set_level(logging.ERROR)
    _one_line_refusal(caplog, run_trainer(script.main, args, targs), str(data), "train: 0, held-out: 1",
                      "test_size 0.2 of 1 records")
    data.write_text(json.dumps([{"Text": "Firms must keep records.", "Obligation": "yes"}] * 2))
    caplog.clear()
    _one_line_refusal(caplog, run_trainer(script.main, args, targs), str(data), "record 0", "'Obligation'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obl.json"]


def test_contrastive_tuning_without_selection_questions_is_one_line(monkeypatch):
    from rirag.data.obliqa import Question

    script = load_script("train/contrastive_tuning.py", "contrastive_launch")
    one = [Question("q1", "How long?", ("p1",))]
    monkeypatch.setattr("rirag.data.splits.split_questions", lambda obliqa, name, seed=0: one)
    obliqa = SimpleNamespace(root="data/tiny")
    held = script.ContrastiveTuningArguments(eval_split="", eval_holdout_fraction=0.1)
    with pytest.raises(TrainingRefused, match=r"data/tiny split train .*training questions: 0, selection questions: 1"):
        script.selection_sets(held, obliqa)
    monkeypatch.setattr("rirag.data.splits.split_questions",
                        lambda obliqa, name, seed=0: one if name == "train" else [])
    with pytest.raises(TrainingRefused, match="training questions: 1, selection questions: 0"):
        script.selection_sets(script.ContrastiveTuningArguments(), obliqa)


def test_nli_judge_without_held_out_rows_is_one_line(tmp_path, monkeypatch, caplog):
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    script = load_script("train/nli_judge.py", "nli_judge_launch")
    monkeypatch.setattr(script, "load_rows", lambda args: ([{"premise": "a", "hypothesis": "b"}], [], []))
    args = script.NLIJudgeArguments(data_dir=str(tmp_path / "nli"), model_name_or_path="org/base",
                                    results_path=str(tmp_path / "res.json"))
    targs = CrossEncoderTrainingArguments(output_dir=str(tmp_path / "out"), report_to="none", use_cpu=True)
    caplog.set_level(logging.ERROR)
    _one_line_refusal(caplog, run_trainer(script.main, args, targs), "train: 1, held-out: 0")
    assert not list(tmp_path.iterdir())


# --- the focused scorer ------------------------------------------------------------------------------------------


def test_the_focused_scorer_does_nothing_on_a_rank_other_than_0(tmp_path, monkeypatch, caplog):
    script = load_script("train/focused_scorer.py", "focused_scorer_launch")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    args = script.FocusedScorerArguments(data=str(tmp_path / "absent"), output=str(tmp_path / "scorer.json"),
                                         results=str(tmp_path / "results.json"))
    caplog.set_level(logging.INFO)
    assert run_trainer(script.main, args) == 0
    assert any("rank 1 of 2" in r.getMessage() and "main process (rank 0)" in r.getMessage() for r in caplog.records)
    assert not list(tmp_path.iterdir())  # not even the data was read (it does not exist)
    monkeypatch.setenv("RANK", "0")
    caplog.set_level(logging.ERROR)
    assert run_trainer(script.main, args) == EXIT_USAGE  # rank 0 works: the missing data is one line


def test_the_passage_set_trainer_does_nothing_on_a_rank_other_than_0(tmp_path, monkeypatch, caplog):
    """Under a 2-process launch only rank 0 fits and writes (run_trainer, as the focused scorer): rank 1 reads
    nothing and writes nothing."""
    script = load_script("train/passage_set.py", "passage_set_launch")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    args = script.PassageSetArguments(data=str(tmp_path / "absent"), mp=str(tmp_path / "absent_mp"),
                                      features_cache=str(tmp_path / "features.json"),
                                      output=str(tmp_path / "passage_set.json"), results=str(tmp_path / "r.json"))
    caplog.set_level(logging.INFO)
    assert run_trainer(script.main, args) == 0
    assert any("rank 1 of 2" in r.getMessage() for r in caplog.records)
    assert not list(tmp_path.iterdir())
