"""The focused answerer (:class:`FocusedAnswerer`, ``--generator focused``): the steps of
:mod:`rirag.generation.focused` for a batch of questions, the models it loads lazily (the encoder, the obligation
detector, the frozen scorer) and the answerer interface (:meth:`FocusedAnswerer.draft`)."""

from __future__ import annotations

import functools
import logging
import math
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from rirag.constants import DENSE_MAX_SEQ_LENGTH, ENCODED_TEXTS_KEPT, OFFLINE_ENCODER, UNIT_ENCODE_BATCH_SIZE
from rirag.errors import DataError
from rirag.generation.base import DEFAULT_OBLIGATION_CLASSIFIER, FOCUSED, AnswerRequest, Draft
from rirag.generation.extractive import MODAL_CUES, modal_cue_obligations, obligation_classifier
from rirag.generation.focused.answer import FocusedAnswer
from rirag.generation.focused.config import SWITCHES, FocusedConfig
from rirag.generation.focused.follow import FOLLOW_SCOPES, connect_linked, follow
from rirag.generation.focused.passage_set import candidates, decide, load_passage_set
from rirag.generation.focused.passes import run_passes
from rirag.generation.focused.scorer import (
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
from rirag.generation.focused.selection import (
    Limits,
    PassageSetFn,
    Selection,
    drop_contrasted,
    drop_repeated_titles,
    focus_lists,
    prefer_named_twin,
    quoted_bound,
    rules_for_notes,
    with_antecedents,
    within_bound,
)
from rirag.models import looks_local
from rirag.retrieval.encoder import shared_encoder
from rirag.text.missing_parts import missing_parts
from rirag.text.units import Unit, names_row, split_units
from rirag.xref.graph import Link, ReferenceGraph

logger = logging.getLogger(__name__)


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
                 split: Callable[[str], Sequence[str]] | None = None, **switches: bool | None):
        unknown = sorted(set(switches) - set(SWITCHES))
        if unknown:
            raise TypeError(f"FocusedAnswerer got unknown option(s) {unknown}; its switches are {list(SWITCHES)}")
        # the switches (`--follow-references`, `--focus-lists`: rirag.generation.focused.config), None: the config's
        self.config = replace(config or FocusedConfig(), **{k: v for k, v in switches.items() if v is not None})
        if classifier and classifier != MODAL_CUES and is_obligation is None and not Path(classifier).is_dir() \
                and looks_local(classifier):  # a Hub id loads from the Hub or its cache (a Space sets one)
            raise DataError(f"obligation classifier {classifier!r} is not a folder; leave --generator-model out to use "
                            f"{DEFAULT_OBLIGATION_CLASSIFIER} when trained (else deontic cues), or pass {MODAL_CUES}")
        self.classifier = classifier or DEFAULT_OBLIGATION_CLASSIFIER
        self.encoder = encoder or OFFLINE_ENCODER
        self.device = device
        self._scorer = scorer
        self._scorer_name = scorer if isinstance(scorer, str) else ("given" if scorer is not None else
                                                                     f"rirag/generation/focused/{SCORER_FILE.name}")
        self._encode = encode
        self._encode_given = encode is not None
        self._vectors: dict[str, np.ndarray] = {}  # text -> its vector (encode), at most ENCODED_TEXTS_KEPT
        self._vectors_lock = threading.Lock()
        self._is_obligation = is_obligation
        self._obligation_given = is_obligation is not None
        self._split = split

    # -- models (lazy) ------------------------------------------------------------------------------------------
    @property
    def scorer(self) -> dict:
        if not isinstance(self._scorer, dict):
            self._scorer = load_scorer(self._scorer)
        return self._scorer

    @property
    def limits(self) -> Limits:
        """The selection options of the answerer's ``config``, unset ones the scorer's."""
        return Limits(self.config, self.scorer["selection"])

    def _option(self, name: str) -> float:
        """Selection option ``name`` (:meth:`Limits.option`)."""
        return self.limits.option(name)

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
        """Unit-normalised embeddings of ``texts``; a text embedded before (one at a time, so the same vector
        whatever came with it) is read from a bounded memory: a pass after the selection reads the units' vectors
        again without embedding them twice."""
        if self._encode is None:
            model = shared_encoder(self.encoder, self.device, DENSE_MAX_SEQ_LENGTH)
            self._encode = functools.partial(model.encode, normalize_embeddings=True, convert_to_numpy=True,
                                             show_progress_bar=False, batch_size=UNIT_ENCODE_BATCH_SIZE)
        if UNIT_ENCODE_BATCH_SIZE != 1 or self._encode_given:  # batched (padding) or given: as it comes
            return np.asarray(self._encode(texts))
        if not texts:
            return np.asarray(self._encode(texts))
        with self._vectors_lock:  # concurrent answers (rirag serve) share the memory
            have = {t: self._vectors[t] for t in texts if t in self._vectors}
        new = list(dict.fromkeys(t for t in texts if t not in have))
        if new:
            vectors = np.asarray(self._encode(new))
            have.update(zip(new, vectors))
            with self._vectors_lock:
                if len(self._vectors) + len(new) > ENCODED_TEXTS_KEPT:
                    self._vectors.clear()
                self._vectors.update(zip(new, vectors))
        return np.stack([have[t] for t in texts])

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

    def score_units(self, question: str, passages: Sequence[str],
                    scores: Sequence[float] | None = None) -> list[ScoredUnit]:
        """Every unit of ``passages`` scored against ``question`` (:meth:`features`, then :meth:`scored_units`);
        none when the passages hold no unit."""
        units, x, _ = self.features(question, passages, scores)
        return self.scored_units(units, x, question) if units else []

    def select(self, scored: list[ScoredUnit], passage_set: PassageSetFn | None = None) -> list[ScoredUnit]:
        """The kept units, most relevant first (:class:`~rirag.generation.focused.selection.Selection`)."""
        return Selection(self.limits, passage_set)(scored)

    @property
    def passage_set_model(self) -> dict:
        """The frozen passage-set decision (:func:`rirag.generation.focused.passage_set.load_passage_set`)."""
        return load_passage_set(self.config.passage_set_file)

    def passage_set(self, question: str, passages: Sequence[str], scored: list[ScoredUnit], x: np.ndarray,
                    links: Mapping[tuple[int, int], Link],
                    labels: Sequence[tuple[int, str] | None] | None = None) -> PassageSetFn:
        """The passage-set decision for one question, as the selection calls it (the usable units, the lead);
        ``links``: the given passages' references to one another (:meth:`context_links`); ``labels``: their
        places in the rulebook (:meth:`context_labels`)."""
        model = self.passage_set_model
        position = {id(s): i for i, s in enumerate(scored)}

        def choose(usable: Sequence[ScoredUnit], lead: int) -> list[int]:
            c = candidates(question, passages, scored, x, lead, [position[id(s)] for s in usable], links, labels)
            return decide(c, model, self.config.passage_set_threshold)

        return choose

    def context_links(self, ids: Sequence[str]) -> dict[tuple[int, int], Link]:
        """``(i, j) -> Link`` when the ``i``-th given passage refers to the ``j``-th (the attached reference graph;
        none without one). A reference to more than ``follow_max_targets`` passages (a whole chapter) is no link."""
        if self.references is None:
            return {}
        where = {pid: j for j, pid in enumerate(ids)}
        out: dict[tuple[int, int], Link] = {}
        for i, pid in enumerate(ids):
            for link in self.references.links(pid):
                if len(link.targets) <= self.config.follow_max_targets:
                    for t in link.targets:
                        if t in where and where[t] != i:
                            out.setdefault((i, where[t]), link)
        return out

    def context_labels(self, ids: Sequence[str] | None) -> list[tuple[int, str] | None] | None:
        """Each given passage's (document id, passage label) from the attached corpus (:meth:`attach_references`);
        None for a passage it does not hold or without ids or a corpus."""
        if ids is None or not self.corpus_texts:
            return None
        out: list[tuple[int, str] | None] = []
        for pid in ids:
            p = self.corpus_texts.get(pid)
            document, label = getattr(p, "document_id", None), getattr(p, "passage_id", None)
            out.append((document, label) if document is not None and label is not None else None)
        return out

    def answer(self, question: str, passages: Sequence[str], scores: Sequence[float] | None = None,
               ids: Sequence[str] | None = None) -> FocusedAnswer:
        """The focused answer to one question from its passages (retrieval order), their retrieval scores and ids
        (the ids give the passage-set decision its cross-reference links)."""
        return self.answer_many([question], [passages], [scores], [ids])[0]

    def answer_many(self, questions: Sequence[str], batch: Sequence[Sequence[str]],
                    scores: Sequence[Sequence[float] | None] | None = None,
                    ids: Sequence[Sequence[str] | None] | None = None) -> list[FocusedAnswer]:
        if len(questions) != len(batch):
            raise ValueError(f"{len(questions)} questions but {len(batch)} passage lists")
        scores = list(scores) if scores is not None else [None] * len(batch)
        ids = list(ids) if ids is not None else [None] * len(batch)
        out = []
        for question, passages, item_scores, item_ids in zip(questions, batch, scores, ids):
            units, x, a = self.features(question, passages, item_scores)
            if not units:  # nothing but headings (or nothing) to quote
                out.append(FocusedAnswer(question, [], [], 0.0, False))
                continue
            scored = self.scored_units(units, x, question)
            answerability = float(_logistic(a[None, :], self.scorer["answerability"])[0])
            addressed = answerability >= self._option("answerable_threshold")
            # the passages' references to one another: a feature of the passage set, and how linked rules are quoted
            # (with the passage set or following: two cited rules, one referring to the other, are quoted together)
            reads_links = self.config.passage_set or self.config.follow_references
            linked = self.context_links(item_ids) if reads_links and item_ids is not None else {}
            chooser = self.passage_set(question, passages, scored, x, linked, self.context_labels(item_ids)) \
                if self.config.passage_set else None
            kept = prefer_named_twin(question, self.select(scored, chooser), scored, self.config.dedup_min_ratio)
            kept = drop_contrasted(question, kept, self.config.dedup_min_ratio)
            kept = drop_repeated_titles(kept, passages, self._split)
            if self.config.focus_lists:
                kept = focus_lists(question, kept, passages, self.encode, self.config.focus_list_min_words,
                                   self.config.focus_list_margin, self.config.max_unit_words)
            per_passage = self._per_passage()
            kept = within_bound(kept, passages, self._option("max_words"), self.config.max_unit_words, per_passage)
            kept = self._rules_for_notes(kept, scored, passages, quoted_bound(kept, self._option("max_words"),
                                                                              per_passage))
            if self.config.antecedents:  # "This includes ..." quoted with the sentence it points back at
                cap, bound = self.config.max_unit_words, quoted_bound(kept, self._option("max_words"), per_passage)
                kept = with_antecedents(kept, scored, passages, bound, cap, min(cap, per_passage or cap))
            # what the question asks that no given passage states ("the retrieved provisions"; off by default,
            # --say-missing; not said when nothing matches: the flag says it all)
            missing = missing_parts(question, [*(s.unit.text for s in kept), *passages]) \
                if addressed and self.config.say_missing else []
            answer = FocusedAnswer(question, kept, scored, answerability, addressed, missing)
            # two cited rules, one referring to the other: the referred one quoted after it, marked at the reference
            out.append(connect_linked(answer, passages, item_ids, linked) if linked else answer)
        return out

    # -- the answerer interface ---------------------------------------------------------------------------------
    def draft(self, requests: Sequence[AnswerRequest]) -> list[Draft]:
        """One draft per request: the kept units as parts (passage, offsets, the passages citing them), the
        answerability and the parts of the question not covered."""
        answers = self.answer_many([r.question for r in requests], [r.passages for r in requests],
                                   [r.scores for r in requests], [r.ids for r in requests])
        # the passes after the selection, in the order of their table (rirag.generation.focused.passes)
        return [run_passes(self, a, r).draft for a, r in zip(answers, requests)]

    def _per_passage(self) -> int | None:
        """The words each cited passage after the first adds to the bound (the passage set's answers), or None."""
        return self.limits.extra_unit_words() if self.config.passage_set else None

    def _rules_for_notes(self, kept: list[ScoredUnit], scored: Sequence[ScoredUnit], passages: Sequence[str],
                         bound: float) -> list[ScoredUnit]:
        """``kept`` with each bare source note quoted through its passage's rule (``note_rules``;
        :func:`~rirag.generation.focused.selection.rules_for_notes`) within ``bound`` words."""
        if not self.config.note_rules:
            return kept
        cap = self.config.max_unit_words
        return rules_for_notes(kept, scored, passages, bound, cap, min(cap, self.limits.extra_unit_words()))

    def followed_notes(self, before: FocusedAnswer, after: FocusedAnswer, passages: Sequence[str]) -> FocusedAnswer:
        """``after`` (``before`` with references followed) with a followed unit that is a bare source note quoted
        through its rule, within the bound following grew (``extra_unit_words`` for each passage followed)."""
        new = len(after.kept) - len(before.kept)  # following only adds units, one a passage followed
        if after is before or new <= 0:
            return after
        bound = quoted_bound(before.kept, self._option("max_words"), self._per_passage()) \
            + new * self.limits.extra_unit_words()
        kept = self._rules_for_notes(after.kept, after.scored, passages, bound)
        return after if kept is after.kept else replace(after, kept=kept)

    # -- following cross-references (rirag.generation.focused.follow) -------------------------------------------
    #: The corpus's reference graph and passage texts by id (:meth:`attach_references`); None: nothing followed.
    references: ReferenceGraph | None = None
    corpus_texts: Mapping | None = None

    def attach_references(self, graph: ReferenceGraph, corpus_texts: Mapping) -> "FocusedAnswerer":
        """Follow cross-references through ``graph`` (:class:`rirag.xref.graph.ReferenceGraph`) when the
        config says so; ``corpus_texts``: passage id -> passage (or text), for rules outside the retrieved
        passages."""
        self.references, self.corpus_texts = graph, corpus_texts
        return self

    def follow(self, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
        """``answer`` with the cross-references of its cited passages followed (unchanged without ids)."""
        if request.ids is None or self.references is None:
            return answer
        scope = self.config.follow_scope
        if scope not in FOLLOW_SCOPES:
            raise ValueError(f"follow_scope must be one of {', '.join(FOLLOW_SCOPES)}, got {scope!r}")
        corpus = (self.corpus_texts or {}) if scope == "corpus" else {}
        return follow(self, answer, request.passages, request.ids, request.scores, self.references, corpus)
