"""Quoting every cited rule whole (issue 64: "a rule is the unit of an answer").

The selection (:mod:`rirag.generation.focused.selection`) decides which passages an answer cites and the units
(sentences, a list with its lead-in, a table row) that answer best; quoting only those loses the rule's conditions,
its exceptions, its other limbs, which is what graders found missing ("quotes only the first sentence", "the lead-in
without its conditions"). This pass keeps the cited passages and their order and quotes each one whole, every unit
in passage order, when the rule is short enough to be read as one (``rule_max_words``) and the answer stays within
``answer_max_words``; a longer rule keeps the units the selection chose, in passage order, its lists focused and its
cuts marked as the selection left them. A unit that the selection kept is kept as it is (its inline markers of
followed references, its near-duplicates' citations); the others come from the passage, scored as the answer scored
them (or, for a passage a followed reference added, split here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rirag.generation.focused.answer import FocusedAnswer
from rirag.generation.focused.scorer import ScoredUnit
from rirag.text.units import Unit, split_units


def _words(units: Sequence[ScoredUnit | Unit]) -> int:
    return sum((u.unit if isinstance(u, ScoredUnit) else u).words for u in units)


def _passage_units(answer: FocusedAnswer, texts: Sequence[str], p: int,
                   split: Callable[[str], Sequence[str]] | None) -> list[ScoredUnit]:
    """Every unit of the ``p``-th passage in passage order, as the answer scored it (split here when unscored)."""
    scored = sorted((s for s in answer.scored if s.unit.passage == p), key=lambda s: s.unit.index)
    if scored or p >= len(texts):
        return scored
    return [ScoredUnit(u, 0.0) for u in split_units(texts[p], p, split)]


def _whole(kept: Sequence[ScoredUnit], units: Sequence[ScoredUnit]) -> list[ScoredUnit]:
    """``units`` (a passage's, in order) with the kept ones in their place: a kept unit replaces the unit it was
    made from (same start), unless it was cut (then the whole unit, carrying the kept one's citations of
    near-duplicates; its inline markers stay valid, the cut text being the whole one's start)."""
    by_start = {k.unit.start: k for k in kept}
    out = []
    for s in units:
        k = by_start.get(s.unit.start)
        if k is None:
            out.append(s)
        elif k.unit.clipped or k.unit.spans:
            inline = k.inline if not k.unit.spans else ()
            out.append(replace(s, also=k.also, inline=inline, score=k.score, passage_score=k.passage_score))
        else:
            out.append(k)
    return out


def whole_rules(answer: FocusedAnswer, passages: Sequence[str], rule_max_words: int, answer_max_words: int,
                split: Callable[[str], Sequence[str]] | None = None) -> FocusedAnswer:
    """``answer`` with each cited rule quoted whole where it fits (see the module); unchanged when nothing is
    kept."""
    if not answer.kept:
        return answer
    texts = [*passages, *(a.text for a in answer.added)]
    order = list(dict.fromkeys(k.unit.passage for k in answer.kept))
    kept_of = {p: [k for k in answer.kept if k.unit.passage == p] for p in order}
    chosen: dict[int, list[ScoredUnit]] = {p: sorted(kept_of[p], key=lambda s: s.unit.index) for p in order}
    used = _words(answer.kept)
    for p in order:  # the cited rules in the answer's order: the lead first
        units = _passage_units(answer, texts, p, split)
        whole = _whole(kept_of[p], units)
        extra = _words(whole) - _words(chosen[p])
        if not units or _words(units) > rule_max_words or extra <= 0 or used + extra > answer_max_words:
            continue
        chosen[p], used = whole, used + extra
    kept = [s for p in order for s in chosen[p]]
    return answer if kept == list(answer.kept) else replace(answer, kept=kept)
