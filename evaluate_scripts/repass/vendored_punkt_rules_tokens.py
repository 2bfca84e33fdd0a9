# Vendored for the RePASs evaluate metric from punkt.rules.tokens by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""The annotated token Punkt passes between its stages.

A :class:`PunktToken` is a string plus two kinds of information:

* **Derived properties** — is it an initial, a number, an ellipsis?  These are
  functions of the surface form alone and are computed on demand.
* **Annotations** — is it an abbreviation, does it end a sentence?  These start
  out unknown and are filled in by the first and second annotation passes.

Keeping the two apart is the point.  NLTK's ``PunktToken`` sets all five
annotation slots to ``None`` in ``__init__`` and then lets any pass assign any
of them, so reading the class tells you nothing about which stage owns what.
Here the derived properties are read-only and the annotations are explicit
fields with a documented owner.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["NUMBER_TYPE", "PunktToken", "has_word_char"]


# The "type" of a token is its case-normalised form with numbers collapsed, so
# that "1997", "1,000" and "3.14" all count as evidence about the same thing.
NUMBER_TYPE = "##number##"

_RE_NUMERIC = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_RE_ELLIPSIS = re.compile(r"\.\.+$")
_RE_INITIAL = re.compile(r"[^\W\d]\.$", re.UNICODE)
_RE_ALPHA = re.compile(r"[^\W\d]+$", re.UNICODE)
_RE_NON_PUNCT = re.compile(r"[^\W\d]", re.UNICODE)


def has_word_char(type_: str) -> bool:
    """Whether ``type_`` contains a character that is neither digit nor punctuation.

    ``[^\\W\\d]`` is the Unicode-aware stand-in for ``[A-Za-z]`` used throughout
    Punkt.  It also admits the underscore, which ``str.isalpha`` does not — a
    difference that matters for types like ``snake_case.``, so the regex is
    kept rather than replaced with the more obvious method call.
    """
    return _RE_NON_PUNCT.search(type_) is not None


class PunktToken:
    """A word token carrying the annotations Punkt accumulates about it.

    ``__slots__`` is not micro-optimisation here: a training run over a large
    corpus holds millions of these at once, and the slots roughly halve the
    resident size versus a ``__dict__``-backed object.
    """

    __slots__ = (
        "abbr",
        "ellipsis",
        "linestart",
        "parastart",
        "period_final",
        "sentbreak",
        "tok",
        "type",
    )

    #: Names of the mutable annotation fields, in the order they are reported.
    ANNOTATIONS = ("parastart", "linestart", "sentbreak", "abbr", "ellipsis")

    def __init__(
        self,
        tok: str,
        *,
        parastart: Optional[bool] = None,
        linestart: Optional[bool] = None,
        sentbreak: Optional[bool] = None,
        abbr: Optional[bool] = None,
        ellipsis: Optional[bool] = None,
    ) -> None:
        self.tok = tok
        self.type = _RE_NUMERIC.sub(NUMBER_TYPE, tok.lower())
        self.period_final = tok.endswith(".")

        # Set by the word tokenizer, from the text's layout.
        self.parastart = parastart
        self.linestart = linestart

        # Set by the annotation passes.  ``None`` means "not yet decided",
        # which is distinct from ``False`` ("decided: no").
        self.sentbreak = sentbreak
        self.abbr = abbr
        self.ellipsis = ellipsis

    # -- Type variants -------------------------------------------------------

    @property
    def type_no_period(self) -> str:
        """The type with a trailing period stripped.

        A bare ``"."`` keeps its period — stripping it would leave an empty
        string, which is not a type.
        """
        if len(self.type) > 1 and self.type.endswith("."):
            return self.type[:-1]
        return self.type

    @property
    def type_no_sentperiod(self) -> str:
        """The type with the period stripped only if it *ends a sentence*.

        This is the form used for counting: ``Dr.`` the abbreviation and
        ``dr`` the ordinary word should not be conflated, but ``end.`` at the
        close of a sentence is the same word as ``end`` anywhere else.
        """
        return self.type_no_period if self.sentbreak else self.type

    # -- Surface-form properties ---------------------------------------------

    @property
    def first_upper(self) -> bool:
        """Whether the first character is uppercase."""
        return bool(self.tok) and self.tok[0].isupper()

    @property
    def first_lower(self) -> bool:
        """Whether the first character is lowercase."""
        return bool(self.tok) and self.tok[0].islower()

    @property
    def first_case(self) -> str:
        """``"upper"``, ``"lower"``, or ``"none"`` for caseless first characters."""
        if self.first_lower:
            return "lower"
        if self.first_upper:
            return "upper"
        return "none"

    @property
    def is_ellipsis(self) -> bool:
        """Whether the token is a run of two or more periods."""
        return _RE_ELLIPSIS.match(self.tok) is not None

    @property
    def is_number(self) -> bool:
        """Whether the token normalised to a number."""
        return self.type.startswith(NUMBER_TYPE)

    @property
    def is_initial(self) -> bool:
        """Whether the token is a single letter followed by a period, e.g. ``S.``"""
        return _RE_INITIAL.match(self.tok) is not None

    @property
    def is_alpha(self) -> bool:
        """Whether the token is entirely alphabetic, with no trailing period."""
        return _RE_ALPHA.match(self.tok) is not None

    @property
    def is_non_punct(self) -> bool:
        """Whether the type contains anything other than punctuation.

        Numbers count, because their type is ``##number##``, which contains
        letters.
        """
        return _RE_NON_PUNCT.search(self.type) is not None

    # -- Representations -----------------------------------------------------

    def __repr__(self) -> str:
        parts = [repr(self.tok)]
        if self.type != self.tok:
            parts.append(f"type={self.type!r}")
        parts.extend(
            f"{name}={getattr(self, name)!r}"
            for name in self.ANNOTATIONS
            if getattr(self, name)
        )
        return f"{type(self).__name__}({', '.join(parts)})"

    def __str__(self) -> str:
        """The token with Kiss & Strunk's annotation suffixes.

        ``<A>`` marks an abbreviation, ``<E>`` an ellipsis, ``<S>`` a sentence
        break — the notation used throughout the paper, which makes an
        annotated token stream readable when debugging.
        """
        result = self.tok
        if self.abbr:
            result += "<A>"
        if self.ellipsis:
            result += "<E>"
        if self.sentbreak:
            result += "<S>"
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PunktToken):
            return NotImplemented
        return self.tok == other.tok and all(
            getattr(self, name) == getattr(other, name) for name in self.ANNOTATIONS
        )

    def __hash__(self) -> int:
        return hash((self.tok, *(getattr(self, n) for n in self.ANNOTATIONS)))
