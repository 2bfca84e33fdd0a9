"""The question-focused answerer (``--generator focused``, the default): the units of the retrieved passages that
answer the question, each cited, and a plain statement when none does.

For one question and its retrieved (filtered) passages, in retrieval order:

1. split each passage into answer units (:mod:`rirag.text.units`: a sentence, or a list lead-in with all its
   items; never a bare item or a heading);
2. describe every unit by :data:`~rirag.generation.focused.scorer.FEATURES`: its cosine with the question (the
   wheel's MiniLM, zero-shot), BM25 over the question's units, the lexical coverage of
   :mod:`rirag.retrieval.lexical`, its passage's retrieval score and rank, whether it states an obligation (the
   obligation classifier when trained, else deontic cues), its position and length, and the same measures relative
   to the best unit of the question;
3. score it with a logistic model learned on the leakage-free ``train`` split (a unit of a gold passage is a
   positive for its question; ``train/focused_scorer.py``, weights frozen in ``focused_scorer.json``, read and
   applied by :mod:`.scorer`);
4. decide which passages to cite (the *passage gate*): each passage's score is its retrieval score plus
   :attr:`FocusedConfig.passage_weight` times its best unit's score; the best passage is cited, and so is every
   other passage within :attr:`FocusedConfig.passage_margin` of it, at most :attr:`FocusedConfig.max_passages`.
   Each cited passage contributes its best unit that fits; further units of cited passages are kept while their
   score stays within :attr:`FocusedConfig.keep_ratio` of the best one and above :attr:`FocusedConfig.min_score`,
   within a word budget (:attr:`FocusedConfig.max_words`). Without a gate (``passage_margin`` unset in the scorer
   and the config) units of any passage compete on score alone. With :attr:`FocusedConfig.passage_set`
   (``--passage-set``) the passages are decided as a set instead (:mod:`.passage_set`: the gate's best passage,
   then each passage a learned model says the question needs, measured by what it adds to the lead, whether it
   repeats it, its place in the rulebook beside the lead's and its cross-reference link to it; each decided passage
   is quoted through a unit of at most ``extra_unit_words``, cut to it when longer, and adds that many words to the
   answer's bound), and a cited rule that another cited rule refers to is quoted
   right after it, its number marked at the reference (:func:`.follow.connect_linked`);
5. keep the units most relevant first (the best passage's best unit leads), each a part of the answer's draft
   (:class:`~rirag.generation.base.Draft`) citing its passage (and its near-duplicates' passages), written out by
   :func:`rirag.generation.render.render`;
   With :attr:`FocusedConfig.focus_lists` (off by default), a kept list unit longer than
   :attr:`FocusedConfig.focus_list_min_words` with at least three top-level items is quoted as its lead-in and only
   the items closest to the question (:func:`.selection.focus_lists`), "[…]" where items are left out;
6. score the question's *answerability* (a second logistic model over the best unit's question-match measures,
   learned on ``train`` from matched and mismatched question/passage pairs): below its threshold the answer
   starts with :data:`~rirag.text.units.NOT_ADDRESSED` and then gives the closest provisions, cited.

Every answer is also returned as scored spans (:class:`.answer.FocusedAnswer`: unit text, passage number, character
offsets, score), so a caller can trace each sentence to its rule without re-parsing the text.

The modules, each importing only those listed after it: :mod:`.answerer` (the answerer: models, steps 1-6, the
answerer interface), :mod:`.follow` (following cross-references: it sees the answerer only through its
:class:`~.follow.UnitScorer` protocol), :mod:`.answer` (the answer and its draft) and :mod:`.selection` (steps 4 and
5), :mod:`.passage_set` (the passage-set decision and its frozen model, ``passage_set.json``), :mod:`.scorer`
(features and the frozen scorer, ``focused_scorer.json``) and :mod:`.config`
(:class:`~.config.FocusedConfig` and its switches; nothing heavy, the command reads it).

The names below load their module when first used (``from rirag.generation.focused import FocusedAnswerer``
imports numpy then, not before), so the command can read the switches without loading the answerer.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module of this package that defines it (loaded when the name is first used).
_EXPORTS = {
    "FocusedAnswerer": "answerer",
    "FocusedAnswer": "answer",
    "Followed": "answer",
    "Added": "answer",
    "FocusedConfig": "config",
    "SWITCHES": "config",
    "ScoredUnit": "scorer",
    "FEATURES": "scorer",
    "ANSWERABILITY_FEATURES": "scorer",
    "load_scorer": "scorer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
