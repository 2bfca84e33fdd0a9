"""Training precision from the hardware: bf16 only where the CPU or GPU computes it natively, else fp32.

A recipe says ``precision: auto`` (the default of every trainer); :func:`resolve_precision` is the one place that
turns it into ``bf16`` or ``fp32``. Why not bf16 everywhere: on a CPU without AVX-512 BF16 or AMX, bf16 autocast is
emulated, and one MiniLM training step (batch 32 x 128 tokens, 2 cores) took 75 s against 4 s in fp32.

Native bf16:

* CUDA: ``torch.cuda.is_bf16_supported(including_emulation=False)`` (Ampere and later).
* CPU: the AVX-512 BF16 or AMX instructions (``torch.cpu._is_avx512_bf16_supported`` /
  ``torch.cpu._is_amx_tile_supported``). ``torch.backends.cpu.get_cpu_capability()`` only names the vector width
  torch dispatches to (in torch 2.13: ``DEFAULT``, ``NO AVX``, ``AVX2``, ``AVX512``, ``VSX``, ``Z VECTOR``,
  ``SVE256``), never BF16 or AMX, so it is recorded beside the decision but does not make it.

An explicit ``bf16`` / ``fp16`` / ``fp32`` (or ``--bf16 true`` / ``--fp16 true`` on the command line) is honoured,
with a warning when the hardware would emulate it.
"""

from __future__ import annotations

import logging
import platform
from typing import Any

logger = logging.getLogger(__name__)

AUTO = "auto"
BF16 = "bf16"
FP16 = "fp16"
FP32 = "fp32"
#: The values a recipe's ``precision`` key takes.
PRECISIONS = (AUTO, BF16, FP16, FP32)
#: The key under which results and cards record the precision trained in (``precision`` is a metric's name).
PRECISION_KEY = "compute_precision"


def cpu_capability() -> str:
    """``torch.backends.cpu.get_cpu_capability()``: the vector instruction set torch dispatches to (e.g. ``AVX2``)."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def _cpu_flag(name: str) -> bool:
    import torch

    probe = getattr(torch.cpu, name, None)
    try:
        return bool(probe()) if probe else False
    except Exception:  # noqa: BLE001 - an unknown CPU or a build without the probe: not native
        return False


def cpu_native_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (AVX-512 BF16 or AMX), not by emulation."""
    return _cpu_flag("_is_avx512_bf16_supported") or _cpu_flag("_is_amx_tile_supported")


def cuda_native_bf16() -> bool:
    """Whether a CUDA GPU is present and computes bf16 natively."""
    import torch

    if not torch.cuda.is_available():
        return False
    try:
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:  # an older torch without the keyword
        return bool(torch.cuda.is_bf16_supported())


def training_device(use_cpu: bool = False) -> str:
    """``cuda`` when a CUDA GPU is present and not refused with ``use_cpu``, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() and not use_cpu else "cpu"


def native_bf16(device: str) -> bool:
    """Whether ``device`` (``cpu`` or ``cuda``) computes bf16 natively."""
    return cuda_native_bf16() if str(device).startswith("cuda") else cpu_native_bf16()


def resolve_precision(requested: str = AUTO, device: str = "cpu") -> str:
    """The precision to train in: ``auto`` is ``bf16`` where ``device`` has native bf16, else ``fp32``; an explicit
    value is returned as is (with a warning when it would be emulated)."""
    requested = str(requested or AUTO).lower()
    if requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {requested!r}")
    if requested == AUTO:
        return BF16 if native_bf16(device) else FP32
    if requested == BF16 and not native_bf16(device):
        logger.warning("precision bf16 asked for on %s without native bf16 (CPU capability %s): it is emulated and "
                       "can be many times slower than fp32", device, cpu_capability())
    if requested == FP16 and not str(device).startswith("cuda"):
        logger.warning("precision fp16 asked for on %s: mixed fp16 is meant for CUDA GPUs", device)
    return requested


def apply_precision(training_args: Any, requested: str = AUTO) -> str:
    """Set ``training_args.bf16`` / ``fp16`` from :func:`resolve_precision` and return the choice.

    ``--bf16 true`` or ``--fp16 true`` on the command line count as an explicit request when ``requested`` is auto;
    an accelerate config's ``mixed_precision`` does not (it is overridden). Call it before the Trainer is built.
    """
    if str(requested or AUTO).lower() == AUTO:
        if getattr(training_args, "bf16", False):
            requested = BF16
        elif getattr(training_args, "fp16", False):
            requested = FP16
    device = training_device(bool(getattr(training_args, "use_cpu", False)))
    chosen = resolve_precision(requested, device)
    training_args.bf16 = chosen == BF16
    training_args.fp16 = chosen == FP16
    if hasattr(training_args, "mixed_precision"):  # what the Trainer's Accelerator reads (set once at __post_init__)
        training_args.mixed_precision = chosen if chosen != FP32 else "no"
    logger.info("precision %s on %s (asked: %s; native bf16: %s; CPU capability: %s)", chosen, device, requested,
                native_bf16(device), cpu_capability())
    return chosen


def hardware_record(precision: str, device: str = "cpu") -> dict[str, Any]:
    """What a results file records about the precision and the machine it was chosen for. The precision's key is
    :data:`PRECISION_KEY`, never ``precision``: a trainer's results hold metrics of that name (the obligation
    classifier's held-out precision), which a config key must not overwrite."""
    return {PRECISION_KEY: precision, "device": device, "cpu_capability": cpu_capability(),
            "cpu_native_bf16": cpu_native_bf16(), "cuda_native_bf16": cuda_native_bf16(),
            "machine": platform.machine()}
