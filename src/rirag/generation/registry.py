"""The registry: the one place a ``--generator`` name is resolved to its kind (:func:`generator_kind`), which options
that kind takes (:func:`generator_spec`), which model it needs at hand (:func:`check_generator_model`) and how it is
built (:func:`build_generator`). The table of names is in :mod:`rirag.generation.base`.

Each backend imports :mod:`rirag.generation.base` for the interface and its defaults; this module, above them,
picks the backend, so the base never imports its implementations.
"""

from __future__ import annotations

from typing import Any

from rirag import models
from rirag.generation.base import (
    DEFAULT_OBLIGATION_CLASSIFIER,
    ENDPOINT,
    EXTRACTIVE,
    FOCUSED,
    OFFLINE_GENERATOR,
    Answerer,
    GeneratorSpec,
)
from rirag.generation.endpoint import EndpointGenerator
from rirag.generation.extractive import MODAL_CUES, ExtractiveComposer
from rirag.generation.focused.config import switches_on
from rirag.generation.hf import TransformersGenerator, resolve_generator

__all__ = ["GeneratorSpec", "build_generator", "check_generator_model", "generator_kind", "generator_spec"]

#: The kind of every generator name that is not a registered backend: a causal LM (Hub id, folder, ``.gguf`` file).
LANGUAGE_MODEL = "language-model"

#: The generator options (``--generator`` options, as attributes of the parsed arguments) each kind is built with.
GENERATOR_OPTIONS: dict[str, tuple[str, ...]] = {
    FOCUSED: ("device",),
    EXTRACTIVE: ("device",),
    ENDPOINT: ("base_url", "api_key_env", "concurrency", "max_retries", "max_new_tokens"),
    LANGUAGE_MODEL: ("adapter", "load_in_4bit", "device", "max_new_tokens", "batch_size"),
}


def generator_kind(name: str) -> str:
    """``focused``, ``extractive``, ``endpoint``, or :data:`LANGUAGE_MODEL` for any other name."""
    return name if name in (FOCUSED, EXTRACTIVE, ENDPOINT) else LANGUAGE_MODEL


def generator_spec(name: str, model: str | None, options: Any) -> GeneratorSpec:
    """The spec of generator ``name`` (``model``: its ``--generator-model``), with the options its kind takes
    (:data:`GENERATOR_OPTIONS`) read from ``options``, an object holding every generator option as an attribute (the
    parsed arguments)."""
    kind = generator_kind(name)
    spec = GeneratorSpec(name, model, {k: getattr(options, k) for k in GENERATOR_OPTIONS[kind]})
    if kind == FOCUSED:  # its switches only when on: specs from before a switch stay equal
        spec.options.update(switches_on(options))
    return spec


def check_generator_model(spec: GeneratorSpec) -> None:
    """The model the generator needs is at hand (nothing loads): the obligation classifier folder of ``extractive``
    (and of ``focused`` when named), a causal LM's wheel, file, folder or cached Hub id; an endpoint needs none.
    A missing model is a :class:`~rirag.errors.UsageError` naming the option; a causal LM that cannot be resolved
    raises :func:`~rirag.generation.hf.resolve_generator`'s ``ImportError`` / ``FileNotFoundError``."""
    kind, model = generator_kind(spec.name), spec.model
    if kind == EXTRACTIVE:
        model = model or DEFAULT_OBLIGATION_CLASSIFIER
        if model != MODAL_CUES:
            models.model_available(model, "--generator-model")
    elif kind == FOCUSED:
        if model and model != MODAL_CUES:
            models.model_available(model, "--generator-model")
    elif kind == LANGUAGE_MODEL:
        _, gguf = resolve_generator(spec.name)
        if not gguf and spec.name != OFFLINE_GENERATOR:
            models.model_available(spec.name, "--generator")


def build_generator(spec: GeneratorSpec) -> Answerer:
    """Build (lazily loading) the generator ``spec`` names."""
    kind = generator_kind(spec.name)
    if kind == FOCUSED:
        # lazy: rirag.generation.focused imports numpy at its top; the registry (and `rirag --help`) stay light
        from rirag.generation.focused.answerer import FocusedAnswerer

        return FocusedAnswerer(spec.model, **spec.options)
    if kind == EXTRACTIVE:
        return ExtractiveComposer(spec.model or DEFAULT_OBLIGATION_CLASSIFIER, **spec.options)
    if kind == ENDPOINT:
        if not spec.model:
            raise ValueError("generator 'endpoint' needs the served model name (--generator-model NAME)")
        return EndpointGenerator(spec.model, **spec.options)
    if spec.model:
        raise ValueError(f"generator {spec.name!r} is a model name itself; --generator-model applies to "
                         f"'{FOCUSED}', '{EXTRACTIVE}' and '{ENDPOINT}' only")
    return TransformersGenerator(spec.name, **spec.options)
