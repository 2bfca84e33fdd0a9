"""A quoted sentence that points back ("These systems and controls should include ...", "However, ...") is quoted with
the sentence before it, so that what "these" or "however" points at is not lost; the passages cited stay the same."""

from __future__ import annotations

from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.focused.selection import with_antecedents
from rirag.text.lines import normalise
from rirag.text.units import opens_with_back_reference, split_units

GROUP = ("Senior management should establish systems and controls to monitor the effect of the Group on the Insurer. "
         "These systems and controls should include procedures to monitor changes in relationships between members.")
OTHER = "An Insurer must notify the Regulator of any change in its Group within 14 days."


def test_back_references_are_told_from_documents_and_dummy_subjects():
    for text in ("This includes whether the firm anticipates the use of the facilities.", "These include exposures.",
                 "However, if the society pays bonuses above the limit, the members must approve.",
                 "In particular, those rules must specify the obligations.", "Such arrangements must be documented."):
        assert opens_with_back_reference(text), text
    for text in ("This Part applies to every firm.", "These Regulations become effective on enactment.",
                 "These Islamic Finance Rules set out the instances.", "This statement of policy is issued under FSMA.",
                 "It would normally be appropriate to include a statement.", "In addition to the information required, "
                 "the report must include the following.", "Thisbe is a name."):
        assert not opens_with_back_reference(text), text


def _scored(passages):
    return [ScoredUnit(u, 0.5) for i, p in enumerate(passages) for u in split_units(p, i)]


def test_the_sentence_pointed_back_at_is_quoted_with_it():
    passages = [GROUP, OTHER]
    scored = _scored(passages)
    these = next(s for s in scored if s.unit.text.startswith("These"))
    other = next(s for s in scored if s.unit.passage == 1)
    out = with_antecedents([these, other], scored, passages, 160, 300, 100)
    assert out[0].unit.text.startswith("Senior management should establish") and out[0].unit.text.endswith("members.")
    assert normalise(passages[0][out[0].unit.start:out[0].unit.end]) == normalise(out[0].unit.text)  # one span
    assert [k.unit.passage for k in out] == [0, 1] and out[1] is other  # the same passages, in the same order


def test_nothing_is_joined_that_the_answer_quotes_already_or_that_breaks_the_bound():
    passages = [GROUP, OTHER]
    scored = _scored(passages)
    lead, these = [s for s in scored if s.unit.passage == 0]
    assert with_antecedents([lead, these], scored, passages, 160, 300, 100) == [lead, these]  # quoted already
    words = these.unit.words + lead.unit.words
    assert with_antecedents([these], scored, passages, words - 1, 300, 100) == [these]  # over the answer's bound
    assert with_antecedents([these], scored, passages, 160, words - 1, 100) == [these]  # over the unit's cap
    assert with_antecedents([these], scored, passages, words, words, 100)[0].unit.text.startswith("Senior")


def test_the_answerer_quotes_the_antecedent_and_can_be_told_not_to():
    from tests.test_focused import answerer

    question = "What procedures should the systems and controls include to monitor changes in relationships?"
    passages = [GROUP, OTHER]
    on = answerer(answerable_threshold=0.0).answer(question, passages, [1.0, 0.5])
    off = answerer(answerable_threshold=0.0, antecedents=False).answer(question, passages, [1.0, 0.5])
    assert off.text.startswith("These systems and controls should include")
    assert on.text.startswith("Senior management should establish systems and controls")
    assert "These systems and controls should include" in on.text
    assert {k.unit.passage for k in on.kept} == {k.unit.passage for k in off.kept}
