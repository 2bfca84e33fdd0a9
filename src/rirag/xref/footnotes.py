"""Footnote marks in ingested text: a page's superscript number, which HTML-to-text ingestion keeps as a word of its
own ("the Combined Code 5 as appropriate"), told apart from the numbers that count, measure or name something
("Tier 2", "5 years", "Annexes 1 and 2", a table cell). Which footnote a mark points to is the corpus index's to say
(:meth:`rirag.xref.index.CorpusIndex._footnote`: only a mark whose page has that footnote is a reference)."""

from __future__ import annotations

import re
from typing import Iterator

#: A footnote mark as ingested HTML leaves it: one to three digits standing alone after a word or a closing mark.
_FOOTNOTE_MARK = re.compile(r"(?<=[^\W\d_]|[’'\").,;:])\s(?P<mark>[1-9]\d{0,2})(?=[\s,.;:)]|$)(?![.,]\d)")
#: A number in a table row, or after a year in brackets ("[1989] 5 BCC 259").
_NOT_A_MARK_BEFORE = re.compile(r"(?:[|\t][^\n]*|\[\d{4}\])\s*$")
#: The word before a list of numbers that the number continues ("parts 1 and 2", "Chapters 3, 4").
_LIST_BEFORE = re.compile(r"([^\W\d_]+)\s+\d+[A-Za-z]?\s*(?:,|and|or|to|-|–)\s*$")
#: The word before a number (:data:`_FOOTNOTE_MARK`), and the full stop between them if any.
_WORD_BEFORE = re.compile(r"([^\W\d_]+)(\.?)\s*$")
#: Abbreviations that number what follows their full stop ("No. 5", "Art. 9"); after any other word a full stop ends
#: a sentence, and a number after it is a mark ("... provided these entities meet certain conditions. 45").
_ABBREVIATIONS = frozenset({"no", "nos", "p", "pp", "art", "para", "sec", "ch", "fig", "q"})
#: Words a number after which is what they number, not a footnote mark.
_NUMBERED_WORDS = frozenset("""
    article articles art section sections rule rules paragraph paragraphs para chapter chapters part parts
    schedule schedules annex annexes appendix table tables figure figures chart box level levels tier tiers
    category categories class classes pillar step steps stage stages phase option options no nos number
    numbers page pages p pp principle principles condition conditions template templates row rows column
    columns point points item items question questions type types group groups regulation regulations
    directive title titles subsection subsections sub line lines version cet at annual year years month months
    week weeks day days quarter q footnote footnotes note notes ss sop cp ps fr rm basel solvency guideline
    guidelines recommendation recommendations standard standards function functions set sets
""".split())
#: What follows a number that counts or measures (not a footnote mark).
_UNIT_AFTER = re.compile(r"\s*(?:%|per\s?cent|percent|(?:business |calendar |working )?(?:days?|weeks?|months?|"
                         r"years?|hours?|minutes?)\b|times\b|x\b|bps\b|basis points|million|billion|bn\b|m\b|"
                         r"(?:January|February|March|April|May|June|July|August|September|October|November|"
                         r"December)\b|st\b|nd\b|rd\b|th\b|or more|or fewer|or less)", re.IGNORECASE)


def footnote_marks(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, mark) of each number in ``text`` that can be a footnote mark: one to three digits standing alone
    after a word or a closing mark (:data:`_FOOTNOTE_MARK`), not after a word that numbers something else
    (:data:`_NUMBERED_WORDS`, also across a list of numbers: "Annexes 1 and 2"), not before a unit or a date
    (:data:`_UNIT_AFTER`), not in a table row nor after a bracketed year (:data:`_NOT_A_MARK_BEFORE`)."""
    for m in _FOOTNOTE_MARK.finditer(text):
        start, end = m.span("mark")
        window = max(0, start - 200)
        word, listed = _WORD_BEFORE.search(text, window, start), _LIST_BEFORE.search(text, window, start)
        if word and word.group(1).lower() in _NUMBERED_WORDS and (
                not word.group(2) or word.group(1).lower() in _ABBREVIATIONS):
            continue
        if listed and listed.group(1).lower() in _NUMBERED_WORDS:
            continue
        line_end = text.find("\n", end)
        if (_UNIT_AFTER.match(text, end) or _NOT_A_MARK_BEFORE.search(text, window, start)
                or "|" in text[end:len(text) if line_end < 0 else line_end]):
            continue
        yield start, end, m.group("mark")
