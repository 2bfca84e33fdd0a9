"""Question → claim rewriting: one rule per question type, a fallback, and the context-clause case."""

import pytest

from rirag.text.claims import QUESTION_TYPES, question_to_claim, question_type


@pytest.mark.parametrize("question, kind, claim", [
    ("When must an Authorised Person notify the Regulator?", "when",
     "An Authorised Person must notify the Regulator at the specified time."),
    ("Why is it important for a firm to maintain records?", "why",
     "It is important for a firm to maintain records for a stated reason."),
    ("Who is responsible for filing the annual report?", "who",
     "The responsible party is responsible for filing the annual report."),
    ("Where should a Fund Manager keep its records?", "where",
     "A Fund Manager should keep its records in the specified place."),
    ("Does the FSRA require a firm to appoint an auditor?", "does",
     "It is the case that the FSRA does require a firm to appoint an auditor."),
    ("Can a Recognised Body outsource functions?", "does",
     "It is the case that a Recognised Body can outsource functions."),
    ("How should an Authorised Person calculate its capital requirement?", "how",
     "An Authorised Person should calculate its capital requirement in the specified manner."),
    ("How long must records be retained?", "how", "Records must be retained for a specified period."),
    ("How many directors must a Fund have?", "how", "A specified number of directors must a Fund have."),
    ("What are the requirements for client money?", "generic", "The rules state the requirements for client money."),
    ("Under what circumstances may the Regulator withdraw a licence?", "when",
     "The Regulator may withdraw a licence under the specified circumstances."),
    ("In the context of AML, how should a Relevant Person verify identity?", "how",
     "In the context of AML, a Relevant Person should verify identity in the specified manner."),
])
def test_rules_per_question_type(question, kind, claim):
    assert question_type(question) == kind
    assert question_to_claim(question) == claim


def test_every_type_is_covered_and_claims_are_declarative():
    questions = ["When is a report due?", "Why must firms keep records?", "Who approves a prospectus?",
                 "Where are records held?", "Do the rules apply to branches?", "How is capital measured?",
                 "List the reporting duties"]
    kinds = {question_type(q) for q in questions}
    assert kinds == set(QUESTION_TYPES)
    for q in questions:
        c = question_to_claim(q)
        assert c.endswith(".") and "?" not in c and c[0].isupper()


def test_fallback_keeps_content_and_empty_question_fails():
    assert question_to_claim("  List   the reporting duties of a Custodian ??") == \
        "The rules state that list the reporting duties of a Custodian."
    with pytest.raises(ValueError, match="empty question"):
        question_to_claim(" ? ")
