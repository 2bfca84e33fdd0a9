"""Every part of the question answered from the rule that answers it (issue 64, point 2).

A question that asks two things ("when must the deferred amount be paid, and what is the maximum duration of a
deferral?") needs the rule that answers each. The selection scores units against the whole question, so the rule
for its second part, ranked lower, is often left out while a neighbour of the first part's rule is kept: on 30 PRA
development questions no round had graded, 9 of the 13 answers graders found least useful had both needed rules in
their context and quoted one of them.

This pass reads the question's parts (:func:`rirag.text.question_parts.question_parts`: its own wording, no model)
and, for a question of two or more, embeds each part as the answerer embeds units. A part is answered when a unit of
a cited rule is as close to it as any unit of the context, within ``margin`` (cosine); otherwise the unit of the
context closest to that part is quoted too, after the others (the answer then follows the question's order), at most
``max_added`` an answer. A rule added so is quoted whole by the pass after it where it fits
(:mod:`rirag.generation.focused.whole_rules`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from rirag.generation.focused.answer import FocusedAnswer
from rirag.text.question_parts import question_parts


def answer_parts(answer: FocusedAnswer, encode: Callable[[list[str]], np.ndarray], margin: float,
                 max_added: int = 1) -> FocusedAnswer:
    """``answer`` quoting, for each part of its question that no cited rule answers, the context's unit closest to
    that part (see the module); unchanged for a one-part question or when every part is answered."""
    parts = question_parts(answer.question)
    if len(parts) < 2 or not answer.kept or not answer.scored or max_added <= 0:
        return answer
    units = answer.scored
    closeness = encode(parts) @ encode([s.unit.text for s in units]).T  # parts x units
    cited = {k.unit.passage for k in answer.kept}
    kept, added = list(answer.kept), 0
    for row in closeness:
        if added >= max_added:
            break
        in_cited = [c for c, s in zip(row, units) if s.unit.passage in cited]
        best = int(np.argmax(row))
        if units[best].unit.passage in cited or (in_cited and row[best] - max(in_cited) < margin):
            continue
        kept.append(units[best])
        cited.add(units[best].unit.passage)
        added += 1
    return replace(answer, kept=kept) if added else answer
