"""A followed cross-reference is cited inline (issue 38, point 3): the citing unit's text carries the followed
passage's marker right after the reference as written ("... subject to Rule 9.5.2 [2] [1]."), a citation of that
passage wherever citations are read (the record's Citations, the scorers' parsing); a reference outside the quoted
unit gets none, and a draft without inline markers is written exactly as before."""

from __future__ import annotations

import json

import pytest

from rirag.generation.base import AnswerRequest, Draft, DraftPart
from rirag.generation.focused.follow import inline_offset
from rirag.generation.pipeline import RetrievedPassage, answer_items
from rirag.generation.render import placed, render, written
from rirag.text.citations import parse_citations, placed_citations
from rirag.text.units import NOT_ADDRESSED, Unit
from rirag.xref import records as xref_records
from rirag.xref.graph import Link, ReferenceGraph
from test_follow import CITING, PASSAGES, QUESTION, answerer, draft


def _slices(text: str, markers) -> list[str]:
    return [text[o:o + len(f"[{n}]")] for o, n in markers]


# -- the answerer's draft and its text --------------------------------------------------------------------------


def test_the_followed_passage_is_cited_right_after_the_reference():
    d = draft(answerer(), ["p-951"])
    assert d.followed and d.followed[0].reference == "Rule 9.5.2"
    citing = d.parts[0]
    (offset, index), = citing.inline
    assert citing.text[:offset].endswith("subject to Rule 9.5.2") and index == d.followed[0].target - 1
    text, markers = written(d)
    assert "subject to Rule 9.5.2 [2] [1]. The notification of a breach" in text
    assert _slices(text, markers) == [f"[{n}]" for _, n in markers]  # every offset slices to its marker
    assert [n for _, n in markers] == [2, 1, 2]  # inline [2], the part's own [1], the followed unit's [2]
    assert text[:markers[0][0]].rstrip().endswith("Rule 9.5.2")


def test_a_reference_mid_sentence_keeps_the_sentence_around_its_marker():
    passage = "A firm must, subject to Rule 9.5.2, notify the Regulator in writing within ten days."
    start = passage.index("Rule 9.5.2")
    unit = Unit(passage, 0, 0, 0, len(passage))
    offset = inline_offset(unit, passage, Link("Rule 9.5.2", start, start + len("Rule 9.5.2"), ("t",)))
    text, markers = written(Draft([DraftPart(passage, (0,), 0, 0, len(passage), ((offset, 2),))]))
    assert text == "A firm must, subject to Rule 9.5.2 [3], notify the Regulator in writing within ten days [1]."
    assert _slices(text, markers) == ["[3]", "[1]"]


def test_a_reference_outside_the_quoted_unit_gets_no_inline_marker():
    citing = ("An Authorised Person must notify the Regulator in writing of any breach of its capital requirements. "
              "Guidance on this notice is given under Rule 9.5.2 for firms.")
    a = answerer(follow_in_unit=False, keep_ratio=1.01)  # only the best unit is kept: the reference lies outside it
    a.attach_references(graph_with("p-951", citing), {**{p: t for p, (_, t) in PASSAGES.items()}, "p-951": citing})
    d = a.draft([_request(citing)])[0]
    assert d.followed and "Rule 9.5.2" not in d.parts[0].text
    assert all(p.inline == () for p in d.parts)
    text, markers = written(d)
    assert [n for _, n in markers] == [1, 2] and text.count("[2]") == 1


def test_an_inline_marker_is_the_only_difference_a_followed_reference_makes():
    # drafts without inline markers are frozen by the golden rendering cases (tests/test_answerer_interface.py)
    from dataclasses import replace

    followed = draft(answerer(), ["p-951"])
    dropped = replace(followed, parts=[replace(p, inline=()) for p in followed.parts])
    assert any(p.inline for p in followed.parts)
    assert render(followed) != render(dropped)
    assert render(followed).replace(" [2] [1].", " [1].", 1) == render(dropped)
    for d in (followed, dropped):
        text, markers = written(d)
        assert _slices(text, markers) == [f"[{n}]" for _, n in markers]


# -- where the markers go ---------------------------------------------------------------------------------------


def test_markers_slice_and_adjacent_inline_markers():
    text = "A firm must comply with Rules 9.5.2 and 9.5.3 of the rulebook."
    a, b = text.index("9.5.2") + 5, text.index("9.5.3") + 5
    part = DraftPart(text, (0,), inline=((b, 2), (a, 1), (a, 3)))  # given out of order; two at one place
    piece, offsets = placed(part)
    assert piece == "A firm must comply with Rules 9.5.2 [2][4] and 9.5.3 [3] of the rulebook [1]."
    assert [(piece[o:o + 3], n) for o, n in offsets] == [("[2]", 2), ("[4]", 4), ("[3]", 3), ("[1]", 1)]
    d = Draft([DraftPart("Records must be kept.", (1,)), part], addressed=False)
    full, markers = written(d)
    assert full.startswith(NOT_ADDRESSED) and _slices(full, markers) == [f"[{n}]" for _, n in markers]
    assert [n for _, n in markers] == [2, 2, 4, 3, 1]


def test_offsets_into_unnormalised_text_and_offsets_that_cannot_hold_a_marker():
    text = "A firm  must comply\nwith Rule 9.5.2, and keep records."
    at = text.index("9.5.2") + 5
    piece, offsets = placed(DraftPart(text, (0,), inline=((at, 1),)))
    assert piece == "A firm must comply with Rule 9.5.2 [2], and keep records [1]."
    assert [piece[o:o + 3] for o, _ in offsets] == ["[2]", "[1]"]
    for bad in (0, len(text), len(text) + 5, text.index("with")):  # the start, after the full stop, past the end,
        piece, offsets = placed(DraftPart(text, (0,), inline=((bad, 1),)))  # after a line break
        assert piece == "A firm must comply with Rule 9.5.2, and keep records [1]." and len(offsets) == 1


@pytest.mark.parametrize("passage, unit_text, expected", [
    ("Rule 9.5.2 applies. A firm must follow Rule 9.5.2 here.", "A firm must follow Rule 9.5.2 here.",
     "A firm must follow Rule 9.5.2"),  # a unit starting inside its passage
    ("(a)\tA firm must,\n  under  Rule 9.5.2, act.", "A firm must, under Rule 9.5.2, act.",
     "A firm must, under Rule 9.5.2"),  # a dropped label and odd whitespace
    ("See Rule 9.5.2 and Rule 9.5.2 again.", "See Rule 9.5.2 and Rule 9.5.2 again.", "See Rule 9.5.2 and Rule 9.5.2"),
])
def test_the_offset_is_that_of_the_reference_as_the_unit_writes_it(passage, unit_text, expected):
    start = passage.rindex("Rule 9.5.2")
    unit_start = passage.index(unit_text.split()[0])
    unit = Unit(unit_text, 0, 0, unit_start, len(passage))
    link = Link("Rule 9.5.2", start, start + len("Rule 9.5.2"), ("t",))
    assert unit_text[:inline_offset(unit, passage, link)] == expected


def test_no_offset_when_the_reference_is_not_in_the_quoted_text():
    passage = "A firm must act. See Rule 9.5.2."
    link = Link("Rule 9.5.2", passage.index("Rule"), passage.index("Rule") + 10, ("t",))
    assert inline_offset(Unit("A firm must act.", 0, 0, 0, 16), passage, link) is None  # outside the unit
    row = Unit("Rule: 9 dot 5 dot 2 | Duty: act", 0, 0, 0, len(passage), is_table=True)  # text rebuilt from cells
    assert inline_offset(row, passage, link) is None


# -- the record and the scorers read it as a citation -----------------------------------------------------------


def test_the_answers_record_cites_the_target_in_the_citing_sentence():
    [answer] = answer_items([("q1", QUESTION, [RetrievedPassage("p-951", CITING, 1.0, 1, "9.5.1")])], answerer())
    record = json.loads(json.dumps(answer.to_record()))
    first = [c for c in record["Citations"] if c["sentence"] == 0]
    assert [(c["n"], c["ID"]) for c in first] == [(2, "p-952"), (1, "p-951")]
    ids = record["RetrievedIDs"]
    assert parse_citations(record["Answer"], ids) == placed_citations(*written(answer.draft), ids)
    assert [p.id for p in answer.cited] == ["p-951", "p-952"]  # the citing rule first, as the parts cite them


def test_scorers_count_the_inline_marker_as_a_citation_of_its_sentence():
    from rirag.scoring.answers import input_checks
    from rirag.scoring.attribution import AttributionScorer

    [answer] = answer_items([("q1", QUESTION, [RetrievedPassage("p-951", CITING, 1.0, 1, "9.5.1")])], answerer())
    record = answer.to_record()
    assert input_checks([record])["markers_out_of_range"] == 0

    def entails(pairs):  # a passage supports a sentence it contains
        return [claim.rstrip(".") in premise for premise, claim in pairs]

    result = AttributionScorer(entails=entails).score([record["Answer"]], [record["RetrievedPassages"]])
    # sentence 1 cites [2] (inline: the followed rule does not state it) and [1]; sentence 2 cites [2]
    assert result["per_item"]["citation_precision"] == [pytest.approx(2 / 3)]
    # every sentence cites: no missing-part line (off by default, and the followed rule states the number of days
    # the question asks for, so it is not said even with --say-missing)
    assert result["per_item"]["citation_recall"][0] == pytest.approx(1.0)
    assert "do not state" not in record["Answer"]
    [said] = answer_items([("q1", QUESTION, [RetrievedPassage("p-951", CITING, 1.0, 1, "9.5.1")])],
                          answerer(say_missing=True))
    assert said.to_record()["Answer"] == record["Answer"]


def graph_with(pid: str, text: str) -> ReferenceGraph:
    """The fixture corpus's reference graph with passage ``pid``'s text replaced by ``text``."""
    texts = {**{p: (n, t) for p, (n, t) in PASSAGES.items()}, pid: (PASSAGES[pid][0], text)}
    return ReferenceGraph(passages=[xref_records.Passage(p, "1", "General Rulebook (GEN)", n, t)
                                    for p, (n, t) in texts.items()])


def _request(text: str) -> AnswerRequest:
    """The fixture question over one passage, ``text``, as passage p-951."""
    return AnswerRequest(QUESTION, [text], [1.0], ids=["p-951"])
