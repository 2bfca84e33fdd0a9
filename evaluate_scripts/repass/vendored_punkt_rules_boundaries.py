# Vendored for the RePASs evaluate metric from punkt.rules.boundaries by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""Finding the places where a sentence *could* end.

This is BetterPunkt's "boundary context finder" — NLTK's ``period_context_re``
lifted out of ``PunktLanguageVars`` and given a name.  It answers a cheap
question ("where are the candidate boundaries, and what surrounds them?") so
that the expensive question ("is this one real?") only has to be asked at a
handful of offsets rather than at every token.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from typing import FrozenSet, Iterator, List, Optional, Set, Tuple

from .vendored_punkt_rules_language import DEFAULT_LANGUAGE_VARS, LanguageVars

__all__ = ["BoundaryCandidate", "PunktBoundaryDetector"]


_PERIOD_CONTEXT_TEMPLATE = r"""
    {sent_end}                       # a character that could end a sentence
    (?=(?P<after_tok>
        {non_word}                   # followed either by more punctuation
        |
        \s{gap}(?P<next_tok>\S+)     # or by the next token
    ))"""


@cache
def _compile_period_context_regex(lang_vars: LanguageVars) -> re.Pattern[str]:
    """Build the candidate-boundary regex for a rule set, once per rule set.

    ``\\s+`` becomes ``\\s*`` when the language does not put a space between
    sentences, which is the difference between finding every boundary in
    Chinese and finding none at all.
    """
    return re.compile(
        _PERIOD_CONTEXT_TEMPLATE.format(
            sent_end=lang_vars.sent_end_char_class,
            non_word=lang_vars.non_word_char_class,
            gap="+" if lang_vars.next_sentence_requires_space else "*",
        ),
        re.UNICODE | re.VERBOSE,
    )


@dataclass(frozen=True)
class BoundaryCandidate:
    """One place in a text where a sentence might end.

    ``context`` is the slice of text the classifier actually looks at: the word
    before the punctuation, the punctuation itself, and enough of what follows
    to identify the next token.  Keeping it to that window is what makes
    tokenization proportional to the number of candidate boundaries rather than
    to the length of the text.
    """

    punct: str
    """The sentence-ending character that was matched."""

    after_tok: str
    """Everything the lookahead consumed after ``punct``."""

    next_tok: Optional[str]
    """The next word token, or ``None`` when ``punct`` is followed directly by
    more punctuation rather than by whitespace."""

    start: int
    """Offset of ``punct`` in the source text."""

    end: int
    """Offset just past ``punct`` in the source text."""

    context: str
    """The preceding word plus ``punct`` plus ``after_tok``."""

    next_tok_start: Optional[int] = None
    """Offset of ``next_tok`` in the source text, when there is one."""


class PunktBoundaryDetector:
    """Locates candidate sentence boundaries and the context around each.

        >>> detector = PunktBoundaryDetector()
        >>> [(c.punct, c.next_tok) for c in detector.detect("How?! You knew?!")]
        [('!', 'You'), ('?', None)]

    Note that the ``?`` in ``How?!`` is *not* reported: it overlaps the ``!``
    that follows it, and only the last punctuation mark in a run is a real
    candidate.  See :meth:`detect` for why that de-overlapping has to happen
    here rather than in the regex.
    """

    __slots__ = ("_lang_vars", "_regex")

    def __init__(self, lang_vars: Optional[LanguageVars] = None) -> None:
        self._lang_vars = lang_vars if lang_vars is not None else DEFAULT_LANGUAGE_VARS
        self._regex = _compile_period_context_regex(self._lang_vars)

    @property
    def lang_vars(self) -> LanguageVars:
        """The rule set this detector was built from."""
        return self._lang_vars

    def match(self, text: str) -> Iterator[re.Match[str]]:
        """Yield the raw regex matches, one per sentence-ending character.

        Matches overlap in runs like ``!!!``; :meth:`detect` resolves that.
        """
        return self._regex.finditer(text)

    def detect(self, text: str) -> Iterator[BoundaryCandidate]:
        """Yield the non-overlapping candidate boundaries in ``text``.

        The regex matches a single punctuation character and looks ahead, so
        for ``"Very bad acting!!! I promise."`` it produces three matches, one
        per ``!``.  Only the last of them is a genuine candidate, and its
        context needs the word ``acting`` that precedes the whole run.

        The word before a candidate is found by scanning backwards for
        whitespace rather than by matching it in the regex.  That is a
        deliberate trade: matching the preceding word in the pattern itself is
        what made NLTK's original regex quadratic (nltk#2866), so we pay a
        linear backwards scan and keep the regex linear.

        Periods interior to a multi-character punctuation run are skipped.  The
        word tokenizer already treats ``. . .`` as a single ellipsis token, but
        the boundary regex sees three independent periods, so NLTK splits
        ``"Wait . . . what?"`` into four "sentences".  Only the final character
        of such a run can end a sentence.
        """
        interior = _multi_char_interior(text, self._lang_vars)
        spaced = self._lang_vars.next_sentence_requires_space

        previous_slice = slice(0, 0)
        previous_match: Optional[re.Match[str]] = None

        for match in self._regex.finditer(text):
            if match.start() in interior:
                continue

            preceding = text[previous_slice.stop : match.start()]
            space_index = _last_whitespace_index(preceding)
            if space_index:
                # +1 so the word starts after the space, not on it.
                word_start = previous_slice.stop + space_index + 1
            elif not spaced and preceding:
                # Unspaced script: there is real text between this candidate and
                # the last one, so they are separate sentences rather than a run
                # of punctuation. Falling back to `previous_slice.start` here —
                # correct for "acting!!!", where nothing separates the marks —
                # would make every candidate look like it overlapped its
                # predecessor, and all but the last would be discarded.
                word_start = previous_slice.stop
            else:
                word_start = previous_slice.start
            word_slice = slice(word_start, match.start())

            # If this candidate's word overlaps the previous candidate, the
            # previous one was mid-run and is not a boundary; drop it.
            if previous_match is not None and previous_slice.stop <= word_slice.start:
                yield _build_candidate(text, previous_match, previous_slice)

            previous_match = match
            previous_slice = word_slice

        if previous_match is not None:
            yield _build_candidate(text, previous_match, previous_slice)

    def detect_tuples(self, text: str) -> List[Tuple[str, str, Optional[str]]]:
        """Return ``(punct, after_tok, next_tok)`` triples.

        Provided for parity with NLTK's ``period_context_re().finditer()``
        output, which is what most existing code inspects.  Unlike
        :meth:`detect`, this reports *every* regex match including overlapping
        ones in a punctuation run.
        """
        return [
            (m.group(), m.group("after_tok"), m.group("next_tok"))
            for m in self._regex.finditer(text)
        ]


def _build_candidate(
    text: str, match: re.Match[str], word_slice: slice
) -> BoundaryCandidate:
    """Assemble a :class:`BoundaryCandidate` from a match and its preceding word."""
    next_tok = match.group("next_tok")
    return BoundaryCandidate(
        punct=match.group(),
        after_tok=match.group("after_tok"),
        next_tok=next_tok,
        start=match.start(),
        end=match.end(),
        context=text[word_slice] + match.group() + match.group("after_tok"),
        next_tok_start=match.start("next_tok") if next_tok else None,
    )


@cache
def _compile_multi_char_regex(lang_vars: LanguageVars) -> re.Pattern[str]:
    """Compile the multi-character punctuation pattern for a rule set."""
    return re.compile(lang_vars.multi_char_punct_pattern, re.UNICODE)


def _multi_char_interior(text: str, lang_vars: LanguageVars) -> FrozenSet[int]:
    """Return the offsets that sit *inside* a multi-character punctuation run.

    The final character of each run is excluded: an ellipsis can legitimately
    end a sentence, so ``"He paused... Then spoke."`` must still be able to
    break at the last period.  Only the characters before it are suppressed.
    """
    interior: Set[int] = set()
    for match in _compile_multi_char_regex(lang_vars).finditer(text):
        # ``match.end() - 1`` is the last character, which stays eligible.
        interior.update(range(match.start(), match.end() - 1))
    return frozenset(interior)


_WHITESPACE = frozenset(string.whitespace)


def _last_whitespace_index(text: str) -> int:
    """Return the index of the last whitespace character, or 0 if there is none.

    Returning 0 for "no whitespace" is intentional and load-bearing: callers
    treat a falsy result as "this candidate's word runs back to wherever the
    previous one ended".
    """
    for index in range(len(text) - 1, -1, -1):
        if text[index] in _WHITESPACE:
            return index
    return 0
