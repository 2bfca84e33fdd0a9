"""One short line saying how two quoted rules connect, from the reference graph, never invented (issue 64, point 3).

An answer that quotes a rule and the rule it refers to reads as two quotations side by side; the reader must work
out why the second is there. When the answer followed a reference between two of its quoted rules (the
:class:`~rirag.generation.focused.answer.Followed` links its passes recorded: a reference followed, a referring
rule cited, a footnote quoted), the second rule's quote opens with one line that says so in the words of the
structure alone: the reference as the citing rule writes it (its spaces normalised, invisible format characters such
as ObliQA's left-to-right marks left out), and which rule is the citing one.

* the rule referred to, quoted after the rule that refers to it: ``Referred to by the rule above as "Depositor
  Protection 11.1 to 11.2":`` (``a rule above`` when another rule comes between them; the reference in quotes, as
  its rule writes it, often a bare number such as "6.2");
* the rule that refers, quoted after the rule it refers to: ``This rule refers to the rule above as "Rule 9.5.2":``;
* a footnote quoted after its rule: ``Footnote 5 of the rule above:``.

A line states only the link, never what either rule means for the question (that would be a claim a quoted rule
does not make). Each quoted rule gets at most one line, from the first link that reaches it from a rule quoted
before it; a rule reached by none, and the first rule, get none.
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace

from rirag.generation.focused.answer import FocusedAnswer, Followed

#: The connecting lines (``reference``: the reference as the citing rule writes it; ``which``: "the" when the
#: citing rule is the one quoted right before, else "a").
REFERRED_TO = 'Referred to by {which} rule above as "{reference}":'
REFERRING = 'This rule refers to {which} rule above as "{reference}":'
FOOTNOTE = "Footnote {reference} of {which} rule above:"


def _is_footnote_mark(reference: str) -> bool:
    """A footnote mark as a rule writes it (``5``, ``12``): the surface of the link to a footnote."""
    return reference.strip().isdigit()


def connecting_line(link: Followed, order: list[int], passage: int) -> str | None:
    """The line opening the quote of ``passage`` (0-based) reached through ``link`` from a passage quoted before it
    (``order``: the answer's passages, 0-based, in the order they are first quoted); None when the link does not
    join ``passage`` to an earlier one."""
    source, target = link.source - 1, link.target - 1
    other = source if target == passage else target if source == passage else None
    if other is None or other not in order or passage not in order or order.index(other) > order.index(passage):
        return None
    which = "the" if order.index(passage) - order.index(other) == 1 else "a"
    reference = " ".join("".join(c for c in link.reference if unicodedata.category(c) != "Cf").split())
    if not reference:
        return None
    if target == passage:
        return (FOOTNOTE if _is_footnote_mark(reference) else REFERRED_TO).format(reference=reference, which=which)
    if _is_footnote_mark(reference):  # a rule quoted after its own footnote: the footnote pass orders them otherwise
        return None
    return REFERRING.format(reference=reference, which=which)


def connected(answer: FocusedAnswer) -> FocusedAnswer:
    """``answer`` with a connecting line before each quoted rule that a followed link joins to a rule quoted before
    it (:attr:`FocusedAnswer.leads`; see the module)."""
    if not answer.followed or not answer.kept:
        return answer
    order = list(dict.fromkeys(k.unit.passage for k in answer.kept))
    leads: dict[int, str] = {}
    for passage in order[1:]:
        for link in answer.followed:
            line = connecting_line(link, order, passage)
            if line is not None:
                leads[passage] = line
                break
    return replace(answer, leads=leads) if leads else answer
