"""The best-unit answerer (``--generator best-unit``): the single highest-scoring answer unit across the retrieved
passages, quoted and cited ("A Person must ... [2]."), nothing else.

It scores every unit of the passages as the focused answerer does (:meth:`FocusedAnswerer.score_units
<rirag.generation.focused.answerer.FocusedAnswerer.score_units>`: the frozen unit scorer over the question's
features) and keeps the best one that can stand alone (no bare lead-in, at most ``max_unit_words`` words; if none
can, the best of all). No passage gate, no further units, no answerability flag, no missing-part statements: the
baseline that says how much the focused answerer's selection adds to its scoring. Passages without any unit (only
headings) give no answer.
"""

from __future__ import annotations

from typing import Sequence

from rirag.generation.base import AnswerRequest, Draft
from rirag.text.units import is_broken_unit

#: Its ``--generator`` name.
BEST_UNIT = "best-unit"


class BestUnitAnswerer:
    """The best unit of the passages, cited. ``classifier``, ``device`` and the keyword options (``encode``,
    ``is_obligation``, ``config``, ``scorer``: tests) are the focused answerer's, whose scoring it uses."""

    name = BEST_UNIT
    needs_passages = True

    def __init__(self, classifier: str | None = None, device: str | None = None, **focused_options):
        # the focused answerer imports numpy at its top: loaded when this answerer is built, not by the registry
        from rirag.generation.focused.answerer import FocusedAnswerer

        self.focused = FocusedAnswerer(classifier, device=device, **focused_options)

    def describe(self) -> str:
        return f"best-unit answerer (the {self.focused.describe()})"

    def draft(self, requests: Sequence[AnswerRequest]) -> list[Draft]:
        from rirag.generation.focused.answer import part

        drafts = []
        for r in requests:
            scored = self.focused.score_units(r.question, r.passages, r.scores)
            whole = [s for s in scored
                     if s.unit.words <= self.focused.config.max_unit_words and not is_broken_unit(s.unit.text)]
            candidates = whole or scored
            if not candidates:
                drafts.append(Draft([], addressed=False, answerability=0.0))
                continue
            best = max(candidates, key=lambda s: s.score)  # of equal scores, the first in retrieval order
            drafts.append(Draft([part(best)]))
        return drafts
