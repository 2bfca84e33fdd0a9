"""Following cross-references in focused answers: when a passage the answer cites refers to another rule of the
corpus ("subject to Rule 9.5.2") and that rule's best unit bears on the question, the answer cites that unit too.

For one focused answer (:class:`~rirag.generation.focused.FocusedAnswer`) and the ids of its passages:

1. each kept unit's passage's resolved references (:class:`~rirag.xref.graph.ReferenceGraph`: the
   corpus's graph, read lazily from ``DIR/xref/references.jsonl`` when ``rirag data xref`` wrote it, else resolved
   on the fly for the cited passages only) name target passages; a reference resolving to more than
   :attr:`~rirag.generation.focused.FocusedConfig.follow_max_targets` passages (a whole chapter) is not followed,
   nor is one whose targets are cited already;
2. the targets' units are scored by the answerer's own unit scorer against the question (targets among the given
   passages keep their scores; a target from the rest of the corpus is scored beside them, its retrieval score
   that of the passage citing it);
3. the best unit that fits the answer's word budget (``max_words``) and the cap on another passage's unit
   (``extra_unit_words``) is cited, right after the unit whose passage refers to it, when its score clears the
   answerer's keep threshold: at least :attr:`~rirag.generation.focused.FocusedConfig.follow_ratio` times the
   lead unit's score and ``min_score``. A target outside the given passages is added to them (numbered after
   them).

The answer records what was followed (:class:`Followed`: "Rule 9.5.2 -> [3]"), and the citing unit carries an
*inline marker* for it: the followed passage's number placed right after the reference as the unit's text writes it
("... subject to Rule 9.5.2 [3], ... [1]."; :func:`inline_offset`), written out by
:func:`rirag.generation.render.written`. A reference whose surface is not found inside the quoted unit text (one
outside the unit, followed with ``follow_in_unit`` off; a table row whose text is rebuilt) gets none: the unit is
quoted as it is, and the followed unit after it still cites its passage. A list focused on some of its items
(``focus_lists``) quotes only its lead-in and kept items (:meth:`rirag.text.units.Unit.quotes`): a reference in an
item it leaves out is outside the quoted text (not followed with ``follow_in_unit``, and never marked inline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from rirag.generation.focused_scorer import ScoredUnit
from rirag.text.units import Unit, is_broken_unit
from rirag.xref.graph import Link, ReferenceGraph

# The focused answerer and its answers (rirag.generation.focused imports this module lazily, so it is not imported here)
FocusedAnswerer = FocusedAnswer = Any


@dataclass(frozen=True)
class Followed:
    """A reference the answer followed: the citing passage's and the followed passage's citation numbers
    (1-based), the reference as written and the followed passage's id."""

    source: int
    reference: str
    target: int
    target_id: str

    def as_dict(self) -> dict:
        return {"source": self.source, "reference": self.reference, "target": self.target,
                "target_id": self.target_id}

    def __str__(self) -> str:
        return f"[{self.source}] {self.reference} -> [{self.target}]"


@dataclass(frozen=True)
class Added:
    """A passage of the corpus outside the given ones that the answer cites through a followed reference."""

    id: str
    text: str
    document_id: int | None = None
    passage_id: str | None = None


def _text(entry) -> str:
    """A corpus entry's text (a :class:`rirag.data.obliqa.Passage` or a plain string)."""
    return entry if isinstance(entry, str) else entry.text


def inline_offset(unit: Unit, passage: str, link: Link) -> int | None:
    """Where, in ``unit.text``, the reference ``link`` of ``passage`` ends (the offset right after its surface as
    the unit's text writes it), or ``None`` when the reference is not inside the quoted text.

    A unit's text is its span of the passage with whitespace normalised (and perhaps without a paragraph label), so
    the surface is searched in it, whitespace-insensitively and as whole words; of several occurrences the one with
    as many non-space characters before it as the quoted text has before the reference (:meth:`Unit.chars_before`:
    the passage's between the unit's start and the reference, give or take a dropped label; for a focused list, its
    quoted spans' and elision marks') is taken. A reference in an item a focused list leaves out is not quoted:
    ``None``, even when the same surface is quoted elsewhere in the unit."""
    if not unit.quotes(link.start, link.end):
        return None
    words = passage[link.start:link.end].split()
    if not words:
        return None
    pattern = re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)")
    expected = unit.chars_before(passage, link.start)
    found = [(abs(len("".join(unit.text[:m.start()].split())) - expected), m.end())
             for m in pattern.finditer(unit.text)]
    return min(found)[1] if found else None


def follow(answerer: FocusedAnswerer, answer: FocusedAnswer, passages: Sequence[str], ids: Sequence[str],
           scores: Sequence[float] | None, graph: ReferenceGraph, corpus: Mapping) -> FocusedAnswer:
    """``answer`` citing, after each kept unit, the best unit of a passage its passage refers to (see the module);
    ``corpus`` maps passage ids to passages or texts (for targets outside ``passages``). Unchanged when nothing is
    followed."""
    cfg = answerer.config
    if not answer.kept or len(ids) != len(passages):
        return answer
    threshold = max(answerer._option("min_score"), cfg.follow_ratio * answer.kept[0].score)
    max_words, extra_words = answerer._option("max_words"), answerer._extra_unit_words()
    words = sum(k.unit.words for k in answer.kept)
    cited = {n - 1 for k in answer.kept for n in k.numbers}
    index = {pid: i for i, pid in enumerate(ids)}
    added: list[Added] = []
    followed: list[Followed] = []
    kept: list[ScoredUnit] = []
    for k in answer.kept:
        source = len(kept)  # where the citing unit is in ``kept`` (its inline markers are added there)
        kept.append(k)
        for link in graph.links(ids[k.unit.passage]):
            if cfg.follow_in_unit and not k.unit.quotes(link.start, link.end):
                continue
            if len(link.targets) > cfg.follow_max_targets:
                continue
            targets = [t for t in link.targets if index.get(t) not in cited and (t in index or t in corpus)]
            if not targets:
                continue
            candidates = _target_units(answerer, answer, passages, scores, k, targets, index, corpus)
            usable = [s for s in candidates if s.score >= threshold and s.unit.words <= cfg.max_unit_words
                      and s.unit.words <= extra_words and words + s.unit.words <= max_words
                      and not is_broken_unit(s.unit.text)]
            if not usable:
                continue
            best = max(usable, key=lambda s: s.score)
            tid = targets[best.unit.passage - len(passages)] if best.unit.passage >= len(passages) \
                else ids[best.unit.passage]
            if tid not in index:  # a passage of the rest of the corpus: numbered after the given ones
                index[tid] = len(passages) + len(added)
                entry = corpus[tid]
                added.append(Added(tid, _text(entry), getattr(entry, "document_id", None),
                                   getattr(entry, "passage_id", None)))
            target = index[tid]
            unit = replace(best.unit, passage=target)
            kept.append(replace(best, unit=unit, also=(), inline=()))
            offset = inline_offset(k.unit, passages[k.unit.passage], link)
            if offset is not None:  # the followed passage's marker right after the reference, in the citing unit
                kept[source] = replace(kept[source], inline=(*kept[source].inline, (offset, target)))
            cited.add(target)
            words += best.unit.words
            followed.append(Followed(k.unit.passage + 1, link.surface, target + 1, tid))
    if not followed:
        return answer
    return replace(answer, kept=kept, followed=followed, added=added)  # its text is rendered from the kept units


def _target_units(answerer: FocusedAnswerer, answer: FocusedAnswer, passages: Sequence[str],
                  scores: Sequence[float] | None, source: ScoredUnit, targets: list[str], index: Mapping[str, int],
                  corpus: Mapping) -> list[ScoredUnit]:
    """The scored units of ``targets``: those among the given passages as the answer scored them; the others
    scored beside the given passages (their units numbered ``len(passages) + j`` for the ``j``-th of ``targets``),
    with the citing passage's retrieval score."""
    given = {index[t] for t in targets if index.get(t, len(passages)) < len(passages)}
    out = [s for s in answer.scored if s.unit.passage in given]
    outside = [(j, t) for j, t in enumerate(targets) if t not in index or index[t] >= len(passages)]
    if not outside:
        return out
    extended = [*passages, *(_text(corpus[t]) if j in dict(outside) else "" for j, t in enumerate(targets))]
    base = list(scores) if scores is not None and len(scores) == len(passages) else [1.0] * len(passages)
    units, x, _ = answerer.features(answer.question, extended, [*base, *[source.passage_score] * len(targets)])
    if not units:
        return out
    scored = answerer.scored_units(units, x, answer.question)
    return out + [s for s in scored if s.unit.passage >= len(passages)]
