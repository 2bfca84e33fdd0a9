"""The lines of a passage, as the answer units (:mod:`rirag.text.units`), their lists (:mod:`rirag.text.lists`) and
tables (:mod:`rirag.text.tables`) read them: whitespace normalisation, list labels, what closes a line, how long a
heading may be, and where a normalised text lies in its passage."""

from __future__ import annotations

import re

#: A list label at the start of a line: (a) (iv) (2) (2A) a) ii. 1. 1.2 • - –
#: (Unbracketed letter labels are one letter or a roman numeral, so that "No.", "Mr." or "Co." never are.)
LIST_LABEL = re.compile(
    r"^\s*(?:\(\s*(?:[a-z]{1,3}|[ivxlcdm]{1,6}|\d{1,3}[a-z]?)\s*\)|(?:[a-z]|[ivxlcdm]{1,6}|\d{1,3}[a-z]?)[.)]"
    r"|\d{1,3}(?:\.\d{1,3})+\.?|[•▪●◦·\-–])(?=\s)", re.IGNORECASE)
#: A line ends with closing punctuation (a heading never does).
CLOSING = re.compile(r"[.:;,!?—–\-)\]]\s*$")
#: A line of at most this many words may be a heading (ADGM passages often start with their guidance document's
#: section titles, which Punkt would glue to the first sentence).
HEADING_MAX_WORDS = 15

def normalise(text: str) -> str:
    return " ".join(text.split())


def is_item(line: str) -> bool:
    return bool(LIST_LABEL.match(line))


def locate(passage: str, text: str, cursor: int) -> tuple[int, int] | None:
    """Character offsets of ``text`` (whitespace-normalised, perhaps without its paragraph label) in ``passage``
    from ``cursor`` on; ``None`` when it cannot be found (the block's offsets are kept then)."""
    words = text.split()
    if not words or len(words) > 2000:
        return None
    match = re.compile(r"\s+".join(re.escape(w) for w in words)).search(passage, cursor)
    return (match.start(), match.end()) if match else None
