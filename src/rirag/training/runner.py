"""What every trainer in ``train/`` shares: the precision and time-guard arguments, the run-time estimate measured on
the first steps, the one-line refusal (exit 2, :data:`rirag.exit_codes.EXIT_USAGE`), and an artifact folder without
checkpoint folders.

A trainer's script-arguments dataclass inherits :class:`RunArguments`; its ``main`` calls
:func:`rirag.training.precision.apply_precision`, adds :func:`run_estimate` to its callbacks, calls
:func:`check_estimate`
right after ``trainer.train()`` (before saving) and :func:`remove_checkpoints` after the final save; its ``__main__``
ends with ``sys.exit(run_trainer(main, *parsed))``.

Several processes (``accelerate launch``, torchrun): :func:`run_trainer` first checks that the launcher really
started the processes it was asked for (:func:`check_processes`); only rank 0 writes (the trainers save through
``trainer.save_model`` on every rank, which writes once, then write cards and results on rank 0 and meet at
:func:`wait_for_everyone`); :func:`batch_facts` is what cards and results record about the batch. A script that is no
torch trainer (the focused scorer) writes from :func:`is_main_process` only.

Sharded models: ``trainer.save_model`` gathers the full state dict under FSDP (``FULL_STATE_DICT``) and DeepSpeed
ZeRO-3 and hands it to ``_save``; transformers' ``_save`` (the obligation classifier; RAFT's PEFT adapter) saves it,
sentence-transformers' does not, and entailment tuning saves rank 0's own copy: the entailment tuning, contrastive
tuning, reranker and NLI judge trainers refuse both launches in one line (:func:`no_sharded_model`).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rirag.errors import DataError
from rirag.exit_codes import EXIT_OK, EXIT_USAGE
from rirag.models import CPU_MULTIPROCESS_CONFIG, stage_for
from rirag.scoring.models import MissingModelError, missing_model_message
from rirag.training.precision import AUTO, PRECISIONS

logger = logging.getLogger(__name__)

#: Optimizer steps timed before the estimate is logged (fewer when the run is shorter).
ESTIMATE_STEPS = 5
#: The first steps are a warm-up, slower than the rest: the longest batch comes first under ``group_by_length``
#: (transformers' length-grouped sampler puts it there), and every new sequence length builds its bf16 kernels once.
#: On 2 AVX-512 cores the NLI judge's first 5 steps took 1.62 s each and the next 300 about 0.4 s. So the first steps
#: refuse a run only when they say it would take over this many times its guard (emulated bf16 is ~20x slower);
#: otherwise the guard decides on the steady rate measured after them (:data:`STEADY_SHARE`).
FIRST_STEPS_SLACK = 4.0
#: The steady rate is measured from the end of the warm-up to this share of the run's steps (at least three times
#: the warm-up's steps, never past the last).
STEADY_SHARE = 0.02


@dataclass
class RunArguments:
    """Arguments every trainer takes (YAML keys or ``--name value``)."""

    precision: str = field(default=AUTO, metadata={
        "help": f"One of {', '.join(PRECISIONS)}. auto: bf16 where the CPU (AVX-512 BF16 / AMX) or GPU computes it "
                "natively, else fp32 (rirag.training.precision)."})
    max_train_minutes: float | None = field(default=None, metadata={
        "help": "Time guard: when the first steps say the run would take longer, it stops before saving anything "
                "(exit 2) unless allow_over_time is true."})
    allow_over_time: bool = field(default=False, metadata={
        "help": "Train on even when the estimate exceeds max_train_minutes."})
    estimate_steps: int = field(default=ESTIMATE_STEPS, metadata={
        "help": "Optimizer steps timed for the run-time estimate logged at the start."})


class TrainingRefused(RuntimeError):
    """A run that cannot finish within its time guard, or lacks an input artifact; the message is one line."""


class _Estimate:
    """The state and decisions of :func:`run_estimate`'s callback (a plain class: transformers loads only when a
    callback is built)."""

    def __init__(self, max_minutes: float | None, allow_over: bool, measure_steps: int, what: str,
                 clock: Callable[[], float]):
        self.max_minutes, self.allow_over, self.measure_steps, self.what, self.clock = (
            max_minutes, allow_over, measure_steps, what, clock)
        self.start: float | None = None
        self.minutes: float | None = None  # the estimate, once measured (the steady one once that is)
        self.first_minutes: float | None = None  # the first steps' estimate
        self.refusal: str | None = None
        self._warm: tuple[int, float] | None = None  # (step, elapsed) at the end of the warm-up
        self._steady_at: int | None = None

    def _refuse(self, control, message: str) -> None:
        if self.allow_over:
            logger.warning("%s; going on (allow_over_time)", message)
            return
        self.refusal = (f"{message}: stopped before saving anything (check the precision and the machine's load, "
                        "or pass --allow_over_time true)")
        logger.error("%s", self.refusal)
        control.should_training_stop = True

    def _over(self, control, total: int, per_step: float, steps: str, slack: bool = False) -> None:
        self._refuse(control, f"{self.what}: {total} steps at {per_step:.2f} s/step ({steps}) would take about "
                              f"{self.minutes:.0f} min, over the {self.max_minutes:g}-minute guard "
                              f"(max_train_minutes{f' x {FIRST_STEPS_SLACK:g}' if slack else ''})")

    def _first_steps(self, control, step: int, total: int, elapsed: float) -> bool:
        """The first steps' estimate; True when it stopped the run."""
        per_step = elapsed / max(1, step)
        self.minutes = self.first_minutes = per_step * total / 60
        logger.info("%s: the first %d steps took %.1f s (%.2f s/step): about %.1f min for all %d steps "
                    "(training only)", self.what, step, elapsed, per_step, self.minutes, total)
        self._warm = (step, elapsed)
        # None when the run is over: nothing steady to measure
        self._steady_at = min(total, max(3 * step, int(STEADY_SHARE * total))) if total > step else None
        if not (self.max_minutes and self.minutes > self.max_minutes):
            return False
        slack = self.minutes > FIRST_STEPS_SLACK * self.max_minutes
        if slack or self._steady_at is None:
            self._over(control, total, per_step, f"the first {step}", slack)
            return True
        logger.info("%s: over the %g-minute guard by the first steps (a warm-up); it decides at step %d, on the "
                    "steady rate", self.what, self.max_minutes, self._steady_at)
        return False

    def _steady_steps(self, control, step: int, total: int, elapsed: float) -> bool:
        """The steady estimate; True when it stopped the run."""
        warm_step, warm_elapsed = self._warm
        per_step = (elapsed - warm_elapsed) / max(1, step - warm_step)
        self.minutes = (elapsed + per_step * (total - step)) / 60
        self._steady_at = None
        logger.info("%s: steps %d-%d took %.2f s/step: about %.1f min for all %d steps (training only)",
                    self.what, warm_step + 1, step, per_step, self.minutes, total)
        if self.max_minutes and self.minutes > self.max_minutes:
            self._over(control, total, per_step, f"steps {warm_step + 1}-{step}")
            return True
        return False

    def step_end(self, state, control):
        total = int(state.max_steps or 0)
        if total <= 0 or self.refusal:
            return control
        step = state.global_step
        elapsed = self.clock() - (self.start if self.start is not None else self.clock())
        if self.first_minutes is None and step >= min(max(1, self.measure_steps), total):
            if self._first_steps(control, step, total, elapsed):
                return control
        elif self._steady_at is not None and step >= self._steady_at:
            if self._steady_steps(control, step, total, elapsed):
                return control
        if self.max_minutes and not self.allow_over and step < total and elapsed > self.max_minutes * 60:
            self._refuse(control, f"{self.what}: the {self.max_minutes:g}-minute guard (max_train_minutes) was "
                                  f"reached at step {step} of {total}")
        return control


def run_estimate(max_minutes: float | None = None, allow_over: bool = False, measure_steps: int = ESTIMATE_STEPS,
                 what: str = "training", clock: Callable[[], float] = time.monotonic):
    """A ``TrainerCallback`` that times the first ``measure_steps`` optimizer steps and logs how long the whole run
    will take, then times the steady steps after that warm-up (up to :data:`STEADY_SHARE` of the run) and logs the
    estimate again. With ``max_minutes`` it is the run's time guard: it stops the run (``.refusal`` says why) when
    the first steps' estimate exceeds :data:`FIRST_STEPS_SLACK` times the guard, when the steady estimate exceeds the
    guard, or, should the estimate prove wrong, when training reaches the guard before its last step; either way
    nothing is meant to be saved. ``allow_over`` turns the guard into warnings."""
    from transformers import TrainerCallback

    class RunEstimate(_Estimate, TrainerCallback):
        def __init__(self):
            _Estimate.__init__(self, max_minutes, allow_over, measure_steps, what, clock)

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = self.clock()
            return control

        def on_step_end(self, args, state, control, **kwargs):
            return self.step_end(state, control)

    return RunEstimate()


def estimate_callback(script_args: Any, what: str):
    """:func:`run_estimate` configured from a trainer's :class:`RunArguments`."""
    return run_estimate(getattr(script_args, "max_train_minutes", None), getattr(script_args, "allow_over_time", False),
                        getattr(script_args, "estimate_steps", ESTIMATE_STEPS), what)


def check_estimate(callback: Any) -> None:
    """Raise :class:`TrainingRefused` when the estimate stopped the run (call it before saving)."""
    if callback is not None and getattr(callback, "refusal", None):
        raise TrainingRefused(callback.refusal)


def remove_checkpoints(output_dir: str | Path) -> list[str]:
    """Delete the ``checkpoint-*`` folders the trainer left in ``output_dir`` (optimizer state included); the final
    model saved there stays. Returns the removed names."""
    folder = Path(output_dir)
    removed = []
    for path in sorted(folder.glob("checkpoint-*")) if folder.is_dir() else []:
        if path.is_dir():
            shutil.rmtree(path)
            removed.append(path.name)
    if removed:
        logger.info("removed %s from %s (only the trained artifact stays)", ", ".join(removed), folder)
    return removed


#: What :func:`requested_processes` reports when the launcher was asked for several processes without saying how many.
SEVERAL_PROCESSES = 2


def requested_processes(environ: dict | None = None) -> int | None:
    """How many processes the launcher was asked for, from its environment: torchrun's ``WORLD_SIZE``, or at least 2
    when accelerate's simple launcher was asked for several (it sets ``MASTER_ADDR`` and ``ACCELERATE_USE_CPU`` then,
    but starts one process: ``accelerate launch --cpu --num_processes N``, a ``MULTI_CPU`` config). None: one."""
    env = os.environ if environ is None else environ
    if env.get("WORLD_SIZE"):
        return int(env["WORLD_SIZE"])
    if env.get("MASTER_ADDR") and "ACCELERATE_USE_CPU" in env and "RANK" not in env:
        return SEVERAL_PROCESSES
    return None


def check_processes(training_args: Any, environ: dict | None = None) -> int:
    """The run's process count; :class:`TrainingRefused` (one line naming the config that works) when the launcher
    was asked for more processes than the trainer got (call it before anything is written)."""
    env = os.environ if environ is None else environ
    requested = requested_processes(env)
    got = int(getattr(training_args, "world_size", 1) or 1)
    if requested and requested > got:
        asked = f"{requested} processes" if env.get("WORLD_SIZE") else "several processes"
        raise TrainingRefused(
            f"the launcher was asked for {asked} but this trainer runs in {got} (`accelerate launch --cpu "
            "--num_processes N` and MULTI_CPU configs start one; a GPU config without GPUs needs use_cpu: true): "
            f"on CPUs run `accelerate launch --config_file {CPU_MULTIPROCESS_CONFIG} --num_processes N ...` with "
            "use_cpu: true in the recipe; nothing was written")
    return got


def single_process_only(what: str, environ: dict | None = None) -> None:
    """For a trainer that runs in one process (no torch data parallelism): refuse a multi-process launch, whose
    copies would each write the same outputs."""
    requested = requested_processes(environ)
    if requested and requested > 1:
        raise TrainingRefused(f"{what} trains in one process; launch it with python (or accelerate's "
                              "recipes/accelerate/cpu.yaml), not with several processes; nothing was written")


def uses_fsdp(training_args: Any, environ: dict | None = None) -> bool:
    """Whether the run shards the model with FSDP (the trainer's ``fsdp`` argument, or an accelerate FSDP config)."""
    env = os.environ if environ is None else environ
    return bool(getattr(training_args, "fsdp", None)) or env.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true")


def _deepspeed_config(config: Any) -> dict:
    """A DeepSpeed config given as a dict or as the path of its JSON file ({} when absent or unreadable)."""
    if isinstance(config, (str, os.PathLike)) and str(config).strip():
        import json

        try:
            with open(config, encoding="utf-8") as f:
                config = json.load(f)
        except (OSError, ValueError):
            return {}
    return config if isinstance(config, dict) else {}


def _zero_stage(config: Any) -> int | None:
    """``zero_optimization.stage`` of a DeepSpeed config (:func:`_deepspeed_config`); None: not said."""
    stage = _deepspeed_config(config).get("zero_optimization", {}).get("stage")
    return int(stage) if str(stage).isdigit() else None


def uses_zero3(training_args: Any, environ: dict | None = None) -> bool:
    """Whether the run partitions the parameters with DeepSpeed ZeRO stage 3: the trainer's ``deepspeed`` config,
    or an accelerate DeepSpeed config (``zero_stage: 3``, or its ``deepspeed_config_file``)."""
    env = os.environ if environ is None else environ
    if _zero_stage(getattr(training_args, "deepspeed", None)) == 3:
        return True
    if env.get("ACCELERATE_USE_DEEPSPEED", "").lower() not in ("1", "true"):
        return False
    return env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE") == "3" or _zero_stage(
        env.get("ACCELERATE_DEEPSPEED_CONFIG_FILE")) == 3


def sharding(training_args: Any, environ: dict | None = None) -> str | None:
    """How the run shards the model over its ranks: ``FSDP``, ``DeepSpeed ZeRO-3``, or None (whole on each)."""
    if uses_fsdp(training_args, environ):
        return "FSDP"
    if uses_zero3(training_args, environ):
        return "DeepSpeed ZeRO-3"
    return None


def no_sharded_model(training_args: Any, what: str, why: str = "saves its model from rank 0's whole copy",
                     environ: dict | None = None) -> None:
    """For a trainer that needs a whole model on rank 0 (as DDP has it): refuse an FSDP or a DeepSpeed ZeRO-3 run
    before any work, in one line; there rank 0 holds a shard only, and what it saved would be that shard."""
    how = sharding(training_args, environ)
    if how:
        raise TrainingRefused(f"{what} {why} and cannot gather a {how}-sharded one: launch it with "
                              "recipes/accelerate/ddp.yaml (data parallel) instead; nothing was written")


def _zero3_gathers(training_args: Any, env: dict) -> bool:
    """Whether a ZeRO-3 run gathers the 16-bit weights when the model is saved (else ``save_model`` writes a DeepSpeed
    checkpoint and no model weights)."""
    if env.get("ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "").lower() in ("1", "true"):
        return True
    return any(_deepspeed_config(config).get("zero_optimization", {}).get("stage3_gather_16bit_weights_on_model_save")
               in (True, "true")
               for config in (getattr(training_args, "deepspeed", None), env.get("ACCELERATE_DEEPSPEED_CONFIG_FILE")))


def require_full_state_dict(training_args: Any, what: str, environ: dict | None = None) -> None:
    """For a trainer that saves through transformers' ``save_model`` (the obligation classifier, RAFT): under FSDP
    the state dict must be gathered whole (``FULL_STATE_DICT``; with a sharded one ``save_model`` writes no model),
    under ZeRO-3 the 16-bit weights must be gathered on save (else a DeepSpeed checkpoint and no weights):
    :class:`TrainingRefused`, one line naming the setting, before any work."""
    env = os.environ if environ is None else environ
    if uses_fsdp(training_args, env):
        if getattr(training_args, "fsdp", None):  # the trainer's own FSDP arguments (transformers' default: full)
            kind = (getattr(training_args, "fsdp_config", None) or {}).get("state_dict_type", "FULL_STATE_DICT")
        else:  # an accelerate config: accelerate's default is full for FSDP 1, sharded for FSDP 2
            kind = env.get("FSDP_STATE_DICT_TYPE") or (
                "FULL_STATE_DICT" if env.get("FSDP_VERSION", "1") == "1" else "SHARDED_STATE_DICT")
        if "FULL_STATE_DICT" not in str(kind).upper():
            raise TrainingRefused(f"{what} under FSDP needs fsdp_state_dict_type: FULL_STATE_DICT (as "
                                  f"recipes/accelerate/fsdp.yaml says), not {kind}: a sharded state dict saves no "
                                  "model; nothing was written")
    elif uses_zero3(training_args, env) and not _zero3_gathers(training_args, env):
        raise TrainingRefused(f"{what} under DeepSpeed ZeRO-3 needs zero3_save_16bit_model: true (or "
                              "stage3_gather_16bit_weights_on_model_save in the DeepSpeed config): else no model "
                              "weights are saved; nothing was written")


def batch_facts(training_args: Any, steps: int, examples: int | None = None) -> dict[str, int]:
    """What a card and a results file record about the batch: the process count, the per-device and the global
    batch (per-device x gradient accumulation x processes), and the examples seen over all ranks (steps x global
    batch; capped at the data x epochs for a run that was not cut by ``max_steps``)."""
    world = int(getattr(training_args, "world_size", 1) or 1)
    per_device = int(training_args.per_device_train_batch_size)
    global_batch = per_device * int(training_args.gradient_accumulation_steps) * world
    seen = steps * global_batch
    if examples is not None and int(getattr(training_args, "max_steps", -1) or -1) <= 0:
        seen = min(seen, examples * max(1, int(-(-float(training_args.num_train_epochs) // 1))))
    return {"world_size": world, "per_device_batch": per_device, "global_batch": global_batch, "examples_seen": seen}


def find_no_unused_parameters(training_args: Any) -> None:
    """For a sentence-transformers ``CrossEncoder`` (judge, reranker), whose every trainable parameter takes part in
    each forward pass: tell DDP not to search for unused ones unless the arguments say otherwise. The Trainer asks for
    the search on any model that is not a ``PreTrainedModel``, and under DDP that search fails at the first backward
    ("Expected to mark a variable ready only once", on the classifier bias)."""
    if getattr(training_args, "ddp_find_unused_parameters", False) is None:
        training_args.ddp_find_unused_parameters = False


def single_writer(trainer_class: type) -> type:
    """``trainer_class`` whose ``_save`` writes on the saving rank only (``args.should_save``). sentence-transformers'
    trainers write the model, its README.md and every checkpoint from every rank (their ``_save`` assumes process
    zero; transformers 5 calls it on all ranks), so rank 1 could overwrite the card rank 0 had written.

    sentence-transformers' ``_save`` ignores the ``state_dict`` argument (it calls the model's ``save_pretrained``),
    so the full state dict that ``save_model`` gathers under FSDP or ZeRO-3 would be dropped and rank 0's shard
    saved: the trainers built on it refuse those launches first (:func:`no_sharded_model`)."""

    class SingleWriter(trainer_class):
        def _save(self, output_dir=None, state_dict=None):
            if self.args.should_save:
                super()._save(output_dir, state_dict=state_dict)

    SingleWriter.__name__ = SingleWriter.__qualname__ = trainer_class.__name__
    return SingleWriter


def is_main_process(environ: dict | None = None) -> bool:
    """Whether this is the job's main process (global rank 0) by the launcher's environment: torchrun and
    ``accelerate launch`` set ``RANK``; a plain ``python`` run is the main process. Needs no process group, so a
    script that is no torch trainer can use it."""
    env = os.environ if environ is None else environ
    return int(env.get("RANK") or 0) == 0


def launched_processes(environ: dict | None = None) -> int:
    """How many processes the launcher started (``WORLD_SIZE``; 1 without a launcher)."""
    env = os.environ if environ is None else environ
    return int(env.get("WORLD_SIZE") or 1)


def check_parts(what: str, source: str, parts: dict[str, int], minimum: int = 1, hint: str = "") -> None:
    """Too little data: each part (e.g. ``train`` and ``held-out``) needs at least ``minimum`` rows, else
    :class:`TrainingRefused`, one line naming the data and every part's count (before any training)."""
    short = {name: n for name, n in parts.items() if n < minimum}
    if short:
        counts = ", ".join(f"{name}: {n}" for name, n in parts.items())
        raise TrainingRefused(f"{what}: {source}: too little data ({counts}; each part needs at least {minimum})"
                              f"{'; ' + hint if hint else ''}; nothing was written")


def wait_for_everyone(training_args: Any = None) -> None:
    """A barrier for a multi-process run (the other ranks wait while rank 0 writes); a no-op in one process."""
    if int(getattr(training_args, "world_size", 1) or 1) > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def run_trainer(main: Callable[..., Any], *args: Any) -> int:
    """Run a trainer's ``main``; a refusal, too little data, bad input data (:class:`~rirag.errors.DataError`) or a
    missing input artifact is one logged line (the last) and exit status 2, never a traceback. Under ``accelerate
    launch`` the shell sees accelerate's own status instead: 1 for any failed child, whatever its status (its
    traceback ends ``returned non-zero exit status 2``; ``--quiet`` leaves the traceback out). Before ``main``: the
    process check (:func:`check_processes`) on the training arguments among ``args``."""
    try:
        for arg in args:
            if hasattr(arg, "per_device_train_batch_size") and hasattr(arg, "world_size"):
                check_processes(arg)
        main(*args)
    except (TrainingRefused, MissingModelError, DataError) as err:
        logger.error("%s", " ".join(str(err).split()))
        return EXIT_USAGE  # the same status as every expected failure of the rirag command
    return EXIT_OK


def require_artifacts(*names: str | None) -> None:
    """Before any heavy work: each name that is one of our artifacts (:data:`rirag.models.STAGES`) must hold a
    trained model, and any other local path must exist; else :class:`~rirag.scoring.models.MissingModelError`, one
    line naming it, ``make models`` and its trainer command. Hub ids and wheel names pass."""
    for name in names:
        if not name:
            continue
        stage = stage_for(name)
        if stage is not None:
            if not (Path(name) / stage.marker).is_file():
                raise MissingModelError(missing_model_message(name))
        elif name.startswith(("artifacts/", "./", "../", "/", "~")) and not Path(name).expanduser().exists():
            raise MissingModelError(missing_model_message(name))
