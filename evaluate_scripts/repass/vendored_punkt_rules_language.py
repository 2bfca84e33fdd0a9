# Vendored for the RePASs evaluate metric from punkt.rules.language by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""Language-dependent constants — the *rules* layer.

Everything Punkt knows before it has seen any training data lives here: which
characters can end a sentence, which count as internal punctuation, which may
be pulled back across a boundary.  Nothing in this module is learned, and
nothing in it holds mutable state.

NLTK packs all of this into a single ``PunktLanguageVars`` class that also
compiles and caches the tokenizer regexes as instance attributes, which makes
the rules, the regex construction, and the caching hard to separate.  Here the
configuration is an immutable value object; the regex construction lives in
:mod:`punkt.rules.words` and :mod:`punkt.rules.boundaries`, which take a
:class:`LanguageVars` and build themselves from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Tuple

__all__ = ["DEFAULT_LANGUAGE_VARS", "LanguageVars"]


# Closing quotes and brackets that should be pulled back onto the sentence they
# follow, so a sentence ending in a typographic quote realigns the way an ASCII
# one does.
#
# Only genuine *closers*.  NLTK's fix for this (PR #3728) added ‘ ’ “ ” as a
# block, but ‘ (U+2018) and “ (U+201C) open a quotation — pulling them back
# glues the *next* sentence's opening quote onto the end of this one, which
# then hides the boundary entirely.  Measured on WMT24++ that was the single
# remaining missed boundary in English.
#
# The guillemets stay: « opens in French and closes in German, so neither
# choice is right for both, and the pattern is per-language anyway.
_DEFAULT_REALIGNMENT = r'["\')\]}’”\xab\xbb]+?(?:\s+|(?=--)|$)'

# Punctuation that can neither start nor appear inside a word.  The
# sentence-ending characters are added to this set at build time, minus the
# period: a period is only a boundary in context, whereas "!" and "?" always
# terminate the token they follow.
_BASE_NON_WORD_CHARS = ")\";}]*:@'({[‘’“”\xab\xbb"


@dataclass(frozen=True)
class LanguageVars:
    """Immutable, hashable description of a language's punctuation conventions.

    Subclassing is not required to support a new language — build a new value
    instead::

        turkish = LanguageVars(internal_punctuation=",:;")
        greek = LanguageVars(sent_end_chars=(".", ";", "!"))

    Because instances are frozen and hashable, the compiled regexes derived
    from them can be memoised safely (see :mod:`punkt.rules.words`).
    """

    sent_end_chars: Tuple[str, ...] = (".", "?", "!")
    """Characters that are candidate sentence boundaries."""

    internal_punctuation: str = ",:;"
    """Sentence-internal punctuation.  A period-final token followed by one of
    these is evidence for an abbreviation rather than a sentence break."""

    boundary_realignment_pattern: str = _DEFAULT_REALIGNMENT
    """Trailing punctuation that belongs to the sentence before it."""

    word_start_exclusions: str = '("`{[:;&#*@)}]-,'
    """Characters a word token may not begin with."""

    non_word_chars: str = _BASE_NON_WORD_CHARS
    """Characters that may not appear inside a word.  The sentence-ending
    characters other than ``.`` are added to this set automatically."""

    multi_char_punct_pattern: str = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"
    """Hyphen runs and ellipses, which tokenize as a single unit."""

    next_sentence_requires_space: bool = True
    """Whether a new sentence must be separated from the last by whitespace.

    True for languages written with spaces between words, and it is what makes
    Punkt cheap: a period is only a boundary candidate when whitespace or
    punctuation follows, so ``3.14`` is never even considered.

    Chinese and Japanese put no space anywhere, so ``。`` is followed directly
    by the first character of the next sentence.  With this left at ``True``
    those texts produce *zero* boundary candidates and come back as a single
    sentence — the failure is total, not merely inaccurate.  Set it to ``False``
    for such scripts; see :mod:`punkt.rules.presets`.

    Turning it off for a space-separated language is a bad idea: every decimal
    point and every abbreviation becomes a candidate, and correctness then rests
    entirely on the statistical model rejecting them."""

    def __post_init__(self) -> None:
        if not self.sent_end_chars:
            raise ValueError("sent_end_chars must not be empty")
        for char in self.sent_end_chars:
            if len(char) != 1:
                raise ValueError(
                    f"sent_end_chars entries must be single characters, got {char!r}"
                )

    # -- Derived character classes -------------------------------------------
    #
    # These are plain properties rather than cached attributes: they are cheap
    # string operations, and keeping them re-derivable is what lets the whole
    # object stay frozen.  The regexes that embed them *are* cached, one level
    # up, keyed on the LanguageVars instance.

    @property
    def sent_end_char_class(self) -> str:
        """Character class matching any sentence-ending character."""
        return f"[{re.escape(''.join(sorted(set(self.sent_end_chars))))}]"

    @property
    def non_word_char_class(self) -> str:
        """Character class matching any character that cannot occur in a word.

        The period is deliberately excluded even when it is a sentence-ending
        character: ``Dr.`` must tokenize as one token, whereas ``Wow!`` must
        split into ``Wow`` and ``!``.
        """
        chars = set(self.non_word_chars) | (set(self.sent_end_chars) - {"."})
        return f"(?:[{re.escape(''.join(sorted(chars)))}])"

    @property
    def word_start_char_class(self) -> str:
        """Character class matching any character a word may start with."""
        return f"[^{re.escape(''.join(sorted(set(self.word_start_exclusions))))}]"


DEFAULT_LANGUAGE_VARS = LanguageVars()
"""The conventions shared by the Latin-script European languages Punkt was
originally evaluated on.  Used whenever no other rules are supplied."""
