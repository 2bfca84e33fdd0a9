"""An answer whose lead rule is quoted with a rule it is linked to keeps that linked set alone (issue 64).

Blind graders marked answers down for padding: beside the two rules a question needs, a third rule the passage gate
let in ("the annual template", "unrelated underlying-asset rules"). When the lead rule is quoted together with a rule
it refers to, or that refers to it, or its footnote (the answer's followed links), the question's pair is there; the
other cited rules, linked to neither, are dropped. An answer without such a link is left as it is.
"""

from __future__ import annotations

from dataclasses import replace

from rirag.generation.focused.answer import FocusedAnswer


def linked_set(answer: FocusedAnswer) -> FocusedAnswer:
    """``answer`` with only the rules linked to its lead, through its followed links (see the module)."""
    if not answer.kept or not answer.followed:
        return answer
    lead = answer.kept[0].unit.passage + 1
    group, grew = {lead}, True
    while grew:
        grew = False
        for f in answer.followed:
            if (f.source in group) != (f.target in group):
                group |= {f.source, f.target}
                grew = True
    if len(group) == 1:
        return answer
    kept = [k for k in answer.kept if k.unit.passage + 1 in group]
    if len(kept) == len(answer.kept):
        return answer
    followed = [f for f in answer.followed if f.source in group and f.target in group]
    return replace(answer, kept=kept, followed=followed)
