"""Which units a focused answer keeps (:class:`Selection`, steps 4 and 5 of :mod:`rirag.generation.focused`), with
the options resolved against the frozen scorer's (:class:`Limits`), and what is done to the kept units before they
are written: a named twin quoted instead of its near-duplicate (:func:`prefer_named_twin`), a variant of a kept
unit in a term the question tells apart dropped (:func:`drop_contrasted`), repeated titles dropped
(:func:`drop_repeated_titles`), long lists focused on their items (:func:`focus_lists`) and the length bound
(:func:`within_bound`), and a source note quoted through its passage's rule (:func:`rules_for_notes`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

from rirag.generation.focused.config import FocusedConfig
from rirag.generation.focused.scorer import EncodeFn, ScoredUnit
from rirag.text.lines import normalise
from rirag.text.lists import focus_items, list_items
from rirag.text.units import (
    Unit,
    clip_unit,
    is_broken_unit,
    is_source_note,
    leading_title,
    opens_with_back_reference,
    without_title,
)


@dataclass(frozen=True)
class Limits:
    """The selection options of ``config``, an option left unset (``None``) taking the frozen scorer's
    (``selection``: the scorer file's ``selection`` part), resolved when asked."""

    config: FocusedConfig
    selection: Mapping

    def option(self, name: str) -> float:
        """Option ``name`` of the config, or the scorer's when unset."""
        value = getattr(self.config, name)
        return float(self.selection[name] if value is None else value)

    def gate(self) -> tuple[float, float, int] | None:
        """(passage_weight, passage_margin, max_passages) of the passage gate, or None without one."""
        selection = self.selection
        if self.config.passage_gate is False or (
                self.config.passage_margin is None and selection.get("passage_margin") is None):
            return None
        names = ("passage_weight", "passage_margin", "max_passages")
        weight, margin, most = (getattr(self.config, n) if getattr(self.config, n) is not None else selection.get(n)
                                for n in names)
        if self.config.whole_rules and self.config.max_passages is None:  # each cited rule quoted whole
            most = min(int(most or 1 << 30), self.config.whole_max_passages)
        return float(weight or 0.0), float(margin), int(most or 1 << 30)

    def passage_min_score(self) -> float:
        """The least score of the best unit of a cited passage other than the best one (0: none)."""
        value = self.config.passage_min_score
        value = self.selection.get("passage_min_score") if value is None else value
        return float(value or 0.0)

    def extra_unit_words(self) -> int:
        """The cap on the words of a unit citing a passage other than the best one (none: a huge number)."""
        value = self.config.extra_unit_words
        value = self.selection.get("extra_unit_words") if value is None else value
        return int(value) if value is not None else 1 << 30


#: A list label in the middle of a unit ("(a)", "(iv)", "(C)", "b)"): copies of one rule label their items differently.
_INLINE_LABEL = re.compile(r"\((?:[a-z]|[ivxlc]{1,6})\)|(?<![\w(])[a-z]\)", re.IGNORECASE)
#: A word or a number of a unit, as :func:`differing_terms` compares them.
_TERM = re.compile(r"[^\W\d_]+|\d+")
#: Words whose absence changes no statement ("a Fund" / "the Fund").
_FILLER = frozenset({"a", "an", "the"})
#: Numbers written as words, read as digits ("six years" / "6 years").
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())}


def _terms(text: str) -> set[str]:
    """The words and numbers of ``text``, lower-cased and singular ("Activities" -> "activity"), without its list
    labels and rule numbers (:data:`_RULE_NUMBER`) and without :data:`_FILLER`; numbers to twenty read as digits."""
    text = _INLINE_LABEL.sub(" ", _RULE_NUMBER.sub(" ", text))
    terms = set()
    for word in _TERM.findall(text.lower()):
        if word.endswith("ies") and len(word) > 4:
            word = word[:-3] + "y"
        elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
            word = word[:-1]
        terms.add(_NUMBER_WORDS.get(word, word))
    return terms - _FILLER


def differing_terms(a: str, b: str) -> set[str]:
    """The words and numbers one unit has and the other lacks (:func:`_terms`): what makes two nearly equal
    sentences two rules ("Links to EBA Guidelines ..." / "Links to ESMA Guidelines ...", "an Insurer" / "a Captive
    Insurer", "reinsurance risk" / "credit quality risk"). Rule numbers are not among them: the same rule in two
    rulebooks is numbered differently ("under Rule 20.2.5" / "under Rule 20.3.5")."""
    return _terms(a) ^ _terms(b)


def near_duplicates(a: str, b: str, min_ratio: float) -> bool:
    """Whether two units state the same thing: their rapidfuzz ratio is at least ``min_ratio``
    (``FocusedConfig.dedup_min_ratio``) and neither has a word the other lacks (:func:`differing_terms`; a ratio
    alone joined "Links to EIOPA Guidelines ..." and "Links to ESMA Guidelines ..." as one sentence). Source notes
    never do: "[Note: Art. 74(4) of the Solvency II Directive]" closes several rules that implement one article, and
    two passages sharing a note share no rule."""
    from rapidfuzz import fuzz

    if is_source_note(a) or is_source_note(b):
        return False
    return fuzz.ratio(a, b) >= min_ratio and not differing_terms(a, b)


def drop_contrasted(question: str, kept: list[ScoredUnit], min_ratio: float) -> list[ScoredUnit]:
    """Kept units less one whose sentence an earlier kept unit repeats (rapidfuzz ratio at least ``min_ratio``) but
    for terms the question tells apart (:func:`differing_terms`): the question names a term only the earlier unit
    has and none only this one has. Asked about "EIOPA Guidelines", the answer quoting "Links to EIOPA Guidelines
    ..." does not go on to quote "Links to EBA Guidelines ..."; a variant adding a term the question does not name
    ("a Captive Insurer" beside "an Insurer") is kept, for the question tells nothing apart there. Source notes are
    never dropped (two notes naming neighbouring articles close two rules; :func:`rules_for_notes` quotes them)."""
    from rapidfuzz import fuzz

    asked = _terms(question)

    def told_apart(earlier: ScoredUnit, k: ScoredUnit) -> bool:
        if is_source_note(earlier.unit.text) or fuzz.ratio(earlier.unit.text, k.unit.text) < min_ratio:
            return False
        theirs, mine = _terms(earlier.unit.text), _terms(k.unit.text)
        return bool(asked & (theirs - mine)) and not asked & (mine - theirs)

    out: list[ScoredUnit] = []
    for k in kept:
        if is_source_note(k.unit.text) or not any(told_apart(o, k) for o in out):
            out.append(k)
    return out


#: The passage-set decision as the selection calls it: (the usable units, the lead passage) -> the passages to cite,
#: the lead first (:func:`rirag.generation.focused.passage_set.decide`).
PassageSetFn = Callable[[Sequence[ScoredUnit], int], Sequence[int]]


@dataclass(frozen=True)
class Selection:
    """The kept units of one question's scored units (``Selection(limits)(scored)``); with ``passage_set``, the
    passages cited are the ones it decides (the gate's lead passage first) instead of the gate's margin."""

    limits: Limits
    passage_set: PassageSetFn | None = None

    @property
    def config(self) -> FocusedConfig:
        return self.limits.config

    def __call__(self, scored: list[ScoredUnit]) -> list[ScoredUnit]:
        """The kept units, most relevant first, while the score holds and the budget allows (through the passage
        gate when the scorer or the config sets one)."""
        cfg = self.config
        usable = [s for s in scored if s.unit.words <= cfg.max_unit_words and not is_broken_unit(s.unit.text)]
        if not usable:  # every unit is a bare lead-in or too long: one unit, whole ones first, then the shortest
            usable = sorted(scored, key=lambda s: (is_broken_unit(s.unit.text), s.unit.words))[:1]
        ranked = sorted(usable, key=lambda s: -s.score)
        gate = self.limits.gate()
        if gate is None:
            return self._fill([], ranked)
        weight, margin, most = gate
        best_of: dict[int, ScoredUnit] = {}
        for s in ranked:  # ranked by score: the first unit seen of a passage is its best
            best_of.setdefault(s.unit.passage, s)
        passage_score = {p: s.passage_score + weight * s.score for p, s in best_of.items()}
        order = sorted(passage_score, key=lambda p: -passage_score[p])
        if self.passage_set is not None:
            cited = list(dict.fromkeys(self.passage_set(usable, order[0])))
        else:
            bar = self.limits.passage_min_score()
            cited = [p for p in order if p == order[0] or (passage_score[p] >= passage_score[order[0]] - margin
                                                            and best_of[p].score >= bar)][:most]
        lead: list[ScoredUnit] = []
        words, max_words, extra_words = 0, self.limits.option("max_words"), self.limits.extra_unit_words()
        decided = self.passage_set is not None
        for p in cited:  # each cited passage's best unit that fits (the first always does), most relevant first
            if any(p + 1 in k.numbers for k in lead):  # cited already, as a near-duplicate of a kept unit
                continue
            fitting = next((s for s in ranked if s.unit.passage == p and (not lead or (
                (decided or words + s.unit.words <= max_words) and s.unit.words <= extra_words))), None)
            if fitting is None and decided and lead:  # a decided passage is cited whatever its length: its best
                fitting = best_of[p]                    # unit, clipped to the cap (within_bound)
            if fitting is None or (lead and not decided and not cfg.fallback_units and fitting is not best_of[p]):
                continue
            twin = next((i for i, k in enumerate(lead) if self._near(fitting, k)), None)
            if twin is not None:  # the same rule in another rulebook: cited with the kept unit, not repeated
                lead[twin] = replace(lead[twin], also=(*lead[twin].also, fitting.number))
                continue
            lead.append(fitting)
            words += fitting.unit.words
        if cfg.cite_duplicates:
            lead = self._with_duplicates(lead, usable)
        return self._fill(lead, [s for s in ranked if s.unit.passage in cited])

    def _near(self, a: ScoredUnit, b: ScoredUnit) -> bool:
        return near_duplicates(a.unit.text, b.unit.text, self.config.dedup_min_ratio)

    def _duplicate(self, unit: ScoredUnit, kept: list[ScoredUnit]) -> bool:
        """Whether ``unit`` repeats a kept unit, or its passage is cited already as one's near-duplicate."""
        return any(self._near(unit, k) or unit.number in k.also for k in kept)

    def _with_duplicates(self, kept: list[ScoredUnit], units: list[ScoredUnit]) -> list[ScoredUnit]:
        """Each kept unit citing, besides its own passage, every other passage that holds a near-duplicate of it."""
        out = []
        for k in kept:
            cited = {n for other in kept for n in other.numbers}
            twins = tuple(dict.fromkeys(u.number for u in units if u.number not in cited and self._near(u, k)))
            out.append(replace(k, also=(*k.also, *twins)) if twins else k)
            kept = [*out, *kept[len(out):]]
        return out

    def _fill(self, kept: list[ScoredUnit], ranked: list[ScoredUnit]) -> list[ScoredUnit]:
        """``kept`` plus the units of ``ranked`` (best first) that hold their score and fit the word budget."""
        keep_ratio, min_score = self.limits.option("keep_ratio"), self.limits.option("min_score")
        max_words = self.limits.option("max_words")
        kept = list(kept)
        words = sum(k.unit.words for k in kept)
        best = max((k.score for k in kept), default=ranked[0].score if ranked else 0.0)
        for s in ranked:
            if any(s is k for k in kept):
                continue
            if kept and (s.score < min_score or s.score < keep_ratio * best):
                break
            if kept and words + s.unit.words > max_words:
                continue
            if kept and s.unit.passage != kept[0].unit.passage and s.unit.words > self.limits.extra_unit_words():
                continue  # another passage is quoted through a short unit only (the gate's cap holds here too)
            if self._duplicate(s, kept):
                continue
            kept.append(s)
            words += s.unit.words
        return kept  # the best (passage's) unit first: the sentence that answers is never buried


#: A rule number as questions and rules write it ("Rule 20.2.5", "section 9.5.2(a)"): two or more dotted numbers.
_RULE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?:\([a-z0-9]+\))*", re.IGNORECASE)


def rule_numbers(text: str) -> set[str]:
    """The rule numbers ``text`` names (:data:`_RULE_NUMBER`)."""
    return set(_RULE_NUMBER.findall(text))


def prefer_named_twin(question: str, kept: list[ScoredUnit], scored: Sequence[ScoredUnit],
                      min_ratio: float = 90.0) -> list[ScoredUnit]:
    """Each kept unit cited with near-duplicates in other passages (the same rule in two rulebooks, numbered
    differently) is quoted from the twin whose text names a rule number the question names, when its own text names
    none: asked about "Rule 20.2.5", the answer quotes the rulebook saying 20.2.5, not its twin saying 20.3.5. The
    citation numbers stay the same; the quoted passage's comes first."""
    named = rule_numbers(question)
    if not named:
        return kept
    out = []
    for k in kept:
        if not k.also or rule_numbers(k.unit.text) & named:
            out.append(k)
            continue
        twin = max((s for s in scored if s.number in k.also and rule_numbers(s.unit.text) & named
                    and near_duplicates(s.unit.text, k.unit.text, min_ratio)),
                   key=lambda s: s.score, default=None)
        out.append(k if twin is None else
                   replace(twin, also=tuple(n for n in k.numbers if n != twin.number)))
    return out


def drop_repeated_titles(kept: list[ScoredUnit], passages: Sequence[str],
                         split: Callable[[str], Sequence[str]] | None = None) -> list[ScoredUnit]:
    """Kept units after the first lose an in-line title an earlier kept unit already quoted: the passages of one
    section often open with its title ("Adjustment to the current valuation of less liquid positions for regulatory
    capital purposes."), which would otherwise be repeated before every quoted sentence. The offsets follow the
    shortened text."""
    seen: set[str] = set()
    out = []
    for k in kept:
        if is_source_note(k.unit.text):  # "[Note: Art. 109 ...]" opens with no title, though "Art." ends like one
            out.append(k)
            continue
        title = leading_title(k.unit.text, split)
        key = " ".join(title.lower().split())
        if title and key in seen and k.unit.passage < len(passages):
            k = replace(k, unit=without_title(k.unit, passages[k.unit.passage], title))
        elif title:
            seen.add(key)
        out.append(k)
    return out


#: A list is focused only when it has at least this many top-level items (else there is little to leave out).
FOCUS_LIST_MIN_ITEMS = 3


def focus_lists(question: str, kept: list[ScoredUnit], passages: Sequence[str], encode: EncodeFn,
                min_words: int, margin: float, max_unit_words: int) -> list[ScoredUnit]:
    """Each kept list unit longer than ``min_words`` words with at least :data:`FOCUS_LIST_MIN_ITEMS` top-level items
    (:func:`rirag.text.lists.list_items`: a nested sub-list stays with its item) quoted as its lead-in and only
    the items whose cosine with the question (``encode``: normalised embeddings) is within ``margin`` of the best
    item's, in passage order, an elision mark where items are left out (:func:`rirag.text.lists.focus_items`).
    Keeping all items, or all but one, leaves the unit whole (the question asks about the whole list); so does a
    focused text longer than ``max_unit_words`` (the unit is clipped as before). Scores and citations are
    unchanged."""
    lists = []
    for i, k in enumerate(kept):
        passage = passages[k.unit.passage] if k.unit.passage < len(passages) else None
        parts = list_items(k.unit, passage) if passage is not None and k.unit.words > min_words else None
        if parts is not None and len(parts[1]) >= FOCUS_LIST_MIN_ITEMS:
            lists.append((i, passage, [normalise(passage[a:b]) for a, b in parts[1]]))
    if not lists:
        return kept
    emb = encode([question, *(t for _, _, texts in lists for t in texts)])
    cosine = emb[1:] @ emb[0]
    out = list(kept)
    at = 0
    for i, passage, texts in lists:
        scores = cosine[at:at + len(texts)]
        at += len(texts)
        keep = [j for j, c in enumerate(scores) if c >= scores.max() - margin]
        if len(keep) >= len(texts) - 1:
            continue
        unit = focus_items(out[i].unit, passage, keep)
        if unit.words <= max_unit_words:
            out[i] = replace(out[i], unit=unit)
    return out


def word_bound(max_words: float, first_words: int, per_passage: int = 0, extra_passages: int = 0) -> float:
    """The words a focused answer may quote: the budget ``max_words``, or its first unit's length when that alone is
    longer (one whole rule stands alone), plus ``per_passage`` for each of ``extra_passages`` passages it cites
    beyond the first (decided by the passage set, or followed)."""
    return max(max_words, first_words) + per_passage * extra_passages


def within_bound(kept: list[ScoredUnit], passages: Sequence[str], max_words: float,
                 max_unit_words: int, per_passage: int | None = None) -> list[ScoredUnit]:
    """The length bound every focused answer keeps, whatever chose its units: no unit quotes more than
    ``max_unit_words`` words (a longer one, the only unit a passage offers, is cut at its last item or sentence
    that fits: :func:`rirag.text.units.clip_unit`), and the units after the first are kept only while the quoted
    words stay within ``max_words``, or within the first unit's length when that alone is longer (one whole rule
    stands alone).

    ``per_passage`` (the passage-set decision's answers): each cited passage after the first adds this many words
    to the bound and a unit of such a passage is cut to this many, so an answer grows only with the passages it
    cites (words per cited passage stay bounded)."""
    out: list[ScoredUnit] = []
    words = 0
    first = kept[0].unit.passage if kept else None
    others = len({k.unit.passage for k in kept} - {first}) if per_passage else 0
    for k in kept:
        cap = per_passage if per_passage and k.unit.passage != first else max_unit_words
        if k.unit.words > min(cap, max_unit_words) and k.unit.passage < len(passages):
            k = replace(k, unit=clip_unit(k.unit, passages[k.unit.passage], min(cap, max_unit_words)))
        if out and words + k.unit.words > word_bound(max_words, out[0].unit.words, per_passage or 0, others):
            continue
        out.append(k)
        words += k.unit.words
    return out


def quoted_bound(kept: Sequence[ScoredUnit], max_words: float, per_passage: int | None = None) -> float:
    """The bound :func:`within_bound` holds ``kept`` to (:func:`word_bound`: its first unit's length, and with
    ``per_passage`` its passages after the first)."""
    if not kept:
        return max_words
    first = kept[0].unit.passage
    others = len({k.unit.passage for k in kept} - {first}) if per_passage else 0
    return word_bound(max_words, kept[0].unit.words, per_passage or 0, others)


#: A source note is quoted through its passage's rule only when at least this many words of the rule fit: a
#: shorter cut says less than the note's pointer does.
NOTE_RULE_MIN_WORDS = 20


def rules_for_notes(kept: list[ScoredUnit], scored: Sequence[ScoredUnit], passages: Sequence[str], bound: float,
                    first_cap: int, other_cap: int) -> list[ScoredUnit]:
    """Each kept unit that is only a source note (:func:`rirag.text.units.is_source_note`: "[Note: Art. 109 of the
    CRD]") quoted through its passage's rule instead: the passage's best-scoring unit that is no note and no broken
    lead-in, cut (:func:`rirag.text.units.clip_unit`; never to a list's lead-in alone, which says no more than the
    note) to the words the answer's ``bound`` leaves and to the cap on the unit (``first_cap`` for the first unit,
    ``other_cap`` for the others). A note is the unit that fits when
    its passage's rule is a long list; quoted alone it is a pointer, not an answer.

    The passages cited are unchanged: a note whose passage another kept unit quotes through its rule is dropped
    (that unit takes the note's place when the note came first, so the first passage stays first); a note is kept
    as it is where it cites near-duplicates (other passages' notes: the rule is not theirs), where it carries an
    inline marker, where its passage has no rule, or where neither the whole rule nor
    :data:`NOTE_RULE_MIN_WORDS` of its words fit, or the cut would be its lead-in alone."""
    if not any(is_source_note(k.unit.text) for k in kept):
        return kept
    out: list[ScoredUnit | None] = list(kept)
    words = sum(k.unit.words for k in kept)
    for i, k in enumerate(kept):
        p = k.unit.passage
        if not is_source_note(k.unit.text) or k.inline or k.also or p >= len(passages):
            continue
        quoted = next((j for j, o in enumerate(out) if o is not None and j != i and o.unit.passage == p
                       and not is_source_note(o.unit.text)), None)
        if quoted is not None:  # its passage is quoted through its rule already
            if i == 0:
                out[0], out[quoted] = out[quoted], None
            else:
                out[i] = None
            words -= k.unit.words
            continue
        rule = max((s for s in scored if s.unit.passage == p and not is_source_note(s.unit.text)
                    and not is_broken_unit(s.unit.text)), key=lambda s: s.score, default=None)
        room = int(min(first_cap if i == 0 else other_cap, bound - (words - k.unit.words)))
        if rule is None or room < min(NOTE_RULE_MIN_WORDS, rule.unit.words):
            continue
        unit = clip_unit(rule.unit, passages[p], room, lead_in_alone=False)
        if unit.text.rstrip().endswith(":"):  # only the lead-in fits: it says no more than the note
            continue
        out[i] = replace(rule, unit=unit, inline=())
        words += unit.words - k.unit.words
    return [k for k in out if k is not None]


def with_antecedents(kept: list[ScoredUnit], scored: Sequence[ScoredUnit], passages: Sequence[str], bound: float,
                     first_cap: int, other_cap: int) -> list[ScoredUnit]:
    """Each kept unit that opens by pointing back at the sentence before it in its passage ("This includes whether
    the firm anticipates ...", "However, if ...": :func:`rirag.text.units.opens_with_back_reference`) quoted with that
    sentence, one span from its start: quoted alone, what "this" or "however" points at is lost. Only where the
    sentence before is a plain unit of the same passage (``scored`` holds it: no list, table or cut unit), right
    before it (nothing but space between them in ``passages``), that the answer does not already quote, where the
    joined unit keeps its cap (``first_cap`` for the first unit, ``other_cap`` for the others) and the answer stays
    within ``bound`` words; else the unit is left as it is. The passages cited are unchanged."""
    by_place = {(s.unit.passage, s.unit.index): s.unit for s in scored}
    quoted = {(k.unit.passage, k.unit.index) for k in kept}
    words = sum(k.unit.words for k in kept)
    out = []
    for n, k in enumerate(kept):
        before = _antecedent(k, by_place, quoted, passages)
        if before is not None:
            joined = replace(k.unit, text=f"{before.text} {k.unit.text}", start=before.start)
            if joined.words <= (first_cap if n == 0 else other_cap) and words + before.words <= bound:
                words += before.words
                quoted.add((before.passage, before.index))
                k = replace(k, unit=joined)
        out.append(k)
    return out


def _antecedent(k: ScoredUnit, by_place: Mapping[tuple[int, int], Unit], quoted: set[tuple[int, int]],
                passages: Sequence[str]) -> Unit | None:
    """The plain unit right before ``k``'s in its passage when ``k`` points back at it and it can be joined (see
    :func:`with_antecedents`), else None."""
    u = k.unit
    before = by_place.get((u.passage, u.index - 1))
    if (before is None or (before.passage, before.index) in quoted or u.spans or u.clipped or k.inline
            or before.is_list or before.is_table or before.clipped or before.spans
            or not opens_with_back_reference(u.text)):
        return None
    between = passages[u.passage][before.end:u.start] if u.passage < len(passages) else None
    return before if before.end <= u.start and between is not None and not between.strip() else None
