"""Focused lists (issue 39, point 5): with ``FocusedConfig.focus_lists`` a long kept list is quoted as its lead-in and
only the items that bear on the question, "[…]" where items are left out; a question about the whole list, a short
list and the option off keep the whole list."""

from __future__ import annotations

import pytest

from _rendering_cases import CASES
from _scoring_fixtures import bag_of_words
from rirag.generation.base import AnswerRequest, Draft, DraftPart
from rirag.generation.focused import FocusedAnswerer, FocusedConfig
from rirag.generation.focused.answer import part
from rirag.generation.focused.follow import inline_offset
from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.focused.selection import focus_lists
from rirag.generation.render import written
from rirag.text.citations import parse_citations, placed_citation
from rirag.text.lines import normalise
from rirag.text.lists import focus_items, list_items
from rirag.text.units import ELISION, NOT_ADDRESSED, split_units
from rirag.xref.graph import Link
from test_follow import QUESTION as BREACH_QUESTION
from test_follow_inline import graph_with

LEAD = "The records required under Rule 17.1.6 must be:"
ITEMS = [
    "(a)\tcapable of demonstrating to the Governing Body of the relevant Fund that any accounts prepared comply with "
    "the applicable requirements in these Rules or any other applicable legislation;",
    "(b)\tretained by the Fund Administrator for at least 6 years from the date to which they relate;",
    "(c)\tat all reasonable times, open to inspection by the Regulator, Fund Manager, the Fund's Auditor and any "
    "Person providing oversight functions for the relevant Fund; and",
    "(d)\tif requested by the Regulator, capable of reproduction within a reasonable period not exceeding 3 days, in "
    "hard copy and in English.",
]
RECORDS = "\n".join([LEAD, *ITEMS]) + "\n\n"
ONE_ITEM = ("How quickly must a Fund Administrator be able to reproduce records in hard copy and in English if the "
            "Regulator requests them?")
WHOLE_LIST = "What must the records required under Rule 17.1.6 be?"

NESTED = "\n".join([
    "A Fund Manager must ensure that its marketing material is:",
    "(a)\tclear, fair and not misleading to the persons to whom it is directed in every jurisdiction;",
    "(b)\tapproved before it is issued, where:",
    "(i)\tthe approval is given by a senior individual of the Fund Manager; and",
    "(ii)\tthe approving individual keeps a signed copy of the material for inspection;",
    "(c)\tissued only in a language that the intended recipients are likely to understand well; and",
    "(d)\twithdrawn promptly when it ceases to be accurate, together with every translation of it.",
])


def answerer(**config) -> FocusedAnswerer:
    config.setdefault("focus_list_margin", 0.05)  # the stand-in encoder's cosines (word overlap) are coarse
    return FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [False] * len(texts),
                           config=FocusedConfig(**config))


def body(text: str) -> str:
    """An answer's text without the 'not addressed' opening (the stand-in encoder rarely clears answerability)."""
    return text.removeprefix(f"{NOT_ADDRESSED} ")


def _slices(text: str, markers) -> list[str]:
    return [text[o:o + len(f"[{n}]")] for o, n in markers]


def test_a_question_about_one_item_gets_the_lead_in_and_that_item():
    result = answerer(focus_lists=True).answer(ONE_ITEM, [RECORDS])
    (kept,) = result.kept
    assert body(result.text) == f"{LEAD} {ELISION} {normalise(ITEMS[3]).removesuffix('.')} [1]."
    # each quoted piece is a verbatim span of the passage; start/end run from the lead-in to the kept item's end
    assert [RECORDS[a:b] for a, b in kept.unit.spans] == [LEAD, ITEMS[3]]
    assert (kept.unit.start, kept.unit.end) == (0, RECORDS.rindex(".") + 1)
    assert kept.unit.words == len(LEAD.split()) + len(ITEMS[3].split())  # the elision mark is not a word
    draft = answerer(focus_lists=True).draft([AnswerRequest(ONE_ITEM, [RECORDS])])[0]
    text, markers = written(draft)
    assert text == result.text and _slices(text, markers) == ["[1]"] and [n for _, n in markers] == [1]
    assert draft.parts[0].cited == (0,)
    # the option off quotes the whole list, exactly as the unit reads
    (whole,) = split_units(RECORDS)
    off = answerer().answer(ONE_ITEM, [RECORDS])
    assert body(off.text) == placed_citation(whole.text, 1)[0] and off.kept[0].unit == whole


def test_a_question_about_the_whole_list_gets_the_whole_list():
    on = answerer(focus_lists=True).answer(WHOLE_LIST, [RECORDS])
    assert on.text == answerer().answer(WHOLE_LIST, [RECORDS]).text
    assert ELISION not in on.text and on.kept[0].unit.spans == ()
    # a wide margin keeps every item (or all but one): the whole unit, unchanged
    wide = answerer(focus_lists=True, focus_list_margin=2.0).answer(ONE_ITEM, [RECORDS])
    assert wide.kept[0].unit == split_units(RECORDS)[0]


def test_items_left_out_between_and_after_kept_items_are_marked():
    (unit,) = split_units(RECORDS)
    lead, items = list_items(unit, RECORDS)
    assert RECORDS[slice(*lead)] == LEAD and [RECORDS[a:b] for a, b in items] == ITEMS
    middle = focus_items(unit, RECORDS, [1])
    assert middle.text == f"{LEAD} {ELISION} {normalise(ITEMS[1])} {ELISION}."  # closed: the quote ends there
    assert middle.end == RECORDS.index(ITEMS[1]) + len(ITEMS[1])
    first = focus_items(unit, RECORDS, [0, 2])  # (a) follows the lead-in: one span, no mark between them
    assert first.text == f"{LEAD} {normalise(ITEMS[0])} {ELISION} {normalise(ITEMS[2])} {ELISION}."
    assert first.words == len(f"{LEAD} {ITEMS[0]} {ITEMS[2]}".split())
    assert len(first.spans) == 2 and RECORDS[slice(*first.spans[0])] == f"{LEAD}\n{ITEMS[0]}"
    assert focus_items(unit, RECORDS, [0, 1, 2, 3]) is unit and focus_items(unit, RECORDS, []) is unit
    text, markers = written(Draft([part(ScoredUnit(middle, 1.0)), DraftPart("A Fund Manager must comply.", (1,))]))
    assert text.endswith(f"{ELISION} [1]. A Fund Manager must comply [2].") and _slices(text, markers) == ["[1]", "[2]"]
    assert len(parse_citations(text, ["p1", "p2"]).sentences) == 2  # the focused quote ends its sentence


def test_short_lists_are_quoted_whole():
    short = "A Fund Manager must keep:\n(a)\tledgers;\n(b)\tinvoices;\n(c)\treceipts; and\n(d)\tcontracts."
    two = "\n".join([LEAD, ITEMS[0], ITEMS[3].replace("(d)", "(b)")])  # long, but two items
    for passage in (short, two):
        (unit,) = split_units(passage)
        assert unit.is_list
        kept = focus_lists(ONE_ITEM, [ScoredUnit(unit, 0.9)], [passage], bag_of_words, 20, 0.0, 300)
        assert kept[0].unit is unit
    (unit,) = split_units(RECORDS)
    assert unit.words > 60
    assert focus_lists(ONE_ITEM, [ScoredUnit(unit, 0.9)], [RECORDS], bag_of_words, unit.words, 0.0, 300)[0].unit \
        is unit  # not longer than the word threshold
    focused = focus_lists(ONE_ITEM, [ScoredUnit(unit, 0.9)], [RECORDS], bag_of_words, 60, 0.0, 300)[0].unit
    assert focused.spans and focused.words < unit.words
    # a focused text longer than the unit limit leaves the unit whole (it is clipped as before)
    assert focus_lists(ONE_ITEM, [ScoredUnit(unit, 0.9)], [RECORDS], bag_of_words, 60, 0.0, 20)[0].unit is unit


def test_nested_sub_items_travel_with_their_parent():
    (unit,) = split_units(NESTED)
    _, items = list_items(unit, NESTED)
    assert len(items) == 4 and NESTED[slice(*items[1])].startswith("(b)")
    assert NESTED[slice(*items[1])].endswith("for inspection;")  # (i) and (ii) belong to (b)
    result = answerer(focus_lists=True, focus_list_min_words=40).answer(
        "Who keeps a signed copy of approved marketing material?", [NESTED])
    text = result.text
    assert "(b) approved before it is issued, where: (i) the approval" in text and "(ii) the approving" in text
    assert "(a)" not in text and "(c)" not in text and text.count(ELISION) == 2


@pytest.mark.parametrize("labels, top", [
    (["(a)", "(b)", "(i)", "(ii)", "(c)"], [0, 1, 4]),  # roman sub-items under (b)
    ([f"({c})" for c in "abcdefghij"], list(range(10))),  # (h), then (i): the next letter, top-level
    (["(i)", "(ii)", "(a)", "(b)", "(iii)"], [0, 1, 4]),  # a roman list with lettered sub-items
    (["(1)", "(a)", "(b)", "(2)", "(3)"], [0, 3, 4]),
    (["(a)", "(A)", "(B)", "(b)", "(c)"], [0, 3, 4]),  # upper case under lower case
])
def test_top_level_items_by_their_labels(labels, top):
    passage = "A Fund Manager must do the following things in the order written below:\n" + "\n".join(
        f"{label}\tthe step number {i} of the procedure written out here;" for i, label in enumerate(labels))
    (unit,) = split_units(passage)
    _, items = list_items(unit, passage)
    assert [passage[a:b].split("\t")[0] for a, b in items] == [labels[i] for i in top]


def test_the_option_off_and_lists_without_enough_to_leave_out_render_as_before():
    for question, passages, scores, config in [*CASES, (ONE_ITEM, [RECORDS], None, {}),
                                               (WHOLE_LIST, [RECORDS, NESTED], [1.0, 0.5], {})]:
        request = [AnswerRequest(question, passages, scores)]
        off = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda t: [False] * len(t),
                              config=FocusedConfig(**config)).draft(request)[0]
        plain = [p for p in off.parts]
        assert all(ELISION not in p.text for p in plain)
        if RECORDS in passages and question == ONE_ITEM:
            continue  # focused when on (the tests above)
        on = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda t: [False] * len(t),
                             config=FocusedConfig(focus_lists=True, **config)).draft(request)[0]
        assert written(on) == written(off)


# -- followed references in a focused list ---------------------------------------------------------------------

CONDITIONS = "\n".join([
    "An Authorised Person must meet each of the following conditions at all times:",
    "(a)\tit must notify the Regulator in writing of any breach of its capital requirements, subject to Rule 9.5.2;",
    "(b)\tit must keep records of its marketing materials for six years after their last use;",
    "(c)\tit must appoint an auditor approved by the Regulator for every financial year it operates; and",
    "(d)\tit must publish its annual accounts on its public website within four months of its year end.",
])


def _follower(**config) -> FocusedAnswerer:
    from test_follow import PASSAGES

    config = {"follow_in_unit": True, "follow_scope": "corpus", **config}  # the quoted items' references, any rule
    a = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [True] * len(texts),
                        config=FocusedConfig(follow_references=True, focus_lists=True, focus_list_min_words=40,
                                             follow_ratio=0.0, **config))
    return a.attach_references(graph_with("p-951", CONDITIONS),
                               {**{p: t for p, (_, t) in PASSAGES.items()}, "p-951": CONDITIONS})


def test_a_reference_in_a_kept_item_is_cited_inline_after_it():
    d = _follower().draft([AnswerRequest(BREACH_QUESTION, [CONDITIONS], [1.0], ids=["p-951"])])[0]
    assert ELISION in d.parts[0].text and "(b)" not in d.parts[0].text
    assert d.followed and d.followed[0].reference == "Rule 9.5.2"
    text, markers = written(d)
    assert "subject to Rule 9.5.2 [2]; [" in text
    assert _slices(text, markers) == [f"[{n}]" for _, n in markers] and [n for _, n in markers] == [2, 1, 2]


def test_a_reference_in_an_item_left_out_is_not_followed_nor_marked():
    question = "For how many years must an Authorised Person keep records of its marketing materials?"
    request = [AnswerRequest(question, [CONDITIONS], [1.0], ids=["p-951"])]
    d = _follower().draft(request)[0]
    assert "(b)" in d.parts[0].text and "Rule 9.5.2" not in d.parts[0].text
    assert d.followed == [] and d.parts[0].inline == ()
    loose = _follower(follow_in_unit=False).draft(request)[0]  # any reference of the passage: followed, not inline
    assert loose.followed and all(p.inline == () for p in loose.parts)
    # the surface inside the unit's start-end but in an item left out: no offset (here: lead-in and (b) quoted)
    (unit,) = split_units(CONDITIONS)
    focused = focus_items(unit, CONDITIONS, [1])
    start = CONDITIONS.index("Rule 9.5.2")
    assert focused.start < start < focused.end and not focused.quotes(start, start + 10)
    assert inline_offset(focused, CONDITIONS, Link("Rule 9.5.2", start, start + 10, ("p-952",))) is None
    assert inline_offset(unit, CONDITIONS, Link("Rule 9.5.2", start, start + 10, ("p-952",))) is not None
