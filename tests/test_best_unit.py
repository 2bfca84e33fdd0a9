"""The best-unit answerer quotes the single highest-scoring unit across the passages, cited, and nothing else."""

from __future__ import annotations

from _scoring_fixtures import bag_of_words
from rirag.generation.base import AnswerRequest, GeneratorSpec
from rirag.generation.best_unit import BestUnitAnswerer
from rirag.generation.focused.answerer import FocusedAnswerer
from rirag.generation.registry import PASSAGE_GENERATORS, build_generator
from rirag.generation.render import render

QUESTION = "When must a fund manager notify the Regulator of a breach of its capital requirements?"
PASSAGES = [
    "A fund manager must keep records of its investors for six years. The records must be kept in English.",
    "A fund manager must notify the Regulator of a breach of its capital requirements within one business day. "
    "The notice must be in writing.",
    "The Regulator may publish guidance on the capital requirements of fund managers.",
]


def no_obligations(texts):
    return [False] * len(texts)


def answerer() -> BestUnitAnswerer:
    return BestUnitAnswerer(encode=bag_of_words, is_obligation=no_obligations)


def test_it_quotes_the_one_best_unit_of_all_the_passages_cited():
    request = AnswerRequest(QUESTION, PASSAGES, [0.9, 0.8, 0.7])
    (draft,) = answerer().draft([request])
    assert len(draft.parts) == 1
    part = draft.parts[0]
    # the unit of the second passage, though the first was retrieved first
    assert part.text == ("A fund manager must notify the Regulator of a breach of its capital requirements within "
                         "one business day.") and part.cited == (1,)
    assert render(draft) == f"{part.text[:-1]} [2]."
    # it is the focused answerer's best-scoring unit (the same scoring), the one unit kept
    scored = FocusedAnswerer(encode=bag_of_words, is_obligation=no_obligations).score_units(
        QUESTION, PASSAGES, [0.9, 0.8, 0.7])
    best = max(scored, key=lambda s: s.score)
    assert (best.unit.passage, best.unit.text) == (1, part.text) and len(scored) > 3


def test_passages_without_units_give_no_answer_and_the_registry_builds_it_by_name():
    (draft,) = answerer().draft([AnswerRequest(QUESTION, ["Capital requirements"])])
    assert draft.parts == [] and not draft.addressed
    built = build_generator(GeneratorSpec("best-unit", None, {"device": "cpu"}))
    assert isinstance(built, BestUnitAnswerer) and "best-unit" in PASSAGE_GENERATORS
