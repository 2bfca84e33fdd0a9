"""The demo's engine: question -> retrieved ObliQA passages -> cited answer, configured by environment variables.

Everything heavy (the corpus, the index, models) is built on first use, once. The retriever comes from
``rirag.retrieval.registry`` (any name it knows, any Hub model by configuration); the answer from
:func:`compose_answer`, which calls rirag's answer pipeline when the library has one and otherwise composes an
extractive answer from the top passages' opening sentences.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

logger = logging.getLogger(__name__)

#: The longest question the demo accepts (ObliQA's longest is far shorter; a paste of a whole rulebook is refused).
MAX_QUESTION_CHARS = 2000
#: (variable, default, what it sets): the Space's configuration; the Space card lists them.
ENV_VARIABLES = (
    ("RIRAG_DEMO_RETRIEVER", "bm25", "retriever name from rirag's registry: bm25, dense, hybrid, rrf, rank-fusion, "
                                     "learned-fusion"),
    ("RIRAG_DEMO_MODEL", "", "dense encoder for dense / hybrid / rrf (a Hub id or a local folder)"),
    ("RIRAG_DEMO_RETRIEVER_OPTIONS", "", "retriever options as key=value pairs separated by commas "
                                         "(e.g. alpha=0.2 or ranker=FOLDER)"),
    ("RIRAG_DEMO_GENERATOR", "extractive", "generator: extractive (obligation sentences of the passages, cited) or "
                                           "a causal LM Hub id / folder"),
    ("RIRAG_DEMO_OBLIGATION_MODEL", "", "obligation classifier of the extractive generator (Hub id or folder)"),
    ("RIRAG_DEMO_TOP_K", "5", "passages retrieved and given to the generator"),
    ("RIRAG_DATA_DIR", "", "local ObliQA folder; empty: the Hub dataset RegNLP/ObliQA"),
)


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
    generator: str = "extractive"
    obligation_model: str | None = None
    top_k: int = 5
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
        return cls(retriever=get["RIRAG_DEMO_RETRIEVER"], model=get["RIRAG_DEMO_MODEL"] or None, options=options,
                   generator=get["RIRAG_DEMO_GENERATOR"], obligation_model=get["RIRAG_DEMO_OBLIGATION_MODEL"] or None,
                   top_k=top_k, data=get["RIRAG_DATA_DIR"] or None)

    def retriever_label(self) -> str:
        label = self.retriever + (f" ({self.model})" if self.model else "")
        if self.options:
            label += " [" + ", ".join(f"{k}={v}" for k, v in self.options.items()) + "]"
        return label

    def generator_label(self) -> str:
        if self.generator == "extractive":
            return "extractive" + (f" (obligation classifier {self.obligation_model})" if self.obligation_model else "")
        return self.generator


_SENTENCE_END = re.compile(r"(?<=[.;:])\s+(?=[A-Z(])")


def _opening_sentence(text: str) -> str:
    text = " ".join(text.split())
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def compose_answer(question: str, passages: Sequence[str], generator=None) -> str:
    """An answer citing passages as [1], [2], ... in retrieval order.

    ``generator`` is anything with ``generate(list_of_messages) -> list[str]`` (rirag's generators); without one,
    the opening sentence of each of the top three passages, cited.
    """
    if generator is not None:
        from rirag.generation.prompts import build_messages

        return generator.generate([build_messages(question, list(passages))])[0]
    return " ".join(f"{_opening_sentence(p)} [{i}]" for i, p in enumerate(passages[:3], start=1))


def cited_numbers(answer: str, n_passages: int) -> list[int]:
    """Passage numbers cited as [n] or [n, m] in ``answer`` that exist, in order of first citation."""
    seen = []
    for group in re.findall(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]", answer):
        for number in re.split(r"\s*[,;]\s*", group):
            n = int(number)
            if 1 <= n <= n_passages and n not in seen:
                seen.append(n)
    return seen


class Backend:
    """Question -> {answer, citations, passages, retriever, generator}. Parts can be injected (tests, other data)."""

    def __init__(self, settings: DemoSettings | None = None, *, corpus: Mapping | None = None,
                 title: Callable[[int], str] | None = None, examples: Sequence[str] | None = None,
                 retriever=None, generator=None):
        self.settings = settings or DemoSettings.from_env()
        self._corpus, self._title, self._examples = corpus, title, list(examples) if examples else None
        self._retriever, self._generator = retriever, generator
        self._lock = threading.Lock()

    # -- lazy parts -------------------------------------------------------------------------------
    def _load_data(self) -> None:
        from rirag.data import load_obliqa

        obliqa = load_obliqa(self.settings.data)
        self._corpus = obliqa.corpus
        self._title = obliqa.title
        if self._examples is None:
            self._examples = [q.text for q in obliqa.splits.get("test", [])[:4]] + [q.text for q in obliqa.unseen[:2]]

    def examples(self) -> list[str]:
        with self._lock:
            if self._examples is None:
                self._load_data()
        return list(self._examples or [])

    def _ensure(self) -> None:
        with self._lock:
            if self._corpus is None:
                self._load_data()
            if self._retriever is None:
                from rirag.retrieval.registry import RetrieverSpec, build_retriever

                spec = RetrieverSpec(self.settings.retriever, self.settings.model, dict(self.settings.options))
                self._retriever = build_retriever(self._corpus, spec)
            if self._generator is None and self.settings.generator != "extractive":
                from rirag.generation.base import GeneratorSpec, build_generator

                self._generator = build_generator(GeneratorSpec(self.settings.generator))

    # -- answering --------------------------------------------------------------------------------
    def answer(self, question: str | None) -> dict:
        text = check_question(question)
        self._ensure()
        hits = self._retriever.search({"q": text}, k=self.settings.top_k)["q"]
        ranked = sorted(hits.items(), key=lambda kv: -kv[1])[: self.settings.top_k]
        passages = []
        for rank, (pid, score) in enumerate(ranked, start=1):
            p = self._corpus[pid]
            passages.append({"number": rank, "id": pid, "document_id": p.document_id,
                             "title": self._title(p.document_id), "passage_id": p.passage_id,
                             "score": float(score), "text": p.text})
        if not passages:
            return {"answer": "", "citations": [], "passages": [], "retriever": self.settings.retriever_label(),
                    "generator": self.settings.generator_label(),
                    "message": "No passage matches the words of this question; try rephrasing it."}
        answer = compose_answer(text, [p["text"] for p in passages], self._generator)
        cited = cited_numbers(answer, len(passages))
        return {"answer": answer, "citations": [passages[n - 1] for n in cited], "passages": passages,
                "retriever": self.settings.retriever_label(), "generator": self.settings.generator_label(),
                "message": ""}
