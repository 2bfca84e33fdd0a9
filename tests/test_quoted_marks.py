"""An answer quoting a passage that carries its structure (an ingested page's footnote marks and list levels) shows
no footnote mark and keeps a nested list's levels; a passage without structure is quoted as before."""

from __future__ import annotations

from rirag.generation.base import AnswerRequest, Draft, DraftPart
from rirag.generation.pipeline import RetrievedPassage
from rirag.generation.render import written
from rirag.text.lines import normalise
from rirag.text.marks import bare_marks, edited, item_breaks, quoted_marks, without_marks

PASSAGE = ("The process applies to a write-down manager, 16 meaning that:\n(a) consent is required before making "
           "such an application;\n(b) such consent must be:\n(i) in writing; and\n(ii) filed with the court; and\n"
           "(c) the PRA must consult the FCA.")
MARK = PASSAGE.index("16")
LINES = [0] + [i + 1 for i, c in enumerate(PASSAGE) if c == "\n"]
ITEMS = tuple(zip(LINES[1:], (1, 1, 2, 2, 1)))


def _passage(marks=((MARK, MARK + 2),), items=ITEMS) -> RetrievedPassage:
    return RetrievedPassage("p1", PASSAGE, 1.0, 1, "16", marks, items)


def test_an_answer_shows_no_footnote_mark_and_keeps_its_markers_in_place():
    sentence = PASSAGE.split("\n")[0]
    draft = Draft([DraftPart(normalise(sentence), (0,), 0, 0, len(sentence))])
    before, _ = written(draft)
    text, markers = written(draft, [_passage()])
    assert bare_marks(before, PASSAGE, ((MARK, MARK + 2),)) == ["manager, 16"]  # the check finds it
    assert text == "The process applies to a write-down manager, meaning that: [1]"
    assert bare_marks(text, PASSAGE, ((MARK, MARK + 2),)) == []
    assert [(text[at:at + 3], n) for at, n in markers] == [("[1]", 1)]


def test_a_nested_list_is_quoted_with_its_levels():
    draft = Draft([DraftPart(normalise(PASSAGE), (0,), 0, 0, len(PASSAGE))])
    text, markers = written(draft, [_passage()])
    assert text.split("\n") == [
        "The process applies to a write-down manager, meaning that:",
        "(a) consent is required before making such an application;",
        "(b) such consent must be:",
        "  (i) in writing; and",
        "  (ii) filed with the court; and",
        "(c) the PRA must consult the FCA [1].",
    ]
    assert text[markers[0][0]:].startswith("[1]")


def test_a_passage_without_structure_is_quoted_as_before():
    draft = Draft([DraftPart(normalise(PASSAGE), (0,), 0, 0, len(PASSAGE))])
    assert written(draft, [_passage((), ())]) == written(draft)
    assert "manager, 16 meaning" in written(draft)[0] and "\n" not in written(draft)[0]


def test_marks_and_items_are_found_by_the_words_around_them():
    quote = "… a write-down manager, 16 meaning that: (b) such consent must be: (i) in writing; and"
    assert [quote[a:b] for a, b in quoted_marks(quote, PASSAGE, ((MARK, MARK + 2),))] == [" 16"]
    assert quoted_marks("16 meaning that", PASSAGE, ((MARK, MARK + 2),)) == [(0, 3)]  # the quote opens with it
    assert quoted_marks("the process applies 16 times", PASSAGE, ((MARK, MARK + 2),)) == []  # not after its words
    # a flat part of a list stays on one line; a nested one breaks before each item
    assert item_breaks("(a) consent is required before making such an application; (b) such consent must be:",
                       PASSAGE, ITEMS) == []
    assert [(quote[at + 1:at + 4], depth) for at, depth in item_breaks(quote, PASSAGE, ITEMS)] == \
        [("(b)", 0), ("(i)", 1)]
    assert edited("ab cd ef", [(2, 5, ""), (5, 6, "\n")], [6, 3]) == ("ab\nef", [3, 2])


def test_a_language_model_is_shown_the_passages_without_their_marks():
    request = AnswerRequest("Q?", [PASSAGE, "Plain 2 text."], marks=[((MARK, MARK + 2),), ()])
    assert request.prompt_passages[0].startswith("The process applies to a write-down manager, meaning that:\n(a)")
    assert request.prompt_passages[1] == "Plain 2 text."
    assert AnswerRequest("Q?", [PASSAGE]).prompt_passages == [PASSAGE]
    assert without_marks("a 1 b 2", [(2, 3), (6, 7)]) == "a b"
