"""Near-duplicate units (``rirag.generation.focused.selection.near_duplicates``): the same rule in two passages is
cited together under one quotation; two rules whose sentences differ in a name, a subject or a number are not.

The pairs are the ones the default answer joined on the shared sets before the words were compared (hand-read PRA
question 14: "Links to EIOPA Guidelines ... are available below [1][3][4]" cited the EBA and ESMA passages)."""

from __future__ import annotations

import pytest

from _scoring_fixtures import bag_of_words
from rirag.generation.focused import FocusedAnswerer, FocusedConfig
from rirag.generation.focused.selection import differing_terms, near_duplicates

LINKS = ("Links to {} Guidelines and Recommendations in place as at the end of the transition period are available "
         "below.")
RISK = "An Insurer must develop, implement and maintain a risk management system to identify and control {} risk."
NOTIFY = ("Where {} includes in its annual Regulatory Return a value which is inconsistent with the amount referred to "
          "in Rule 7.2.4(b), it must notify the Regulator in writing.")


@pytest.mark.parametrize("a, b, differ", [
    (LINKS.format("EIOPA"), LINKS.format("ESMA"), {"eiopa", "esma"}),
    (RISK.format("reinsurance"), RISK.format("credit quality"), {"reinsurance", "credit", "quality"}),
    (NOTIFY.format("an Insurer"), NOTIFY.format("a Captive Insurer"), {"captive"}),
    ("The Regulator may grant an application for registration.",
     "The Regulator may refuse an application for registration.", {"grant", "refuse"}),
    ("A firm must keep the records for five years.", "A firm must keep the records for six years.", {"5", "6"}),
])
def test_sentences_differing_in_a_name_a_subject_or_a_number_are_two_rules(a, b, differ):
    assert differing_terms(a, b) == differ
    assert not near_duplicates(a, b, 90)


@pytest.mark.parametrize("a, b", [
    # list labels, punctuation and case: the same rule in two rulebooks
    ("The standard covers the following: (i) objectives; (ii) internal review; (iii) independence.",
     "The standard covers the following: (A) objectives; (B) internal review; (C) independence."),
    # the rule number each rulebook gives the rule it refers to
    ("A Fund Manager must, before appointing a third party under Rule 20.2.5, check its independence.",
     "A Fund Manager must, before appointing a third party under Rule 20.3.5, check its independence."),
    # plural and singular, an article, a number written as a word
    ("Applicants that qualify for authorisation to carry on Regulated Activities will be granted an FSP.",
     "Applicants that qualify for authorisation to carry on a Regulated Activity will be granted an FSP."),
    ("A firm must keep records of client money for six years.",
     "A firm must keep records of client money for 6 years."),
])
def test_the_same_rule_written_differently_is_one_statement(a, b):
    assert differing_terms(a, b) == set()
    assert near_duplicates(a, b, 90)


def test_a_high_ratio_is_still_required():
    a = "A firm must keep records of client money."
    assert differing_terms(a, "Records of client money a firm must keep.") == set()  # same words, other order
    assert not near_duplicates(a, "Records of client money a firm must keep.", 90)


def test_an_answer_does_not_cite_another_body_s_passage_for_a_sentence_it_does_not_state():
    question = "Where are the links to the EIOPA Guidelines and Recommendations in place at the end of the transition?"
    passages = [LINKS.format(body) for body in ("EIOPA", "EBA", "ESMA")]
    result = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda ts: [False] * len(ts), config=FocusedConfig(
        passage_margin=1.0, max_passages=3, passage_weight=0.2, keep_ratio=1.01, min_score=0.0, max_words=200)
    ).answer(question, passages, [1.0, 0.99, 0.98])
    for part in result.draft.parts:  # every quoted sentence cites only the passage it is taken from
        assert [passages[n] for n in part.cited] == [passages[part.passage]]
    assert "EIOPA Guidelines" in result.text and "available below [1]." in result.text
    assert "[1][2]" not in result.text and "[1][3]" not in result.text


def _answer(question: str, passages: list[str]):
    return FocusedAnswerer(encode=bag_of_words, is_obligation=lambda ts: [False] * len(ts), config=FocusedConfig(
        passage_margin=1.0, max_passages=3, passage_weight=0.2, keep_ratio=1.01, min_score=0.0, max_words=200)
    ).answer(question, passages, [1.0, 0.99, 0.98][:len(passages)])


def test_a_variant_in_a_term_the_question_tells_apart_is_not_quoted_beside_the_one_asked_about():
    passages = [LINKS.format(body) for body in ("EIOPA", "EBA", "ESMA")]
    asked = _answer("Where are the EIOPA Guidelines and Recommendations in place at the end of the transition?",
                    passages)
    assert asked.text.count("Links to") == 1 and [k.unit.passage for k in asked.kept] == [0]
    both = _answer("Where are the EIOPA and EBA Guidelines and Recommendations in place at the end of the transition?",
                   passages)  # the question names two bodies: both quoted, each cited alone
    assert [k.unit.passage for k in both.kept] == [0, 1] and "EBA Guidelines" in both.text
    # a variant adding a term the question does not name is kept: the question tells nothing apart there
    insurer = _answer("What must an Insurer notify the Regulator of when its Regulatory Return is inconsistent?",
                      [NOTIFY.format("an Insurer"), NOTIFY.format("a Captive Insurer")])
    assert [k.unit.passage for k in insurer.kept] == [0, 1]


def test_source_notes_are_never_dropped_as_variants():
    from rirag.generation.focused.scorer import ScoredUnit
    from rirag.generation.focused.selection import drop_contrasted
    from rirag.text.units import Unit

    texts = ["[Note: Art. 262 of the Solvency II Directive]", "[Note: Art. 263 of the Solvency II Directive]",
             LINKS.format("EIOPA"), LINKS.format("EBA")]
    kept = [ScoredUnit(Unit(t, p, 0, 0, len(t)), 1.0) for p, t in enumerate(texts)]
    # the question names Art. 262 and EIOPA: the EBA line goes, the note of the neighbouring article stays
    out = drop_contrasted("Under Art. 262, where are the EIOPA Guidelines?", kept, 90)
    assert [k.unit.passage for k in out] == [0, 1, 2]
