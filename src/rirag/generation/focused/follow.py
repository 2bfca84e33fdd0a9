"""Following cross-references in focused answers: when a passage the answer cites refers to another rule of the
corpus ("subject to Rule 9.5.2") and that rule's best unit bears on the question, the answer cites that unit too.

For one focused answer (:class:`~rirag.generation.focused.answer.FocusedAnswer`) and the ids of its passages:

1. each kept unit's passage's resolved references (:class:`~rirag.xref.graph.ReferenceGraph`: the
   corpus's graph, read lazily from ``DIR/xref/references.jsonl`` when ``rirag data xref`` wrote it, else resolved
   on the fly for the cited passages only) name target passages; a reference resolving to more than
   :attr:`~rirag.generation.focused.config.FocusedConfig.follow_max_targets` passages (a whole chapter) is not followed,
   nor is one whose targets are cited already;
2. the targets' units are scored by the answerer's own unit scorer against the question (targets among the given
   passages keep their scores; a target from the rest of the corpus is scored beside them, its retrieval score
   that of the passage citing it);
3. the best unit (not a broken one, nor a short one that only points back, "This is not an exhaustive list.")
   that fits the cap on another passage's unit (``extra_unit_words``) and the answer's word budget
   (``max_words``, or the first unit's length when that alone is longer, grown by ``extra_unit_words`` for each
   followed passage, as the passage-set decision's bound grows
   with each passage it cites: an answer that already spent its budget can still quote the rule its rule cites) is
   cited, right after the unit whose passage refers to it, when its score clears the
   answerer's floor ``min_score`` and :attr:`~rirag.generation.focused.config.FocusedConfig.follow_ratio` times the
   lead unit's score (0 by default: a ratio to the lead followed nothing on the top-10 context). With
   ``follow_scope="corpus"`` (the answerer passes ``corpus``) a target outside the given passages may be cited and
   is added to them (numbered after them); with ``"retrieved"`` (the default) only the given passages are targets,
   so the decision rests on the link and on the retrieval's own judgement that the rule bears on the question.

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
from dataclasses import replace
from typing import Mapping, Protocol, Sequence

from rirag.generation.focused.answer import Added, FocusedAnswer, Followed
from rirag.generation.focused.config import FocusedConfig
from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.focused.selection import Limits, near_duplicates, word_bound
from rirag.text.units import Unit, is_broken_unit, opens_with_back_reference
from rirag.xref.graph import Link, ReferenceGraph

#: Where a followed reference may lead (``FocusedConfig.follow_scope``): the passages given for the question, or any
#: passage of the corpus.
FOLLOW_SCOPES = ("retrieved", "corpus")


class UnitScorer(Protocol):
    """What following needs of the answerer (:class:`~rirag.generation.focused.answerer.FocusedAnswerer` is one):
    its options, resolved against its scorer's, and its unit scorer for passages outside the answer's."""

    config: FocusedConfig

    @property
    def limits(self) -> Limits: ...

    def score_units(self, question: str, passages: Sequence[str],
                    scores: Sequence[float] | None = None) -> list[ScoredUnit]: ...


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


def follow(answerer: UnitScorer, answer: FocusedAnswer, passages: Sequence[str], ids: Sequence[str],
           scores: Sequence[float] | None, graph: ReferenceGraph, corpus: Mapping) -> FocusedAnswer:
    """``answer`` citing, after each kept unit, the best unit of a passage its passage refers to (see the module);
    ``corpus`` maps passage ids to passages or texts (for targets outside ``passages``). Unchanged when nothing is
    followed."""
    if not answer.kept or len(ids) != len(passages):
        return answer
    follower = _Follower(answerer, answer, passages, ids, scores, corpus)
    for n, k in enumerate(answer.kept):
        follower.follow_from(n, k, graph.links(ids[k.unit.passage]))
    if not follower.followed:
        return answer
    # its text is rendered from the kept units
    # the joins of cited rules recorded before (connect_linked) stay recorded
    return replace(answer, kept=follower.kept, followed=[*answer.followed, *follower.followed], added=follower.added)


def connect_linked(answer: FocusedAnswer, passages: Sequence[str], ids: Sequence[str],
                   links: Mapping[tuple[int, int], Link]) -> FocusedAnswer:
    """``answer`` with each cited rule that another cited rule refers to quoted right after it, the reference
    marked inline with the referred rule's number ("... subject to Rule 9.5.2 [2] ... [1]. <Rule 9.5.2> [2].") and
    recorded as followed; ``links``: ``(i, j) -> Link`` when the ``i``-th passage refers to the ``j``-th. The units
    are the answer's own (nothing added, nothing dropped); unchanged when no two cited passages are linked."""
    kept = list(answer.kept)
    followed = list(answer.followed)
    for (i, j), link in sorted(links.items()):
        source = next((n for n, k in enumerate(kept) if k.unit.passage == i), None)
        target = next((n for n, k in enumerate(kept) if k.unit.passage == j), None)
        if source is None or target is None or any(f.target == j + 1 or (f.source, f.target) == (j + 1, i + 1)
                                                   for f in followed):
            continue  # not cited, already led to, or the pair already joined the other way
        if target != source + 1 and target > 0:  # the referred rule right after the one referring to it
            unit = kept.pop(target)
            source = source - 1 if target < source else source
            kept.insert(source + 1, unit)
        offset = inline_offset(kept[source].unit, passages[i], link)
        if offset is not None:
            kept[source] = replace(kept[source], inline=(*kept[source].inline, (offset, j)))
        followed.append(Followed(i + 1, link.surface, j + 1, ids[j]))
    if followed == list(answer.followed):
        return answer
    return replace(answer, kept=kept, followed=followed)


class _Follower:
    """One answer being followed: the units kept so far (each kept unit, then the units followed from it), the
    passages cited and added, the words quoted."""

    def __init__(self, answerer: UnitScorer, answer: FocusedAnswer, passages: Sequence[str], ids: Sequence[str],
                 scores: Sequence[float] | None, corpus: Mapping):
        self.answerer, self.answer, self.passages, self.ids = answerer, answer, passages, ids
        self.scores, self.corpus, self.cfg = scores, corpus, answerer.config
        limits = answerer.limits
        self.threshold = max(limits.option("min_score"), self.cfg.follow_ratio * answer.kept[0].score)
        self.max_words, self.extra_words = limits.option("max_words"), limits.extra_unit_words()
        if self.cfg.whole_rules:  # a rule followed is quoted whole too: it may be as long as a whole cited rule
            self.extra_words = max(self.extra_words, self.cfg.whole_rule_max_words)
        self.first_words = answer.kept[0].unit.words if answer.kept else 0
        self.words = sum(k.unit.words for k in answer.kept)
        self.cited = {n - 1 for k in answer.kept for n in k.numbers}
        self.index = {pid: i for i, pid in enumerate(ids)}
        self.added: list[Added] = []
        self.followed: list[Followed] = []
        self.kept: list[ScoredUnit] = []
        #: Passage numbers a later kept unit (by its place in the answer) cites besides its own: a followed rule that
        #: it states already.
        self.pending: dict[int, tuple[int, ...]] = {}

    def follow_from(self, n: int, k: ScoredUnit, links: Sequence[Link]) -> None:
        """Keep ``k`` (the answer's ``n``-th unit), then the best unit of each of its passage's ``links`` that bears
        on the question; a followed rule that a kept unit states already (the same rule in another passage,
        :func:`~rirag.generation.focused.selection.near_duplicates`) is cited with that unit, not quoted again."""
        source = len(self.kept)  # where the citing unit is in ``kept`` (its inline markers are added there)
        if n in self.pending:
            k = replace(k, also=(*k.also, *self.pending.pop(n)))
        self.kept.append(k)
        for link in links:
            best, targets = self._best_target(k, link)
            if best is None:
                continue
            tid = targets[best.unit.passage - len(self.passages)] if best.unit.passage >= len(self.passages) \
                else self.ids[best.unit.passage]
            target = self._number(tid)
            kept_twin, later_twin = self._twin(best, n)
            if kept_twin is not None:
                self.kept[kept_twin] = replace(self.kept[kept_twin], also=(*self.kept[kept_twin].also, target + 1))
            elif later_twin is not None:  # a unit of the answer not reached yet
                self.pending[later_twin] = (*self.pending.get(later_twin, ()), target + 1)
            else:
                self.kept.append(replace(best, unit=replace(best.unit, passage=target), also=(), inline=()))
                self.words += best.unit.words
            offset = inline_offset(k.unit, self.passages[k.unit.passage], link)
            if offset is not None:  # the followed passage's marker right after the reference, in the citing unit
                self.kept[source] = replace(self.kept[source], inline=(*self.kept[source].inline, (offset, target)))
            self.cited.add(target)
            self.followed.append(Followed(k.unit.passage + 1, link.surface, target + 1, tid))

    def _twin(self, unit: ScoredUnit, n: int) -> tuple[int | None, int | None]:
        """A unit stating what ``unit`` states: (its index in ``kept`` so far, None) or (None, its place among the
        answer's units after the ``n``-th, still to come); (None, None) where none does."""
        def same(other: ScoredUnit) -> bool:
            return near_duplicates(other.unit.text, unit.unit.text, self.cfg.dedup_min_ratio)

        kept = next((i for i, other in enumerate(self.kept) if same(other)), None)
        if kept is not None:
            return kept, None
        return None, next((j for j in range(n + 1, len(self.answer.kept)) if same(self.answer.kept[j])), None)

    def _best_target(self, k: ScoredUnit, link: Link) -> tuple[ScoredUnit | None, list[str]]:
        """The best unit ``link`` leads to that fits and clears the threshold (``None``: not followed), and the
        link's targets not cited yet."""
        cfg = self.cfg
        if (cfg.follow_in_unit and not k.unit.quotes(link.start, link.end)) or \
                len(link.targets) > cfg.follow_max_targets:
            return None, []
        targets = [t for t in link.targets if self.index.get(t) not in self.cited
                   and (t in self.index or t in self.corpus)]
        if not targets:
            return None, targets
        candidates = _target_units(self.answerer, self.answer, self.passages, self.scores, k, targets, self.index,
                                   self.corpus)
        usable = [s for s in candidates if s.score >= self.threshold and s.unit.words <= cfg.max_unit_words
                  and s.unit.words <= self.extra_words
                  and self.words + s.unit.words <= word_bound(self.max_words, self.first_words, self.extra_words,
                                                              len(self.followed) + 1)
                  and not is_broken_unit(s.unit.text)
                  and not _points_back_only(s.unit)]
        return (max(usable, key=lambda s: s.score) if usable else None), targets

    def _number(self, tid: str) -> int:
        """The 0-based passage index of ``tid``: a passage of the rest of the corpus is numbered after the given
        ones (and added)."""
        if tid not in self.index:
            self.index[tid] = len(self.passages) + len(self.added)
            entry = self.corpus[tid]
            self.added.append(Added(tid, _text(entry), getattr(entry, "document_id", None),
                                    getattr(entry, "passage_id", None), getattr(entry, "marks", ()),
                                    getattr(entry, "items", ())))
        return self.index[tid]


#: A unit that points back ("This is not an exhaustive list.") and is shorter than this says nothing on its own.
POINTER_MAX_WORDS = 10


def _points_back_only(unit: Unit) -> bool:
    """Whether ``unit`` opens by pointing back at what precedes it and is too short to say anything itself: quoted
    after another passage's rule, "This is not an exhaustive list." points at a list the answer does not quote."""
    return unit.words < POINTER_MAX_WORDS and opens_with_back_reference(unit.text)


def _target_units(answerer: UnitScorer, answer: FocusedAnswer, passages: Sequence[str],
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
    scored = answerer.score_units(answer.question, extended, [*base, *[source.passage_score] * len(targets)])
    return out + [s for s in scored if s.unit.passage >= len(passages)]
