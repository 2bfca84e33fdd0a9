"""Answerer kinds are declared once (rirag.generation.registry.ANSWERERS): every caller resolves a --generator name,
its options, its model check, its answerer and whether it composes from the passages through that table."""

from __future__ import annotations

import pytest

from rirag.generation.base import GeneratorSpec
from rirag.generation.extractive import MODAL_CUES
from rirag.generation.registry import (
    ANSWERERS,
    LANGUAGE_MODEL,
    PASSAGE_GENERATORS,
    answerer_kind,
    build_generator,
    generator_kind,
)


def test_each_kind_resolves_to_its_own_entry_and_any_other_name_to_a_language_model():
    assert list(ANSWERERS)[:3] == ["focused", "extractive", "endpoint"]
    for name, kind in ANSWERERS.items():
        assert generator_kind(name) == name and answerer_kind(name) is kind and kind.description
    assert generator_kind("HuggingFaceTB/SmolLM2-135M-Instruct") == LANGUAGE_MODEL


def test_the_passage_generators_are_the_kinds_whose_answerers_need_passages():
    assert PASSAGE_GENERATORS == tuple(n for n, k in ANSWERERS.items() if k.needs_passages)
    assert {"focused", "extractive"} <= set(PASSAGE_GENERATORS) and "endpoint" not in PASSAGE_GENERATORS
    for name in PASSAGE_GENERATORS:  # the table says what the answerer it builds says (nothing loads yet)
        built = build_generator(GeneratorSpec(name, MODAL_CUES, {"device": "cpu"}))
        assert built.needs_passages is True and built.name == name


def test_a_language_model_takes_no_generator_model_and_the_message_names_the_kinds_that_do():
    with pytest.raises(ValueError, match="--generator-model applies to 'focused', 'extractive'"):
        build_generator(GeneratorSpec("artifacts/lm", "m"))
    with pytest.raises(ValueError, match="served model name"):
        build_generator(GeneratorSpec("endpoint"))
