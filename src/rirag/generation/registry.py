"""The registry that builds generators by name (the table is in :mod:`rirag.generation.base`).

Each backend imports :mod:`rirag.generation.base` for the interface and its defaults; this module, above them,
picks the backend, so the base never imports its implementations.
"""

from __future__ import annotations

from rirag.generation.base import (
    DEFAULT_OBLIGATION_CLASSIFIER,
    ENDPOINT,
    EXTRACTIVE,
    FOCUSED,
    Answerer,
    GeneratorSpec,
)
from rirag.generation.endpoint import EndpointGenerator
from rirag.generation.extractive import ExtractiveComposer
from rirag.generation.hf import TransformersGenerator

__all__ = ["GeneratorSpec", "build_generator"]


def build_generator(spec: GeneratorSpec) -> Answerer:
    """Build (lazily loading) the generator ``spec`` names."""
    if spec.name == FOCUSED:
        # lazy: rirag.generation.focused imports numpy at its top; the registry (and `rirag --help`) stay light
        from rirag.generation.focused import FocusedAnswerer

        return FocusedAnswerer(spec.model, **spec.options)
    if spec.name == EXTRACTIVE:
        return ExtractiveComposer(spec.model or DEFAULT_OBLIGATION_CLASSIFIER, **spec.options)
    if spec.name == ENDPOINT:
        if not spec.model:
            raise ValueError("generator 'endpoint' needs the served model name (--generator-model NAME)")
        return EndpointGenerator(spec.model, **spec.options)
    if spec.model:
        raise ValueError(f"generator {spec.name!r} is a model name itself; --generator-model applies to "
                         f"'{FOCUSED}', '{EXTRACTIVE}' and '{ENDPOINT}' only")
    return TransformersGenerator(spec.name, **spec.options)
