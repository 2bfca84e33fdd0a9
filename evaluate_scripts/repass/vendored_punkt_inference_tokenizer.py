# Vendored for the RePASs evaluate metric from punkt.inference.tokenizer by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""Splitting text into sentences with a trained model — the *inference* layer.

:class:`PunktSentenceTokenizer` takes a finished
:class:`~punkt.model.parameters.PunktParameters` and never modifies it.  It
cannot train; construct a model with :mod:`punkt.training` and pass it in.

That split is deliberate.  NLTK's ``PunktSentenceTokenizer`` accepts a training
string in its constructor and grows a ``train()`` method, so a class whose job
is to apply a model also owns a copy of the learner.  Separating them means the
tokenizer's whole surface is "text in, sentences out", and the model it holds is
immutable for the object's lifetime.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from .vendored_punkt_annotate import Decision, annotate_first_pass, annotate_tokens, ortho_heuristic, second_pass_annotation
from .vendored_punkt_model_parameters import PunktParameters
from .vendored_punkt_rules_boundaries import PunktBoundaryDetector
from .vendored_punkt_rules_language import DEFAULT_LANGUAGE_VARS, LanguageVars
from .vendored_punkt_rules_tokens import PunktToken
from .vendored_punkt_rules_words import PunktWordTokenizer

__all__ = ["PunktSentenceTokenizer"]

#: Characters that end a line.  ``\n`` is the common one; U+2028 LINE SEPARATOR
#: and U+2029 PARAGRAPH SEPARATOR are what text extracted from PDFs, word
#: processors and JavaScript sources tends to carry, and a splitter that only
#: knows ``\n`` silently runs those documents together.
_LINE_BREAK = "\n\u2028\u2029"

#: How a hard line break may be treated. ``None`` means "punctuation only".
_LINE_BREAK_MODES: Dict[str, Optional[re.Pattern[str]]] = {
    "ignore": None,
    # U+2029 means "paragraph separator" all by itself, so one is enough; for
    # the others it takes two, with nothing but spaces or tabs between them.
    "paragraph": re.compile(r"(?:\u2029|[\n\u2028][ \t]*[\n\u2028])\s*"),
    "always": re.compile(rf"[{_LINE_BREAK}]\s*"),
}


@cache
def _compile_realignment(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


class PunktSentenceTokenizer:
    """Splits text into sentences using a trained Punkt model.

        >>> from punkt import load_model
        >>> tokenizer = PunktSentenceTokenizer(load_model("english"))
        >>> tokenizer.tokenize("Dr. Smith went home. He was tired.")
        ['Dr. Smith went home.', 'He was tired.']

    Whitespace inside a sentence is preserved exactly as it appeared in the
    source, including newlines; only the whitespace *between* sentences is
    dropped.  Use :meth:`span_tokenize` when you need offsets rather than text.
    """

    __slots__ = (
        "_boundaries",
        "_line_break_re",
        "_line_breaks",
        "_params",
        "_realign_re",
        "_rules",
        "_words",
    )

    def __init__(
        self,
        params: PunktParameters,
        *,
        rules: Optional[LanguageVars] = None,
        line_breaks: str = "ignore",
    ) -> None:
        """
        :param params: a trained model.  Not modified.
        :param rules: language conventions; defaults to the European ones.
        :param line_breaks: how to treat a hard line break in the source text.

            ``"ignore"`` (default)
                Punctuation alone decides — Punkt as published, and as NLTK
                implements it.
            ``"paragraph"``
                A blank line always ends a sentence.
            ``"always"``
                Any newline always ends a sentence.

            Punkt keys entirely off punctuation, so text that ends a sentence
            by *layout* rather than with a period — a headline, a caption, a
            list item — is invisible to it.  Measured against WMT24++, that
            accounts for almost every segment boundary the English model
            misses.  This is nltk#2460 and nltk#3135, both unresolved upstream.

            The default stays ``"ignore"`` because breaking on newlines is not
            always right: hard-wrapped prose puts them mid-sentence.  Choose by
            how your text is formatted, not by which score looks better.
        """
        if line_breaks not in _LINE_BREAK_MODES:
            raise ValueError(
                f"line_breaks must be one of "
                f"{', '.join(sorted(_LINE_BREAK_MODES))}, got {line_breaks!r}"
            )
        self._params = params
        self._rules = rules if rules is not None else DEFAULT_LANGUAGE_VARS
        self._words = PunktWordTokenizer(self._rules)
        self._boundaries = PunktBoundaryDetector(self._rules)
        self._realign_re = _compile_realignment(
            self._rules.boundary_realignment_pattern
        )
        self._line_breaks = line_breaks
        self._line_break_re = _LINE_BREAK_MODES[line_breaks]

    @property
    def line_breaks(self) -> str:
        """How hard line breaks are being treated."""
        return self._line_breaks

    @property
    def params(self) -> PunktParameters:
        """The model in use.  Treat it as read-only."""
        return self._params

    @property
    def rules(self) -> LanguageVars:
        """The language rules in use."""
        return self._rules

    # -- Primary API ---------------------------------------------------------

    def tokenize(self, text: str, *, realign_boundaries: bool = True) -> List[str]:
        """Return the sentences in ``text``.

        :param realign_boundaries: Pull trailing closing punctuation back onto
            the sentence it belongs to, so that ``"(Hi there.) Bye."`` splits
            after the ``)`` rather than before it.  Turning this off exposes the
            raw boundary positions, which is occasionally what you want when
            aligning against another annotation.
        """
        return [
            text[start:end]
            for start, end in self.span_tokenize(
                text, realign_boundaries=realign_boundaries
            )
        ]

    def span_tokenize(
        self, text: str, *, realign_boundaries: bool = True
    ) -> Iterator[Tuple[int, int]]:
        """Yield ``(start, end)`` character offsets, one per sentence."""
        spans = self._raw_spans(text)
        if realign_boundaries:
            spans = self._realign(text, spans)
        yield from spans

    def sentences_from_tokens(self, tokens: Iterable[str]) -> Iterator[List[str]]:
        """Group already-tokenized words into sentences.

        For input that has been word-tokenized elsewhere.  Layout information
        is unavailable, so the orthographic heuristic has less to work with
        than it would on raw text.
        """
        sentence: List[str] = []
        for token in annotate_tokens(
            (PunktToken(t) for t in tokens), self._params, self._rules
        ):
            sentence.append(token.tok)
            if token.sentbreak:
                yield sentence
                sentence = []
        if sentence:
            yield sentence

    # -- Boundary decisions --------------------------------------------------

    def _raw_spans(self, text: str) -> Iterator[Tuple[int, int]]:
        """Yield sentence spans before realignment.

        Only the candidate boundaries found by the detector are classified, so
        the cost is proportional to the number of ``.``/``?``/``!`` characters
        rather than to the token count.
        """
        spans: Iterable[Tuple[int, int]] = self._candidate_spans(text)
        if self._line_break_re is not None:
            spans = self._split_at_line_breaks(text, spans)
        return self._absorb_punctuation_only(text, spans)

    def _split_at_line_breaks(
        self, text: str, spans: Iterable[Tuple[int, int]]
    ) -> Iterator[Tuple[int, int]]:
        """Cut each span further wherever a hard line break falls inside it.

        Applied after the statistical pass rather than instead of it: a line
        break adds boundaries, it never removes one Punkt found. The whitespace
        of the break itself is trimmed off both sides, so the spans stay
        comparable with the punctuation-derived ones.
        """
        pattern = self._line_break_re
        assert pattern is not None  # only called when a mode is active

        for start, end in spans:
            cursor = start
            for match in pattern.finditer(text, start, end):
                piece_end = match.start()
                while piece_end > cursor and text[piece_end - 1].isspace():
                    piece_end -= 1
                if piece_end > cursor:
                    yield cursor, piece_end
                cursor = match.end()
            if cursor < end:
                yield cursor, end
            elif cursor == start:
                yield start, end

    def _candidate_spans(self, text: str) -> Iterator[Tuple[int, int]]:
        """Yield one span per accepted boundary, plus the trailing sentence."""
        last_break = 0
        for candidate in self._boundaries.detect(text):
            if not self._context_has_sentbreak(candidate.context):
                continue
            yield last_break, candidate.end
            if candidate.next_tok_start is not None:
                last_break = candidate.next_tok_start
            else:
                # Followed directly by punctuation, so the next sentence starts
                # at that punctuation rather than after whitespace.
                last_break = candidate.end

        # The trailing sentence stops at the last non-space character.
        yield last_break, len(text.rstrip())

    def _absorb_punctuation_only(
        self, text: str, spans: Iterable[Tuple[int, int]]
    ) -> Iterator[Tuple[int, int]]:
        """Merge spans that are nothing but punctuation into the one before.

        A candidate needs something after it to be found at all, so the final
        character of a text can never be one.  In a run like ``"Wow!!!"`` the
        break therefore lands after the *second* ``!``, stranding the third as a
        sentence of its own.  NLTK carries this as a FIXME in its source header
        — "Problem with ending string with e.g. '!!!' -> '!! !'" — added in 2010
        and still open.

        A span consisting only of sentence-ending characters is not a sentence;
        it is the tail of the one before it.  Applying that as a general rule
        rather than only at the end also collapses degenerate all-punctuation
        input, where NLTK returns one "sentence" per character.

        Costs one span of lookbehind, so spans still stream.
        """
        pending: Optional[Tuple[int, int]] = None

        for span in spans:
            # An empty span is not a sentence.  Text that is blank, or that
            # ends exactly on a boundary, otherwise produces one here — and it
            # used to escape only when `realign_boundaries` was False, since
            # realignment happened to discard it.  That made `tokenize("")`
            # return [] or [''] depending on an unrelated argument.
            if span[0] >= span[1]:
                continue

            if pending is not None and self._is_only_sentence_punctuation(
                text[span[0] : span[1]]
            ):
                pending = (pending[0], span[1])
                continue
            if pending is not None:
                yield pending
            pending = span

        if pending is not None:
            yield pending

    def _is_only_sentence_punctuation(self, text: str) -> bool:
        """Whether ``text`` is a non-empty run of sentence-ending characters."""
        if not text:
            return False
        enders = set(self._rules.sent_end_chars)
        return all(char in enders for char in text)

    def _context_has_sentbreak(self, context: str) -> bool:
        """Whether the boundary inside ``context`` is a real sentence break.

        The last token is ignored: it is only present to give the second pass
        something to look at, and its own annotation is meaningless because
        nothing follows *it*.
        """
        found = False
        for token in annotate_tokens(
            self._words.tokenize_annotated(context), self._params, self._rules
        ):
            if found:
                return True
            if token.sentbreak:
                found = True
        return False

    def _realign(
        self, text: str, spans: Iterable[Tuple[int, int]]
    ) -> Iterator[Tuple[int, int]]:
        """Move trailing closing punctuation onto the preceding sentence.

        Punkt breaks immediately after the period, so ``"(Hi.) Bye."`` splits
        into ``"(Hi."`` and ``") Bye."``.  This walks consecutive span pairs and
        transfers any leading closing quotes or brackets backwards.
        """
        realign = 0
        spans = list(spans)
        for index, (start, end) in enumerate(spans):
            start += realign
            following = spans[index + 1] if index + 1 < len(spans) else None

            if following is None:
                if text[start:end]:
                    yield start, end
                continue

            match = self._realign_re.match(text[following[0] : following[1]])
            if match:
                yield start, following[0] + len(match.group().rstrip())
                realign = match.end()
            else:
                realign = 0
                if text[start:end]:
                    yield start, end

    # -- Diagnostics ---------------------------------------------------------

    def debug_decisions(self, text: str) -> Iterator[Dict[str, Any]]:
        """Explain every candidate boundary in ``text``.

        Yields one dict per candidate describing which heuristics saw what and
        which one decided the outcome.  This is the tool for answering "why did
        it split there?" — pair it with :func:`format_decision`.
        """
        for candidate in self._boundaries.detect(text):
            tokens = list(
                annotate_first_pass(
                    self._words.tokenize_annotated(candidate.context),
                    self._params,
                    self._rules,
                )
            )
            # Drop any leading tokens before the punctuation under test.
            while tokens and not tokens[0].tok.endswith(
                tuple(self._rules.sent_end_chars)
            ):
                tokens.pop(0)
            if len(tokens) < 2:
                continue

            first, second = tokens[0], tokens[1]

            # Order matters and is easy to get wrong: the second pass mutates
            # `first`, turning an initial into an abbreviation.  "Was this a
            # known abbreviation?" is a question about the *model*, so it has
            # to be answered from the first-pass state, before that happens.
            # NLTK gets this right only as a side effect of dict literals
            # evaluating top to bottom.
            was_known_abbrev = bool(first.abbr)

            reason = second_pass_annotation(first, second, self._params)

            yield {
                "period_index": candidate.end - 1,
                "text": candidate.context,
                "type1": first.type,
                "type2": second.type,
                "type1_in_abbrs": was_known_abbrev,
                "type1_is_initial": first.is_initial,
                "type2_is_sent_starter": second.type_no_sentperiod
                in self._params.sent_starters,
                "type2_ortho_heuristic": ortho_heuristic(
                    second, self._params
                ).as_nltk(),
                "type2_ortho_contexts": set(
                    self._params.describe_ortho(second.type_no_sentperiod)
                ),
                "collocation": (
                    first.type_no_sentperiod,
                    second.type_no_sentperiod,
                )
                in self._params.collocations,
                "reason": reason or Decision.DEFAULT,
                "break_decision": bool(first.sentbreak),
            }

    def annotated_tokens(self, text: str) -> Iterator[PunktToken]:
        """Yield every token of ``text`` with both passes applied.

        Slower than :meth:`tokenize`, since it classifies every token rather
        than only the candidates, but it shows the algorithm's full working.
        """
        return annotate_tokens(
            self._words.tokenize_annotated(text), self._params, self._rules
        )

    def __repr__(self) -> str:
        return f"PunktSentenceTokenizer({self._params!r})"


DECISION_FORMAT = """Text: {text!r} (at offset {period_index})
Sentence break? {break_decision} ({reason})
Collocation? {collocation}
{type1!r}:
    known abbreviation: {type1_in_abbrs}
    is initial: {type1_is_initial}
{type2!r}:
    known sentence starter: {type2_is_sent_starter}
    orthographic heuristic suggests is a sentence starter? {type2_ortho_heuristic}
    orthographic contexts in training: {type2_ortho_contexts}
"""


def format_decision(decision: Dict[str, Any]) -> str:
    """Render one :meth:`PunktSentenceTokenizer.debug_decisions` entry as text."""
    return DECISION_FORMAT.format(**decision)
