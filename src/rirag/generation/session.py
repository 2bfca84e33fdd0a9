"""One answering session: check → load → open → ask / answer_all, the same for ``rirag ask``, ``rirag answer``,
``rirag submit`` and the demo Space (each command parses its options into
:class:`~rirag.generation.pipeline.AnswerOptions` and prints what the session returns, nothing else).

* :meth:`AnsweringSession.check`: cheap, nothing loads: the prompting strategy fits the generator, and the
  generator's model (and adapter folder) is at hand.
* :meth:`AnsweringSession.load`: the corpus (``--data``, or an injected one) and ``k`` within its size.
* :meth:`AnsweringSession.open`: the generator is built (lazily loading its models) and, when its spec follows
  cross-references, given the corpus's reference graph (``DATA/xref`` when ``rirag data xref`` wrote it, else
  resolved on the fly) and passages.
* :attr:`AnsweringSession.retriever`: built on first use (a dense index may embed the corpus then).
* :meth:`AnsweringSession.ask` answers one question (retrieve, context filter, answer, cite);
  :meth:`AnsweringSession.retrieve` and :meth:`AnsweringSession.answer_all` answer many into a resumable answers
  file (:class:`rirag.data.answers.AnswersFile`).

Questions are prepared once (:func:`rirag.generation.pipeline.prepare_questions`), before retrieval, on every path.
Every part can be injected (tests, the demo on other data): a corpus, its folder, a title function, a retriever, a
generator, a reference graph.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from rirag import validation as check
from rirag.constants import EVAL_K
from rirag.data.answers import AnswersFile
from rirag.data.obliqa import ObliQA, load_obliqa
from rirag.errors import DataError
from rirag.generation.base import BATCH_SIZE, Answerer
from rirag.generation.pipeline import Answer, AnswerOptions, PreparedQuestion, answer_all, answer_question
from rirag.generation.registry import PASSAGE_GENERATORS, build_generator, check_generator_model
from rirag.generation.render import check_strategy
from rirag.retrieval.registry import build_retriever
from rirag.retrieval.rule_labels import RuleLabelFirst

logger = logging.getLogger(__name__)

__all__ = ["AnsweringSession", "follows_references"]


def follows_references(options: AnswerOptions) -> bool:
    """The generator's spec reads cross-references: the focused answerer's ``follow_references`` or its
    ``passage_set`` (whose decision has a passage's link to the lead as a feature), carried by the spec only when
    on."""
    return any(options.generator.options.get(name) for name in ("follow_references", "passage_set"))


class AnsweringSession:
    """The corpus, retriever and generator one set of :class:`~rirag.generation.pipeline.AnswerOptions` answers with
    (see the module). ``data``: the corpus folder or Hub id (``None``: ``$RIRAG_DATA_DIR``, else the Hub dataset);
    the keyword parts, when given, are used instead of building them."""

    def __init__(self, options: AnswerOptions, data: str | None = None, *, corpus: Mapping | None = None,
                 root: str | Path | None = None, title: Callable[[int], str] | None = None, retriever=None,
                 generator: Answerer | None = None, references=None):
        self.options, self.data = options, data
        self.obliqa: ObliQA | None = None
        self.corpus, self.root, self._title = corpus, (Path(root) if root else None), title
        self._retriever, self.generator, self._references = retriever, generator, references
        self._lock = threading.RLock()
        self._opened = False

    # -- check, load, open --------------------------------------------------------------------------------------
    def check(self) -> "AnsweringSession":
        """The strategy fits the generator and its model is at hand; nothing loads (a :class:`DataError` names the
        option)."""
        spec = self.options.generator
        try:
            check_strategy(spec.name, spec.name in PASSAGE_GENERATORS, self.options.strategy)
        except ValueError as err:
            raise DataError(str(err)) from err
        try:
            check_generator_model(spec)
        except (ImportError, FileNotFoundError) as err:
            raise DataError(f"--generator {spec.name}: {_one_line(err)}") from None
        adapter = spec.options.get("adapter")
        if adapter and not Path(adapter).expanduser().is_dir():
            raise DataError(f"--adapter {adapter}: folder not found (a peft LoRA adapter folder)")
        return self

    def load(self) -> "AnsweringSession":
        """The corpus (unless injected) and ``k`` within its size."""
        with self._lock:
            if self.corpus is None:
                self.obliqa = load_obliqa(self.data)
                self.corpus, self.root = self.obliqa.corpus, self.obliqa.root
            k = check.k_within_corpus(self.options.k, len(self.corpus))  # a default k above a small corpus: its size
            if k != self.options.k:
                self.options = replace(self.options, k=k)
        return self

    def open(self) -> "AnsweringSession":
        """Load, then build the generator and give it the reference graph when it follows references; once."""
        with self._lock:
            if self._opened:
                return self
            self.load()
            if self.generator is None:
                try:
                    self.generator = build_generator(self.options.generator)
                except ValueError as err:
                    raise DataError(str(err)) from err
            if follows_references(self.options):
                self._attach_references()
            self._opened = True
        return self

    def _attach_references(self) -> None:
        if not hasattr(self.generator, "attach_references"):  # a generator given to the session that reads none
            logger.info("the generator (%s) does not read cross-references; nothing is followed",
                        type(self.generator).__name__)
            return
        if self._references is None and self.root is not None:
            from rirag.xref.graph import ReferenceGraph

            self._references = ReferenceGraph(self.root, corpus=self.corpus)
        if self._references is None:
            logger.warning("the generator would follow cross-references but has no corpus folder or graph to read "
                           "them from; nothing is followed")
            return
        self.generator.attach_references(self._references, self.corpus)

    def warm(self) -> "AnsweringSession":
        """Open, build the retriever and load the generator's models now (a Space does it before serving, so that a
        model it cannot load stops it at start, not at the first question)."""
        self.open()
        _ = self.retriever
        warm = getattr(self.generator, "warm", None)
        if callable(warm):
            warm()
        return self

    # -- parts ---------------------------------------------------------------------------------------------------
    @property
    def retriever(self):
        """The options' retriever over the corpus (its folder: the cross-reference graph of ``xref_expand``), built
        on first use; a question that is only a rule label gets that rule's passages first
        (:class:`~rirag.retrieval.rule_labels.RuleLabelFirst`)."""
        with self._lock:
            if self._retriever is None:
                if self.options.retriever is None:
                    raise DataError("no retriever: the passages come from a run file")
                self.load()
                self._retriever = RuleLabelFirst(build_retriever(self.corpus, self.options.retriever,
                                                                 root=self.root), self.corpus)
        return self._retriever

    def title(self, document_id: int) -> str:
        """A document's title (``Document N`` when the corpus names none)."""
        if self._title is not None:
            return self._title(document_id)
        if self.obliqa is not None:
            return self.obliqa.title(document_id)
        return f"Document {document_id}"

    @property
    def titles(self) -> Mapping[int, str]:
        return self.obliqa.titles if self.obliqa is not None else {}

    # -- answering -----------------------------------------------------------------------------------------------
    def ask(self, question: str, question_id: str = "question") -> Answer:
        """Retrieve, filter and answer one question with citations (an empty one is a :class:`DataError`)."""
        self.open()
        o = self.options
        return answer_question(question, self.retriever, self.generator, o.strategy, corpus=self.corpus, k=o.k,
                               context=o.context, question_id=question_id)

    def retrieve(self, questions: Sequence[PreparedQuestion], show_progress: bool = True) -> dict:
        """The run of the prepared questions (top ``max(k, 10)``, deeper when the context filter decides on more; a
        question empty once prepared is not sent)."""
        queries = {q.id: q.text for q in questions if q.text}
        depth = self.options.context.search_depth(max(self.options.k, EVAL_K))
        return self.retriever.search(queries, k=depth, show_progress=show_progress)

    def answer_all(self, questions: Sequence[PreparedQuestion], answers: AnswersFile,
                   run: Mapping[str, Mapping[str, float]], batch_size: int = BATCH_SIZE, where: str = "run") -> dict:
        """Answer every prepared question not yet in ``answers`` from ``run`` (resumable; see
        :func:`rirag.generation.pipeline.answer_all`)."""
        self.open()
        o = self.options
        return answer_all(questions, run, self.corpus, self.generator, o.strategy, answers, o.k, o.context,
                          batch_size, where)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__

