"""The lines of a passage, as the answer units (:mod:`rirag.text.units`), their lists (:mod:`rirag.text.lists`) and
tables (:mod:`rirag.text.tables`) read them: whitespace normalisation, list labels, what closes a line, how long a
heading may be, and where a normalised text lies in its passage."""

from __future__ import annotations

import functools
import re
from bisect import bisect_right

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
    from ``cursor`` on: the first place where its words stand in that order with any whitespace between them (not
    necessarily at word boundaries); ``None`` when it cannot be found (the block's offsets are kept then)."""
    words = text.split()
    if not words or len(words) > 2000:
        return None
    joined, at, starts = _spaced(passage)
    if not starts:
        return None
    i = bisect_right(starts, cursor) - 1  # the word the cursor is in, or the last before it
    word_end = (at[i + 1] - 1 if i + 1 < len(at) else len(joined)) if i >= 0 else 0
    begin = 0 if i < 0 else min(at[i] + cursor - starts[i], word_end)
    wanted = " ".join(words)
    found = joined.find(wanted, begin)
    if found < 0:
        return None
    last = found + len(wanted) - 1  # a word's character: the words hold no space
    return _offset(found, at, starts), _offset(last, at, starts) + 1


@functools.lru_cache(maxsize=256)
def _spaced(passage: str) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """``passage``'s words joined by single spaces, and each word's offset in that string and in ``passage`` (a
    passage is read once for all its units, not once per unit)."""
    words = passage.split()
    at, starts, pos, here = [], [], 0, 0
    for word in words:
        pos = passage.find(word, pos)  # only whitespace lies between one word and the next
        starts.append(pos)
        at.append(here)
        pos, here = pos + len(word), here + len(word) + 1
    return " ".join(words), tuple(at), tuple(starts)


def _offset(i: int, at: tuple[int, ...], starts: tuple[int, ...]) -> int:
    """The offset in the passage of the character at ``i`` of its spaced string (a word's character)."""
    w = bisect_right(at, i) - 1
    return starts[w] + i - at[w]
