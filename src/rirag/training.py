"""What every trainer in ``train/`` shares: the precision and time-guard arguments, the run-time estimate measured on
the first steps, the one-line refusal (exit 2, :data:`rirag.exit_codes.EXIT_USAGE`), and an artifact folder without
checkpoint folders.

A trainer's script-arguments dataclass inherits :class:`RunArguments`; its ``main`` calls
:func:`rirag.precision.apply_precision`, adds :func:`run_estimate` to its callbacks, calls :func:`check_estimate`
right after ``trainer.train()`` (before saving) and :func:`remove_checkpoints` after the final save; its ``__main__``
ends with ``sys.exit(run_trainer(main, *parsed))``.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rirag.build_models import stage_for
from rirag.exit_codes import EXIT_OK, EXIT_USAGE
from rirag.precision import AUTO, PRECISIONS
from rirag.scoring.models import MissingModelError, missing_model_message

logger = logging.getLogger(__name__)

#: Optimizer steps timed before the estimate is logged (fewer when the run is shorter).
ESTIMATE_STEPS = 5


@dataclass
class RunArguments:
    """Arguments every trainer takes (YAML keys or ``--name value``)."""

    precision: str = field(default=AUTO, metadata={
        "help": f"One of {', '.join(PRECISIONS)}. auto: bf16 where the CPU (AVX-512 BF16 / AMX) or GPU computes it "
                "natively, else fp32 (rirag.precision)."})
    max_train_minutes: float | None = field(default=None, metadata={
        "help": "Time guard: when the first steps say the run would take longer, it stops before saving anything "
                "(exit 2) unless allow_over_time is true."})
    allow_over_time: bool = field(default=False, metadata={
        "help": "Train on even when the estimate exceeds max_train_minutes."})
    estimate_steps: int = field(default=ESTIMATE_STEPS, metadata={
        "help": "Optimizer steps timed for the run-time estimate logged at the start."})


class TrainingRefused(RuntimeError):
    """A run that cannot finish within its time guard, or lacks an input artifact; the message is one line."""


def run_estimate(max_minutes: float | None = None, allow_over: bool = False, measure_steps: int = ESTIMATE_STEPS,
                 what: str = "training", clock: Callable[[], float] = time.monotonic):
    """A ``TrainerCallback`` that times the first ``measure_steps`` optimizer steps and logs how long the whole run
    will take. With ``max_minutes`` it is the run's time guard: it stops the run (``.refusal`` says why) when that
    estimate exceeds the guard, or, should the estimate prove wrong, when training reaches the guard before its last
    step; either way nothing is meant to be saved. ``allow_over`` turns the guard into warnings."""
    from transformers import TrainerCallback

    class RunEstimate(TrainerCallback):
        def __init__(self):
            self.start: float | None = None
            self.minutes: float | None = None  # the estimate, once measured
            self.refusal: str | None = None

        def _refuse(self, control, message: str) -> None:
            if allow_over:
                logger.warning("%s; going on (allow_over_time)", message)
                return
            self.refusal = (f"{message}: stopped before saving anything (check the precision and the machine's load, "
                            "or pass --allow_over_time true)")
            logger.error("%s", self.refusal)
            control.should_training_stop = True

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = clock()
            return control

        def on_step_end(self, args, state, control, **kwargs):
            total = int(state.max_steps or 0)
            if total <= 0 or self.refusal:
                return control
            elapsed = clock() - (self.start if self.start is not None else clock())
            per_step = elapsed / max(1, state.global_step)
            if self.minutes is None and state.global_step >= min(max(1, measure_steps), total):
                self.minutes = per_step * total / 60
                logger.info("%s: the first %d steps took %.1f s (%.2f s/step): about %.1f min for all %d steps "
                            "(training only)", what, state.global_step, elapsed, per_step, self.minutes, total)
                if max_minutes and self.minutes > max_minutes:
                    self._refuse(control, f"{what}: {total} steps at {per_step:.2f} s/step (the first "
                                          f"{state.global_step}) would take about {self.minutes:.0f} min, over the "
                                          f"{max_minutes:g}-minute guard (max_train_minutes)")
                    return control
            if (max_minutes and not allow_over and state.global_step < total and elapsed > max_minutes * 60):
                self._refuse(control, f"{what}: the {max_minutes:g}-minute guard (max_train_minutes) was reached at "
                                      f"step {state.global_step} of {total}")
            return control

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


def run_trainer(main: Callable[..., Any], *args: Any) -> int:
    """Run a trainer's ``main``; a refusal or a missing input artifact is one logged line (the last) and exit
    status 2, never a traceback."""
    try:
        main(*args)
    except (TrainingRefused, MissingModelError) as err:
        logger.error("%s", " ".join(str(err).split()))
        return EXIT_USAGE  # the same status as every expected failure of the rirag command
    return EXIT_OK


def require_artifacts(*names: str | None) -> None:
    """Before any heavy work: each name that is one of our artifacts (:data:`rirag.build_models.STAGES`) must hold a
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
