"""The question-focused answerer (``--generator focused``, the default): the units of the retrieved passages that
answer the question, each cited, and a plain statement when none does.

For one question and its retrieved (filtered) passages, in retrieval order:

1. split each passage into answer units (:mod:`rirag.text.units`: a sentence, or a list lead-in with all its
   items; never a bare item or a heading);
2. describe every unit by :data:`~rirag.generation.focused_scorer.FEATURES`: its cosine with the question (the
   wheel's MiniLM, zero-shot), BM25 over the question's units, the lexical coverage of
   :mod:`rirag.retrieval.lexical`, its passage's retrieval score and rank, whether it states an obligation (the
   obligation classifier when trained, else deontic cues), its position and length, and the same measures relative
   to the best unit of the question;
3. score it with a logistic model learned on the leakage-free ``train`` split (a unit of a gold passage is a
   positive for its question; ``train/focused_scorer.py``, weights frozen in ``focused_scorer.json``, read and
   applied by :mod:`rirag.generation.focused_scorer`);
4. decide which passages to cite (the *passage gate*): each passage's score is its retrieval score plus
   :attr:`FocusedConfig.passage_weight` times its best unit's score; the best passage is cited, and so is every
   other passage within :attr:`FocusedConfig.passage_margin` of it, at most :attr:`FocusedConfig.max_passages`.
   Each cited passage contributes its best unit that fits; further units of cited passages are kept while their
   score stays within :attr:`FocusedConfig.keep_ratio` of the best one and above :attr:`FocusedConfig.min_score`,
   within a word budget (:attr:`FocusedConfig.max_words`). Without a gate (``passage_margin`` unset in the scorer
   and the config) units of any passage compete on score alone;
5. keep the units most relevant first (the best passage's best unit leads), each a part of the answer's draft
   (:class:`~rirag.generation.base.Draft`) citing its passage (and its near-duplicates' passages), written out by
   :func:`rirag.generation.render.render`;
   With :attr:`FocusedConfig.focus_lists` (off by default), a kept list unit longer than
   :attr:`FocusedConfig.focus_list_min_words` with at least three top-level items is quoted as its lead-in and only
   the items closest to the question (:func:`focus_lists`), "[…]" where items are left out;
6. score the question's *answerability* (a second logistic model over the best unit's question-match measures,
   learned on ``train`` from matched and mismatched question/passage pairs): below its threshold the answer
   starts with :data:`~rirag.text.units.NOT_ADDRESSED` and then gives the closest provisions, cited.

Every answer is also returned as scored spans (:class:`FocusedAnswer`: unit text, passage number, character
offsets, score), so a caller can trace each sentence to its rule without re-parsing the text.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from rirag.constants import DENSE_MAX_SEQ_LENGTH, OFFLINE_ENCODER
from rirag.errors import DataError
from rirag.generation.base import DEFAULT_OBLIGATION_CLASSIFIER, FOCUSED, AnswerRequest, Draft, DraftPart
from rirag.generation.extractive import MODAL_CUES, modal_cue_obligations, obligation_classifier
from rirag.generation.focused_scorer import (
    ANSWERABILITY_FEATURES,
    FEATURES,
    SCORER_FILE,
    EncodeFn,
    ObligationFn,
    ScoredUnit,
    _logistic,
    load_scorer,
    unit_features,
)
from rirag.generation.render import render
from rirag.models import looks_local
from rirag.retrieval.dense import shared_encoder
from rirag.text.missing_parts import missing_parts
from rirag.text.units import (
    Unit,
    clip_unit,
    focus_items,
    is_broken_unit,
    leading_title,
    list_items,
    names_row,
    normalise,
    split_units,
    without_title,
)

logger = logging.getLogger(__name__)


@dataclass
class FocusedConfig:
    """Selection options (defaults: the frozen scorer's, chosen on validation questions outside the benchmark
    sample; never on a test split)."""

    max_words: int | None = field(default=None, metadata={
        "help": "Word budget of an answer (the first unit always fits unless longer than max_unit_words; default: "
                "the scorer's)."})
    max_unit_words: int = field(default=300, metadata={"help": "A unit longer than this is never used (a list "
                                                               "that long is not an answer; its passage is cited "
                                                               "through a shorter unit or not at all)."})
    keep_ratio: float | None = field(default=None, metadata={
        "help": "Keep a unit while its score is at least this share of the best unit's (default: the scorer's)."})
    min_score: float | None = field(default=None, metadata={
        "help": "Never keep a unit scoring below this (default: the scorer's)."})
    answerable_threshold: float | None = field(default=None, metadata={
        "help": "Below this answerability the answer opens with NOT_ADDRESSED (default: the scorer's)."})
    passage_gate: bool | None = field(default=None, metadata={
        "help": "Decide the cited passages first (see the module); default: when the scorer or passage_margin sets "
                "a gate. False: units of any passage compete on score alone."})
    passage_weight: float | None = field(default=None, metadata={
        "help": "Weight of a passage's best unit score in its passage score (added to its normalised retrieval "
                "score; default: the scorer's)."})
    passage_margin: float | None = field(default=None, metadata={
        "help": "Cite every passage whose passage score is within this of the best passage's (default: the "
                "scorer's; unset in both: no passage gate)."})
    max_passages: int | None = field(default=None, metadata={
        "help": "With the passage gate: cite at most this many passages (default: the scorer's)."})
    dedup_min_ratio: float = field(default=90.0, metadata={"help": "rapidfuzz ratio of near-duplicate units."})
    extra_unit_words: int | None = field(default=None, metadata={
        "help": "With the passage gate: a passage other than the best one is cited through its best unit of at "
                "most this many words (default: the scorer's; unset in both: no cap)."})
    passage_min_score: float | None = field(default=None, metadata={
        "help": "With the passage gate: a passage other than the best one is cited only when its best unit scores "
                "at least this (it bears on the question; default: the scorer's; unset in both: 0)."})
    fallback_units: bool = field(default=True, metadata={
        "help": "With the passage gate: cite a passage other than the best one through a lower-scoring unit when its "
                "best unit does not fit the budget or the cap. Off, such sentences (chosen for their length) and "
                "their passages are left out; measured both ways in docs/research.md, on by default."})
    say_missing: bool = field(default=True, metadata={
        "help": "After the cited content, one sentence for each part of the question no kept unit states "
                "(rirag.text.missing_parts)."})
    cite_duplicates: bool = field(default=True, metadata={
        "help": "Cite every passage holding a near-duplicate of a kept unit (the same rule in two rulebooks) "
                "together with it, in one sentence: '... [2][4].'"})
    # -- following cross-references (rirag.generation.follow; needs the passages' ids and a reference graph) --
    follow_references: bool = field(default=False, metadata={
        "help": "Cite, after a kept unit, the best unit of a rule its passage refers to, when that unit scores at "
                "least follow_ratio of the lead unit and fits the budget (rirag.generation.follow)."})
    follow_ratio: float = field(default=0.5, metadata={
        "help": "A followed rule's best unit must score at least this share of the lead unit's score."})
    follow_max_targets: int = field(default=5, metadata={
        "help": "A reference resolving to more passages than this (a whole chapter) is not followed."})
    # -- focusing long lists on the items the question asks about (focus_lists) --
    focus_lists: bool = field(default=False, metadata={
        "help": "Quote a kept list unit longer than focus_list_min_words with at least 3 top-level items as its "
                "lead-in and only the items that bear on the question, an elision mark where items are left out "
                "(focus_lists)."})
    focus_list_min_words: int = field(default=60, metadata={
        "help": "With focus_lists: a list unit of at most this many words is quoted whole."})
    focus_list_margin: float = field(default=0.1, metadata={
        "help": "With focus_lists: keep the items whose cosine with the question is within this of the best "
                "item's; keeping all items, or all but one, quotes the whole list."})
    follow_in_unit: bool = field(default=True, metadata={
        "help": "Follow only references written inside the kept unit's quoted text (else any of its passage's). "
                "follow_ratio 0.5 and in-unit: the setting chosen on ObliQA-MP validation "
                "(benchmarks/follow_references.py)."})


@dataclass
class FocusedAnswer:
    """A focused answer: the kept units (most relevant first), every unit's score and the answerability; its
    :attr:`draft`, and the :attr:`text` written from it."""

    question: str
    kept: list[ScoredUnit]
    scored: list[ScoredUnit]
    answerability: float
    addressed: bool
    #: The parts the question asks for that no kept unit states (:mod:`rirag.text.missing_parts`), each
    #: said in one sentence after the cited content.
    missing: list = field(default_factory=list)
    #: The cross-references followed (:class:`rirag.generation.follow.Followed`) and the passages added for them.
    followed: list = field(default_factory=list)
    added: list = field(default_factory=list)

    @property
    def draft(self) -> Draft:
        """The answer as the answerer interface returns it."""
        return Draft([_part(s) for s in self.kept], self.addressed, self.answerability, list(self.missing),
                     followed=list(self.followed), added=list(self.added))

    @property
    def text(self) -> str:
        """The answer text: :attr:`draft` written out by :func:`rirag.generation.render.render` (the pipeline writes
        the drafts :meth:`FocusedAnswerer.draft` returns itself; nothing is rendered unless asked)."""
        return render(self.draft)




class FocusedAnswerer:
    """Question-focused extractive answers (see the module). ``encode`` (texts -> unit-normalised embeddings) and
    ``is_obligation`` override the encoder and the obligation detector (tests); otherwise the encoder is
    ``encoder`` (default the wheel's MiniLM) and obligations come from ``classifier`` when that folder exists, else
    from deontic cues."""

    name = FOCUSED
    needs_passages = True

    def __init__(self, classifier: str | None = None, encoder: str | None = None, device: str | None = None,
                 config: FocusedConfig | None = None, scorer: str | dict | None = None,
                 encode: EncodeFn | None = None, is_obligation: ObligationFn | None = None,
                 split: Callable[[str], Sequence[str]] | None = None, follow_references: bool | None = None,
                 focus_lists: bool | None = None):
        self.config = config or FocusedConfig()
        if follow_references is not None:  # `--follow-references` (rirag.generation.follow)
            self.config = replace(self.config, follow_references=follow_references)
        if focus_lists is not None:  # `--focus-lists`
            self.config = replace(self.config, focus_lists=focus_lists)
        if classifier and classifier != MODAL_CUES and is_obligation is None and not Path(classifier).is_dir() \
                and looks_local(classifier):  # a Hub id loads from the Hub or its cache (a Space sets one)
            raise DataError(f"obligation classifier {classifier!r} is not a folder; leave --generator-model out to use "
                            f"{DEFAULT_OBLIGATION_CLASSIFIER} when trained (else deontic cues), or pass {MODAL_CUES}")
        self.classifier = classifier or DEFAULT_OBLIGATION_CLASSIFIER
        self.encoder = encoder or OFFLINE_ENCODER
        self.device = device
        self._scorer = scorer
        self._scorer_name = scorer if isinstance(scorer, str) else ("given" if scorer is not None else
                                                                     f"rirag/generation/{SCORER_FILE.name}")
        self._encode = encode
        self._is_obligation = is_obligation
        self._obligation_given = is_obligation is not None
        self._split = split

    # -- models (lazy) ------------------------------------------------------------------------------------------
    @property
    def scorer(self) -> dict:
        if not isinstance(self._scorer, dict):
            self._scorer = load_scorer(self._scorer)
        return self._scorer

    def _option(self, name: str) -> float:
        value = getattr(self.config, name)
        return float(self.scorer["selection"][name] if value is None else value)

    def _gate(self) -> tuple[float, float, int] | None:
        """(passage_weight, passage_margin, max_passages) of the passage gate, or None without one."""
        selection = self.scorer["selection"]
        if self.config.passage_gate is False or (
                self.config.passage_margin is None and selection.get("passage_margin") is None):
            return None
        names = ("passage_weight", "passage_margin", "max_passages")
        weight, margin, most = (getattr(self.config, n) if getattr(self.config, n) is not None else selection.get(n)
                                for n in names)
        return float(weight or 0.0), float(margin), int(most or 1 << 30)

    def _passage_min_score(self) -> float:
        value = self.config.passage_min_score
        value = self.scorer["selection"].get("passage_min_score") if value is None else value
        return float(value or 0.0)

    def _extra_unit_words(self) -> int:
        value = self.config.extra_unit_words
        value = self.scorer["selection"].get("extra_unit_words") if value is None else value
        return int(value) if value is not None else 1 << 30

    @property
    def obligation_source(self) -> str:
        """What decides obligation-ness: the trained classifier's folder, or deontic cues."""
        if self._obligation_given:
            return "given"
        return self.classifier if self._has_classifier() else "deontic cues (no trained classifier)"

    def _has_classifier(self) -> bool:
        """A classifier folder, or a Hub id given (loaded from the Hub or its local cache; an error if neither)."""
        return Path(self.classifier).is_dir() or (self.classifier != MODAL_CUES and not looks_local(self.classifier))

    def warm(self) -> "FocusedAnswerer":
        """Load the encoder and the obligation classifier now (a Space does it before serving its first question)."""
        self.encode(["warm"])
        self.is_obligation(["warm"])
        return self

    def describe(self) -> str:
        """One line for the CLI: which models this answerer uses."""
        return (f"focused answerer: encoder {self.encoder}, obligations from {self.obligation_source}, "
                f"scorer {self._scorer_name}")

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._encode is None:
            model = shared_encoder(self.encoder, self.device, DENSE_MAX_SEQ_LENGTH)
            self._encode = functools.partial(model.encode, normalize_embeddings=True, convert_to_numpy=True,
                                             show_progress_bar=False, batch_size=64)
        return np.asarray(self._encode(texts))

    def is_obligation(self, texts: list[str]) -> list[bool]:
        if self._is_obligation is None:
            if self._has_classifier():
                self._is_obligation = obligation_classifier(self.classifier, self.device)
            else:
                logger.info("no obligation classifier at %s: the focused answerer uses deontic cues", self.classifier)
                self._is_obligation = modal_cue_obligations
        return list(self._is_obligation(texts))

    def units(self, passages: Sequence[str]) -> list[Unit]:
        return [u for i, p in enumerate(passages) for u in split_units(p, i, self._split)]

    # -- answering ----------------------------------------------------------------------------------------------
    def features(self, question: str, passages: Sequence[str], scores: Sequence[float] | None = None):
        """(units, unit features, answerability features) for one question."""
        units = self.units(passages)
        if scores is None or len(scores) != len(passages):  # no retrieval scores: rank order only
            scores = [1.0] * len(passages)
        else:
            scores = [0.0 if s is None or math.isnan(s) else float(s) for s in scores]
            if any(not 0.0 <= s <= 1.0 for s in scores):  # raw scores (BM25, unfiltered): min-max, as the pipeline
                low, high = min(scores), max(scores)
                scores = [(s - low) / (high - low) if high > low else 1.0 for s in scores]
        if not units:
            return units, np.zeros((0, len(FEATURES))), np.zeros(len(ANSWERABILITY_FEATURES))
        x, a = unit_features(question, units, list(scores), len(passages), self.encode, self.is_obligation)
        return units, x, a

    def select(self, scored: list[ScoredUnit]) -> list[ScoredUnit]:
        """The kept units, most relevant first, while the score holds and the budget allows (through the passage
        gate when the scorer or the config sets one)."""
        cfg = self.config
        usable = [s for s in scored if s.unit.words <= cfg.max_unit_words and not is_broken_unit(s.unit.text)]
        if not usable:  # every unit is a bare lead-in or too long: one unit, whole ones first, then the shortest
            usable = sorted(scored, key=lambda s: (is_broken_unit(s.unit.text), s.unit.words))[:1]
        ranked = sorted(usable, key=lambda s: -s.score)
        gate = self._gate()
        if gate is None:
            return self._fill([], ranked)
        weight, margin, most = gate
        best_of: dict[int, ScoredUnit] = {}
        for s in ranked:  # ranked by score: the first unit seen of a passage is its best
            best_of.setdefault(s.unit.passage, s)
        passage_score = {p: s.passage_score + weight * s.score for p, s in best_of.items()}
        order = sorted(passage_score, key=lambda p: -passage_score[p])
        bar = self._passage_min_score()
        cited = [p for p in order if p == order[0] or (passage_score[p] >= passage_score[order[0]] - margin
                                                        and best_of[p].score >= bar)][:most]
        lead: list[ScoredUnit] = []
        words, max_words, extra_words = 0, self._option("max_words"), self._extra_unit_words()
        for p in cited:  # each cited passage's best unit that fits (the first always does), most relevant first
            if any(p + 1 in k.numbers for k in lead):  # cited already, as a near-duplicate of a kept unit
                continue
            fitting = next((s for s in ranked if s.unit.passage == p and (not lead or (
                words + s.unit.words <= max_words and s.unit.words <= extra_words))), None)
            if fitting is None or (lead and not cfg.fallback_units and fitting is not best_of[p]):
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
        from rapidfuzz import fuzz

        return fuzz.ratio(a.unit.text, b.unit.text) >= self.config.dedup_min_ratio

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
        keep_ratio, min_score = self._option("keep_ratio"), self._option("min_score")
        max_words = self._option("max_words")
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
            if kept and s.unit.passage != kept[0].unit.passage and s.unit.words > self._extra_unit_words():
                continue  # another passage is quoted through a short unit only (the gate's cap holds here too)
            if self._duplicate(s, kept):
                continue
            kept.append(s)
            words += s.unit.words
        return kept  # the best (passage's) unit first: the sentence that answers is never buried

    def scored_units(self, units: Sequence[Unit], x: np.ndarray, question: str | None = None) -> list[ScoredUnit]:
        """Each unit with its probability of answering the question and its passage's retrieval score. A table row
        the question names by its label ("which rules in Chapter 9 ...": the row "Chapter 9: ...") scores just
        above the best unit of its passage: the named row is the answer, whatever the scorer makes of a row that
        shares every column header with its neighbours."""
        probs = _logistic(x, self.scorer["unit"])
        retrieval = x[:, FEATURES.index("retrieval_score")]
        if question:
            for i, u in enumerate(units):
                if names_row(question, u):
                    probs[i] = min(1.0, max(p for v, p in zip(units, probs) if v.passage == u.passage) + 1e-6)
        return [ScoredUnit(u, float(p), float(r)) for u, p, r in zip(units, probs, retrieval)]

    def answer(self, question: str, passages: Sequence[str], scores: Sequence[float] | None = None) -> FocusedAnswer:
        """The focused answer to one question from its passages (retrieval order) and their retrieval scores."""
        return self.answer_many([question], [passages], [scores])[0]

    def answer_many(self, questions: Sequence[str], batch: Sequence[Sequence[str]],
                    scores: Sequence[Sequence[float] | None] | None = None) -> list[FocusedAnswer]:
        if len(questions) != len(batch):
            raise ValueError(f"{len(questions)} questions but {len(batch)} passage lists")
        scores = list(scores) if scores is not None else [None] * len(batch)
        out = []
        for question, passages, item_scores in zip(questions, batch, scores):
            units, x, a = self.features(question, passages, item_scores)
            if not units:  # nothing but headings (or nothing) to quote
                out.append(FocusedAnswer(question, [], [], 0.0, False))
                continue
            scored = self.scored_units(units, x, question)
            answerability = float(_logistic(a[None, :], self.scorer["answerability"])[0])
            addressed = answerability >= self._option("answerable_threshold")
            kept = prefer_named_twin(question, self.select(scored), scored, self.config.dedup_min_ratio)
            kept = drop_repeated_titles(kept, passages, self._split)
            if self.config.focus_lists:
                kept = focus_lists(question, kept, passages, self.encode, self.config.focus_list_min_words,
                                   self.config.focus_list_margin, self.config.max_unit_words)
            kept = within_bound(kept, passages, self._option("max_words"), self.config.max_unit_words)
            # what the question asks that no given passage states ("the retrieved provisions"; not said when
            # nothing matches: the flag says it all)
            missing = missing_parts(question, [*(s.unit.text for s in kept), *passages]) \
                if addressed and self.config.say_missing else []
            out.append(FocusedAnswer(question, kept, scored, answerability, addressed, missing))
        return out

    # -- the answerer interface ---------------------------------------------------------------------------------
    def draft(self, requests: Sequence[AnswerRequest]) -> list[Draft]:
        """One draft per request: the kept units as parts (passage, offsets, the passages citing them), the
        answerability and the parts of the question not covered."""
        answers = self.answer_many([r.question for r in requests], [r.passages for r in requests],
                                   [r.scores for r in requests])
        if self.config.follow_references and self.references is not None:
            answers = [self.follow(a, r) for a, r in zip(answers, requests)]
        return [a.draft for a in answers]

    # -- following cross-references (rirag.generation.follow) ---------------------------------------------------
    #: The corpus's reference graph and passage texts by id (:meth:`attach_references`); None: nothing followed.
    references = None
    corpus_texts: Mapping | None = None

    def attach_references(self, graph, corpus_texts: Mapping) -> "FocusedAnswerer":
        """Follow cross-references through ``graph`` (:class:`rirag.xref.graph.ReferenceGraph`) when the
        config says so; ``corpus_texts``: passage id -> passage (or text), for rules outside the retrieved
        passages."""
        self.references, self.corpus_texts = graph, corpus_texts
        return self

    def follow(self, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
        """``answer`` with the cross-references of its cited passages followed (unchanged without ids)."""
        from rirag.generation.follow import follow

        if request.ids is None or self.references is None:
            return answer
        return follow(self, answer, request.passages, request.ids, request.scores, self.references,
                      self.corpus_texts or {})


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
    from rapidfuzz import fuzz

    named = rule_numbers(question)
    if not named:
        return kept
    out = []
    for k in kept:
        if not k.also or rule_numbers(k.unit.text) & named:
            out.append(k)
            continue
        twin = max((s for s in scored if s.number in k.also and rule_numbers(s.unit.text) & named
                    and fuzz.ratio(s.unit.text, k.unit.text) >= min_ratio),
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
    (:func:`rirag.text.units.list_items`: a nested sub-list stays with its item) quoted as its lead-in and only
    the items whose cosine with the question (``encode``: normalised embeddings) is within ``margin`` of the best
    item's, in passage order, an elision mark where items are left out (:func:`rirag.text.units.focus_items`).
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


def within_bound(kept: list[ScoredUnit], passages: Sequence[str], max_words: float,
                 max_unit_words: int) -> list[ScoredUnit]:
    """The length bound every focused answer keeps, whatever chose its units: no unit quotes more than
    ``max_unit_words`` words (a longer one, the only unit a passage offers, is cut at its last item or sentence
    that fits: :func:`rirag.text.units.clip_unit`), and the units after the first are kept only while the quoted
    words stay within ``max_words``, or within the first unit's length when that alone is longer (one whole rule
    stands alone)."""
    out: list[ScoredUnit] = []
    words = 0
    for k in kept:
        if k.unit.words > max_unit_words and k.unit.passage < len(passages):
            k = replace(k, unit=clip_unit(k.unit, passages[k.unit.passage], max_unit_words))
        if out and words + k.unit.words > max(max_words, out[0].unit.words):
            continue
        out.append(k)
        words += k.unit.words
    return out


def _part(s: ScoredUnit) -> DraftPart:
    """A kept unit as a draft part: its text and offsets in its passage, citing its passage and its twins' (and,
    inline, the passages its followed references lead to)."""
    return DraftPart(s.unit.text, tuple(n - 1 for n in s.numbers), s.unit.passage, s.unit.start, s.unit.end,
                     inline=s.inline, clipped=s.unit.clipped)
