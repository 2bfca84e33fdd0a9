# Vendored for the RePASs evaluate metric from punkt.rules.words by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""The word tokenizer Punkt runs before it does anything else.

This is the component BetterPunkt calls "that word tokenizer inside
``PunktLanguageVars``".  It splits punctuation off words *except* the period,
because deciding what a period means is the whole point of the algorithm that
follows.

It is a genuine tokenizer in its own right and is exported as one — you can use
:class:`PunktWordTokenizer` without ever touching a trained model.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Iterator, List, Optional

from .vendored_punkt_rules_language import DEFAULT_LANGUAGE_VARS, LanguageVars
from .vendored_punkt_rules_tokens import PunktToken

__all__ = ["PunktWordTokenizer"]


_WORD_TOKENIZE_TEMPLATE = r"""(
    {multi_char}                                   # ellipsis, "--", etc.
    |
    (?={word_start})\S+?                           # a word, lazily consumed...
    (?=                                            # ...up to whatever ends it:
        \s                                         #   whitespace
        |$                                         #   end of string
        |{non_word}|{multi_char}                   #   punctuation
        |,(?=$|\s|{non_word}|{multi_char})         #   a comma that ends the word
    )
    |
    \S                                             # any single non-space char
)"""


@cache
def _compile_word_regex(lang_vars: LanguageVars) -> re.Pattern[str]:
    """Build the word-splitting regex for a rule set, once per rule set.

    The lazy ``\\S+?`` combined with the lookahead alternation is what keeps
    this linear: the engine never has to backtrack across a whole word to try
    a different split point.  (NLTK's pre-3.6.6 pattern also matched the word
    *preceding* a boundary and was quadratic — CVE-worthy on adversarial input,
    reported as nltk#2866.)
    """
    return re.compile(
        _WORD_TOKENIZE_TEMPLATE.format(
            multi_char=lang_vars.multi_char_punct_pattern,
            word_start=lang_vars.word_start_char_class,
            non_word=lang_vars.non_word_char_class,
        ),
        re.UNICODE | re.VERBOSE,
    )


class PunktWordTokenizer:
    """Splits text into Punkt's notion of words.

    Punctuation is separated from words, with the deliberate exception of a
    trailing period, which stays attached::

        >>> PunktWordTokenizer().tokenize("Dr. Smith paid $5.99, then left!")
        ['Dr.', 'Smith', 'paid', '$5.99', ',', 'then', 'left', '!']

    ``Dr.`` keeps its period because at this stage we do not yet know whether
    that period ends a sentence.
    """

    __slots__ = ("_lang_vars", "_regex")

    def __init__(self, lang_vars: Optional[LanguageVars] = None) -> None:
        self._lang_vars = lang_vars if lang_vars is not None else DEFAULT_LANGUAGE_VARS
        self._regex = _compile_word_regex(self._lang_vars)

    @property
    def lang_vars(self) -> LanguageVars:
        """The rule set this tokenizer was built from."""
        return self._lang_vars

    def tokenize(self, text: str) -> List[str]:
        """Return the word tokens in ``text``."""
        return self._regex.findall(text)

    def tokenize_annotated(self, text: str) -> Iterator[PunktToken]:
        """Yield :class:`PunktToken` objects tagged with layout information.

        Punkt's first pass needs to know which tokens begin a line and which
        begin a paragraph, because a token at the start of a line gives no
        evidence about whether the preceding period was a sentence break, while
        a token after a blank line gives quite a lot.

        This is NLTK's ``_tokenize_words``, minus its dependence on a mutable
        ``_Token`` attribute hanging off the base class.
        """
        parastart = False
        for line in text.split("\n"):
            if not line.strip():
                # A blank line ends a paragraph; the next real token starts one.
                parastart = True
                continue

            tokens = self.tokenize(line)
            if not tokens:
                continue

            yield PunktToken(tokens[0], parastart=parastart, linestart=True)
            parastart = False
            for token in tokens[1:]:
                yield PunktToken(token)
