"""rirag.text.lines.locate: where a unit's whitespace-normalised text lies in its passage, found without compiling a
pattern per unit; the same offsets as the pattern it replaced (the words with any whitespace between them)."""

from __future__ import annotations

import random
import re

import pytest

from rirag.text.lines import locate


def _pattern(passage: str, text: str, cursor: int) -> tuple[int, int] | None:
    """The former implementation: a pattern of the words joined by ``\\s+``, searched from the cursor."""
    words = text.split()
    if not words or len(words) > 2000:
        return None
    match = re.compile(r"\s+".join(re.escape(w) for w in words)).search(passage, cursor)
    return (match.start(), match.end()) if match else None


PASSAGE = "1.1  A firm must\nkeep records.\n\n(a) for\u00a0five years; and\n(b) records\tof trades."


@pytest.mark.parametrize("text, cursor, expected", [
    ("A firm must keep records.", 0, (5, 30)),         # a line break between two words
    ("keep records.", 0, (17, 30)),
    ("records", 0, (22, 29)),                          # the first from the cursor ...
    ("records", 23, (60, 67)),                         # ... and past it (inside the first, it is skipped)
    ("for five years; and", 0, (36, 55)),              # a no-break space is whitespace
    ("records of trades.", 40, (60, 78)),              # a tab
    ("ecords of", 0, (61, 70)),                        # not necessarily at a word's start
    ("five  years;\n", 0, (40, 51)),                   # the text's own whitespace does not matter
    ("records of cats", 0, None),
    ("A firm", 6, None),
    ("", 0, None),
])
def test_locate_finds_the_words_with_any_whitespace_between(text, cursor, expected):
    assert locate(PASSAGE, text, cursor) == expected == _pattern(PASSAGE, text, cursor)


def test_locate_agrees_with_the_pattern_it_replaced():
    rng = random.Random(7)
    pieces = ["a", "b", "ab", "(a)", "x.", " ", "  ", "\n", "\t", "\u00a0", "\u2003", "\x1c"]
    for _ in range(3000):
        passage = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        words = passage.split()
        if words and rng.random() < 0.7:
            start = rng.randrange(len(words))
            text = " ".join(words[start:rng.randint(start + 1, len(words))])
            text = text[rng.randrange(len(text)):] if rng.random() < 0.3 else text
        else:
            text = " ".join(rng.choice(pieces) for _ in range(3))
        cursor = rng.randint(-1, len(passage) + 1)
        assert locate(passage, text, cursor) == _pattern(passage, text, cursor), (passage, text, cursor)
