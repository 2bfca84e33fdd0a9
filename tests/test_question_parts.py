"""A question's parts from its wording, and the pass that quotes the rule answering a part no cited rule answers."""

from __future__ import annotations

import numpy as np

from rirag.generation.focused.answer import FocusedAnswer
from rirag.generation.focused.parts import answer_parts
from rirag.generation.focused.scorer import ScoredUnit
from rirag.text.question_parts import question_parts
from rirag.text.units import split_units


def test_a_question_breaks_before_and_with_a_question_word_or_a_later_enumeration_mark():
    assert question_parts("When must the deferred amount be paid, and what is the maximum duration of a deferral?") \
        == ["When must the deferred amount be paid", "what is the maximum duration of a deferral?"]
    assert question_parts("How must it decide (i) whether the transaction is mapped once, and (ii) which risk "
                          "driver basis is used?") == ["How must it decide (i) whether the transaction is mapped once",
                                                       "(ii) which risk driver basis is used?"]
    # an auxiliary opens a part only after ", and"; "and has" inside a clause, or a short piece, does not
    assert question_parts("Does it still apply, and does the exemption cover groups?") == \
        ["Does it still apply", "does the exemption cover groups?"]
    assert len(question_parts("A transaction that is mapped to a category and has more than one driver?")) == 1
    assert len(question_parts("Who and what must report to the PRA within the period?")) == 1
    # "(2)" is a list mark only after a "(1)" of its own: "sections 20(1), (2) or (3)" is one part
    assert len(question_parts("If a Fund appoints under sections 20(1), (2) or (3), which Rule applies?")) == 1


def _answer(question, passages, kept_passages):
    scored = [ScoredUnit(u, 0.9 - 0.1 * u.passage) for i, p in enumerate(passages) for u in split_units(p, i)]
    kept = [s for s in scored if s.unit.passage in kept_passages]
    return FocusedAnswer(question, kept, scored, 0.9, True)


def _encode(texts):
    """Bag of words over a tiny vocabulary, unit length: close texts share words."""
    vocab = ["deferred", "paid", "duration", "deferral", "renewed", "levy", "months"]
    v = np.array([[float(w in t.lower()) for w in vocab] + [0.01] for t in texts])
    return v / np.linalg.norm(v, axis=1, keepdims=True)


QUESTION = "When must the deferred levy be paid, and what is the maximum duration of a deferral?"
PAID = "Any levy deferred shall be paid when payment no longer jeopardises liquidity."
DURATION = "A deferral may last at most six months and may be renewed."
OTHER = "The FSCS may adjust the calculation of a levy."


def test_a_part_no_cited_rule_answers_gets_the_rule_closest_to_it_and_the_answer_follows_the_question():
    answer = _answer(QUESTION, [PAID, OTHER, DURATION], {0})
    out = answer_parts(answer, _encode, margin=0.05)
    assert [s.unit.passage for s in out.kept] == [0, 2]
    # both parts answered already, a margin no unit clears, a one-part question, or no room: unchanged
    both = _answer(QUESTION, [PAID, OTHER, DURATION], {0, 2})
    assert answer_parts(both, _encode, margin=0.05) is both
    assert answer_parts(answer, _encode, margin=2.0) is answer
    single = _answer("When must the deferred levy be paid?", [PAID, OTHER, DURATION], {0})
    assert answer_parts(single, _encode, margin=0.05) is single
    assert answer_parts(answer, _encode, margin=0.05, max_added=0) is answer


def test_the_answerer_embeds_a_text_once_and_gives_the_same_vector_again():
    from rirag.generation.focused.answerer import FocusedAnswerer

    calls = []

    class Model:
        def encode(self, texts, **_):
            calls.append(list(texts))
            return _encode(texts)

    answerer = FocusedAnswerer(encode=None)
    answerer._encode = Model().encode  # as the lazily loaded encoder would be, one text at a time
    first = answerer.encode([PAID, DURATION, PAID])
    again = answerer.encode([DURATION, OTHER])
    assert calls == [[PAID, DURATION], [OTHER]]  # each text embedded once
    assert np.array_equal(first[1], again[0]) and np.array_equal(first[0], first[2])
