"""Citing the rule that refers to a cited rule (issue 64: "every rule it needs").

Following (:mod:`rirag.generation.focused.follow`) goes one way: from a cited rule to the rules it refers to. A
question about a rule that applies another ("how does the notice under Rule X interact with the conditions of Rule
Y?") often gets Rule Y as its lead and leaves Rule X, which refers to Y, uncited although it was retrieved: on the
PRA development questions, 12 of the 16 answers that missed one of two retrieved gold rules missed the referring
one. This pass cites, before a cited rule, the given passage that refers to it (a resolved reference of at most
``follow_max_targets`` passages: :meth:`~rirag.generation.focused.answerer.FocusedAnswerer.context_links`) and whose
best unit scores at least ``floor`` against the question; at most ``max_added`` per answer, the best-scoring first.
The referring rule is quoted through the unit holding the reference (else its best unit), the reference marked
inline with the referred rule's number, and recorded as followed, as
:func:`~rirag.generation.focused.follow.connect_linked` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from rirag.generation.focused.answer import FocusedAnswer, Followed
from rirag.generation.focused.follow import inline_offset
from rirag.generation.focused.scorer import ScoredUnit
from rirag.xref.graph import Link

logger = logging.getLogger(__name__)


def _quoting_unit(units: Sequence[ScoredUnit], link: Link) -> ScoredUnit:
    """The unit of a referring passage that quotes the reference, else its best-scoring one."""
    holding = [s for s in units if s.unit.quotes(link.start, link.end)]
    return max(holding or units, key=lambda s: s.score)


def add_referring(answer: FocusedAnswer, passages: Sequence[str], ids: Sequence[str],
                  links: Mapping[tuple[int, int], Link], floor: float, max_added: int = 1) -> FocusedAnswer:
    """``answer`` citing, before a cited rule, a given rule that refers to it (see the module); unchanged when none
    qualifies."""
    lead = answer.kept[0].unit.passage + 1 if answer.kept else None
    if lead is None or any(lead in (f.source, f.target) for f in answer.followed) or max_added <= 0 \
            or len(ids) != len(passages):
        return answer  # an answer whose lead rule is quoted with one it refers to, or that refers to it, has its pair
    cited = {k.unit.passage for k in answer.kept}
    best: dict[int, float] = {}
    for s in answer.scored:
        best[s.unit.passage] = max(best.get(s.unit.passage, 0.0), s.score)
    offers = sorted(((best.get(i, 0.0), i, j, link) for (i, j), link in links.items()
                     if j in cited and i not in cited and i < len(passages) and best.get(i, 0.0) >= floor),
                    key=lambda o: (-o[0], o[1], o[2]))
    kept, followed, added = list(answer.kept), list(answer.followed), set()
    for score, i, j, link in offers:
        if len(added) >= max_added:
            break
        if i in added:
            continue
        logger.debug("citing [%d] (best unit %.4f), which refers to [%d] (%s)", i + 1, score, j + 1, link.surface)
        unit = _quoting_unit([s for s in answer.scored if s.unit.passage == i], link)
        offset = inline_offset(unit.unit, passages[i], link)
        if offset is not None:
            unit = replace(unit, inline=(*unit.inline, (offset, j)))
        at = next(n for n, k in enumerate(kept) if k.unit.passage == j)
        kept.insert(at, unit)
        followed.append(Followed(i + 1, link.surface, j + 1, ids[j]))
        added.add(i)
    return replace(answer, kept=kept, followed=followed) if added else answer
