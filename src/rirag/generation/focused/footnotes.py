"""A rule quoted with its footnotes, a footnote with its rule (issue 64: "every rule it needs").

A footnote is part of the rule that carries its mark: the rule's scope ("which applies to CRR firms – ie UK
subsidiaries"), the document it names, the case it extends to. An ingested page keeps its footnote marks
(``FootnoteMarks``) and ``rirag data xref`` resolves each mark to its footnote's passage; yet a footnote is a passage
of its own, rarely retrieved with its rule. Blind graders marked answers down for quoting a rule without the
footnote that answers the question's second part, and for quoting a footnote alone. This pass, for each cited
passage in the answer's order:

* quotes right after it each footnote its marks lead to (a reference whose span is one of the passage's footnote
  marks), taken from the given passages or, when not retrieved, from the corpus (added after the given ones);
* quotes right before a cited footnote the rule that carries its mark (from the written graph:
  :meth:`rirag.xref.graph.ReferenceGraph.referrers`); when that rule is quoted already, after it, the footnote is
  moved right after it.

A footnote or rule is quoted whole when it has at most ``rule_max_words`` words, else through its unit holding the
mark (the rule) or its first unit (the footnote); nothing is added past ``answer_max_words``. Each addition is
recorded as followed, as :mod:`rirag.generation.focused.follow` records its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rirag.generation.focused.answer import Added, FocusedAnswer, Followed
from rirag.generation.focused.scorer import ScoredUnit
from rirag.text.units import split_units
from rirag.xref.graph import Link, ReferenceGraph


@dataclass
class _State:
    """The answer being extended: its units, what it follows and adds, the ids of its passages by number."""

    kept: list[ScoredUnit]
    followed: list[Followed]
    added: list[Added]
    ids: list[str]
    texts: list[str]
    words: int
    number: dict[str, int] = field(default_factory=dict)

    def find(self, pid: str, corpus: Mapping) -> tuple[int, str] | None:
        """Passage ``pid``'s number and text: a given or added one's, else the number a corpus passage would take
        when added (:meth:`add`); ``None`` for a passage the corpus does not hold."""
        if pid in self.number:
            return self.number[pid], self.texts[self.number[pid]]
        entry = corpus.get(pid)
        if entry is None:
            return None
        return len(self.ids), entry if isinstance(entry, str) else entry.text

    def add(self, pid: str, corpus: Mapping) -> None:
        """Number corpus passage ``pid`` after the others and record it as added (a no-op for a known one)."""
        if pid in self.number:
            return
        entry = corpus[pid]
        text = entry if isinstance(entry, str) else entry.text
        self.added.append(Added(pid, text, getattr(entry, "document_id", None), getattr(entry, "passage_id", None),
                                getattr(entry, "marks", ()), getattr(entry, "items", ())))
        self.number[pid] = len(self.ids)
        self.ids.append(pid)
        self.texts.append(text)


def _is_mark(corpus: Mapping, pid: str, link: Link) -> bool:
    """Whether ``link`` of passage ``pid`` is one of its footnote marks."""
    return (link.start, link.end) in set(getattr(corpus.get(pid), "marks", ()) or ())


def _units(n: int, text: str, scored: Sequence[ScoredUnit], rule_max_words: int, at: int | None,
           split: Callable[[str], Sequence[str]] | None) -> list[ScoredUnit]:
    """The units quoting passage ``n`` (``text``): whole when short, else the unit holding offset ``at`` (or the
    first)."""
    units = sorted((s for s in scored if s.unit.passage == n), key=lambda s: s.unit.index) or \
        [ScoredUnit(u, 0.0) for u in split_units(text, n, split)]
    if not units or sum(s.unit.words for s in units) <= rule_max_words:
        return units
    holding = [s for s in units if at is not None and s.unit.start <= at < s.unit.end]
    return holding[:1] or units[:1]


def with_footnotes(answer: FocusedAnswer, passages: Sequence[str], ids: Sequence[str], graph: ReferenceGraph,
                   corpus: Mapping, rule_max_words: int, answer_max_words: int,
                   split: Callable[[str], Sequence[str]] | None = None) -> FocusedAnswer:
    """``answer`` with its cited rules' footnotes and its cited footnotes' rules (see the module); unchanged when
    there are none."""
    if not answer.kept or len(ids) != len(passages):
        return answer
    all_ids = [*ids, *(a.id for a in answer.added)]
    state = _State(list(answer.kept), list(answer.followed), list(answer.added), all_ids,
                   [*passages, *(a.text for a in answer.added)], sum(k.unit.words for k in answer.kept),
                   {pid: i for i, pid in reversed(list(enumerate(all_ids)))})
    cited = list(dict.fromkeys(k.unit.passage for k in answer.kept))
    for p in cited:
        pid = state.ids[p]
        for link in graph.links(pid):  # the footnotes of its marks, after it
            if len(link.targets) == 1 and _is_mark(corpus, pid, link):
                _add(state, answer, p, link.targets[0], link, corpus, rule_max_words, answer_max_words, split,
                     after=True)
        for source, link in graph.referrers(pid):  # the rule carrying its mark, before it
            if len(link.targets) == 1 and _is_mark(corpus, source, link):
                _add(state, answer, p, source, link, corpus, rule_max_words, answer_max_words, split, after=False)
                break
    if state.kept == list(answer.kept):
        return answer
    return replace(answer, kept=state.kept, followed=state.followed, added=state.added)


def _add(state: _State, answer: FocusedAnswer, p: int, other: str, link: Link, corpus: Mapping, rule_max_words: int,
         answer_max_words: int, split, after: bool) -> None:
    """Quote passage ``other`` next to the cited passage ``p`` (after it: ``p``'s footnote; before: its rule)."""
    found = state.find(other, corpus)
    if found is None:
        return
    n, text = found
    if any(k.unit.passage == n for k in state.kept):
        if not after:  # the footnote's rule is quoted too: the footnote goes right after it, not before
            _move_after(state, p, n)
        return
    units = _units(n, text, answer.scored, rule_max_words, None if after else link.start, split)
    words = sum(s.unit.words for s in units)
    if not units or state.words + words > answer_max_words:
        return
    state.add(other, corpus)
    places = [i for i, k in enumerate(state.kept) if k.unit.passage == p]
    at = places[-1] + 1 if after else places[0]
    state.kept[at:at] = units
    state.words += words
    source, target = (p, n) if after else (n, p)
    state.followed.append(Followed(source + 1, link.surface, target + 1, state.ids[target]))


def _move_after(state: _State, p: int, n: int) -> None:
    """Move passage ``p``'s quoted units to right after passage ``n``'s when they come before them."""
    first_p = next(i for i, k in enumerate(state.kept) if k.unit.passage == p)
    last_n = max(i for i, k in enumerate(state.kept) if k.unit.passage == n)
    if first_p > last_n:
        return
    moved = [k for k in state.kept if k.unit.passage == p]
    rest = [k for k in state.kept if k.unit.passage != p]
    at = max(i for i, k in enumerate(rest) if k.unit.passage == n) + 1
    state.kept = rest[:at] + moved + rest[at:]
