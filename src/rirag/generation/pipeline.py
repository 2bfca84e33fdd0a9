"""Question → retrieved, filtered passages → cited answer; and the resumable answers file.

:func:`answer_question` is the one-call entry point (``rirag ask``, the Gradio demo); :func:`answer_items` answers
a batch of questions whose passages are known (``rirag answer``/``submit``, the benchmark). Each question's context
is what its context filter keeps (:class:`rirag.retrieval.filtering.ContextFilter`: the same from a run file of
any depth as from the retriever; :func:`select_passages`).
:func:`answer_all` answers a list of prepared questions (:func:`prepare_questions`, done once, before retrieval)
into a resumable answers file (:class:`rirag.data.answers.AnswersFile`). The session that builds the parts and calls
these is :class:`rirag.generation.session.AnsweringSession`.

Documented fallbacks, each recorded in the answer's ``warnings`` (the ``Warnings`` field of its record):

* an empty question is not sent to the generator: its answer is empty (:data:`WARN_EMPTY_QUESTION`);
* a question longer than :data:`MAX_QUESTION_CHARS` characters is cut to that length (:data:`WARN_TRUNCATED`);
* a question with no passage in the run gets an empty answer (:data:`WARN_NO_PASSAGES`);
* an empty generation stays empty (:data:`WARN_EMPTY`); an answer without citations is kept as written
  (:data:`WARN_NO_CITATIONS`); citations outside the passage list are kept as invalid (:data:`WARN_INVALID`);
* a chain-of-thought reply without an ``Answer:`` line is kept whole (:data:`WARN_NO_ANSWER_LINE`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K
from rirag.data.answers import CITATIONS_FIELD, FOLLOWED_FIELD, SHARED_TASK_FIELDS, WARNINGS_FIELD, AnswersFile
from rirag.data.obliqa import Passage
from rirag.data.questions import is_blank
from rirag.errors import DataError
from rirag.generation.base import BATCH_SIZE, Answerer, AnswerRequest, Draft, GeneratorSpec
from rirag.generation.prompts import GROUNDED_STRATEGIES, NO_ANSWER, STRATEGIES, ZERO_SHOT
from rirag.generation.render import check_strategy, written
from rirag.retrieval.filtering import ContextFilter, context_filter
from rirag.retrieval.registry import RetrieverSpec
from rirag.text.citations import ParsedAnswer, citation_records, parse_citations, placed_citations, renumbered
from rirag.validation import without_controls

logger = logging.getLogger(__name__)

#: Longest question sent to a retriever or generator; longer ones are cut (and the cut recorded).
MAX_QUESTION_CHARS = 2000

WARN_EMPTY_QUESTION = "empty question: not answered"
WARN_TRUNCATED = "question cut to {n} characters (was {m})"
WARN_NO_PASSAGES = "no retrieved passage: not answered"
WARN_EMPTY = "the generator returned nothing"
WARN_NO_CITATIONS = "the answer cites no passage"
WARN_INVALID = "{n} citation(s) outside the passage list"
WARN_NO_ANSWER_LINE = "no 'Answer:' line: the whole reply is kept"


@dataclass(frozen=True)
class AnswerOptions:
    """How questions are answered, resolved once from a command's options (``rirag ask``/``answer``/``submit``),
    a benchmark row or the demo's settings: the generator to build, the retriever to build (``None`` when the
    passages come from a run file), the prompting strategy, the passages considered per question and the context
    filter that chooses among them (a :data:`rirag.retrieval.filtering.CONTEXT_FILTERS` name)."""

    generator: GeneratorSpec = field(default_factory=GeneratorSpec)  # the default answerer
    retriever: RetrieverSpec | None = None
    strategy: str = ZERO_SHOT
    k: int = EVAL_K
    context_filter: str = DEFAULT_CONTEXT_FILTER

    @property
    def context(self) -> ContextFilter:
        return context_filter(self.context_filter)

    def retriever_manifest(self) -> dict:
        """The retriever part of a run manifest (name, model, options)."""
        spec = self.retriever
        return {"retriever": spec.name if spec else None, "retriever_model": spec.model if spec else None,
                "retriever_options": sorted([k, v] for k, v in (spec.options.items() if spec else ()))}


@dataclass
class RetrievedPassage:
    id: str
    text: str
    score: float
    document_id: int | None = None
    passage_id: str | None = None
    #: What its source's structure says (:class:`rirag.data.passage_store.Passage`): footnote marks, list items.
    marks: tuple[tuple[int, int], ...] = ()
    items: tuple[tuple[int, int], ...] = ()


@dataclass
class Answer:
    """One answered question. ``text`` is the final answer, ``raw`` the generator's whole reply."""

    question_id: str
    question: str
    passages: list[RetrievedPassage]
    text: str = ""
    raw: str = ""
    strategy: str = ZERO_SHOT
    generator: str = ""
    parsed: ParsedAnswer | None = None
    warnings: list[str] = field(default_factory=list)
    #: What the answerer returned (:class:`~rirag.generation.base.Draft`: its parts with the cited passages and
    #: spans, answerability, the parts of the question not covered).
    draft: Draft | None = None
    #: Where the answer's markers are (offset in :attr:`text`, number) when it was written from its draft's parts;
    #: ``None`` for a language model's answer, whose markers are read from its text.
    markers: list[tuple[int, int]] | None = None

    @property
    def cited(self) -> list[RetrievedPassage]:
        """The cited passages (valid citations), each once, in order of first citation; for an answer written from
        its draft's parts, in the order the parts cite them, so that a followed passage's inline marker ("subject to
        Rule 9.5.2 [3]") does not list it before the passage whose text refers to it."""
        by_id = {p.id: p for p in self.passages}
        ids = self.parsed.cited_ids if self.parsed else []
        if ids and self.draft is not None and self.draft.written is None:
            valid = set(ids)
            own = [self.passages[i].id for part in self.draft.parts for i in part.cited if 0 <= i < len(self.passages)]
            ids = list(dict.fromkeys([*(i for i in own if i in valid), *ids]))
        return [by_id[i] for i in ids]

    def shown_numbers(self) -> dict[int, int]:
        """Each passage's citation number (``n``: its 1-based place in :attr:`passages`, the record's ``[n]`` and the
        order of its RetrievedIDs, which files and scorers read) -> the number a reader is shown: the cited
        passages 1, 2, ... in the order :attr:`cited` lists them, then the others in retrieval order, so that the
        sources shown never skip (an answer citing [1] [3] [4] is shown citing [1] [2] [3])."""
        shown = self.shown_ids()
        return {n: shown[p.id] for n, p in enumerate(self.passages, start=1)}

    def shown_ids(self) -> dict[str, int]:
        """:meth:`shown_numbers` by passage id."""
        order = dict.fromkeys([*(p.id for p in self.cited), *(p.id for p in self.passages)])
        return {pid: i for i, pid in enumerate(order, start=1)}

    def shown_text(self) -> str:
        """:attr:`text` with its markers numbered as :meth:`shown_numbers` says (what ``rirag ask``, the demo and
        ``rirag serve`` show; the answers file keeps :attr:`text`)."""
        return renumbered(self.text, self.shown_numbers(), self.markers)

    def to_record(self) -> dict:
        """The shared-task answer record (:data:`rirag.data.answers.SHARED_TASK_FIELDS`) plus ``Citations`` (and
        ``Followed`` / ``Warnings`` when they apply)."""
        shared = (self.question_id, self.question, [p.text for p in self.passages], self.text,
                  [p.id for p in self.passages])
        record = dict(zip(SHARED_TASK_FIELDS, shared))
        record[CITATIONS_FIELD] = citation_records(self.parsed) if self.parsed else []
        if self.draft is not None and self.draft.followed:
            record[FOLLOWED_FIELD] = [f.as_dict() for f in self.draft.followed]
        if self.warnings:
            record[WARNINGS_FIELD] = list(self.warnings)
        return record


# -- questions and passages -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedQuestion:
    """One question as given (``question``, the record's ``Question``) and as sent on to the retriever and the
    answerer (``text``: :func:`prepare_question`), with the warnings preparing it raised."""

    id: str
    question: str
    text: str
    warnings: tuple[str, ...] = ()


def prepare_question(text: str | None) -> tuple[str, list[str]]:
    """The question as sent on (stripped, cut to :data:`MAX_QUESTION_CHARS`) and the warnings that applied."""
    if not isinstance(text, str):
        raise DataError(f"a question must be a string, got {type(text).__name__}")
    if is_blank(text):
        return "", [WARN_EMPTY_QUESTION]
    text = without_controls(text).strip()  # NUL, ESC and the like: never sent on, never echoed
    if len(text) > MAX_QUESTION_CHARS:
        return text[:MAX_QUESTION_CHARS], [WARN_TRUNCATED.format(n=MAX_QUESTION_CHARS, m=len(text))]
    return text, []


def prepare_questions(questions: Iterable[tuple[str, str]]) -> list[PreparedQuestion]:
    """``[(QuestionID, Question)]`` prepared once (:func:`prepare_question`), before retrieval."""
    out = []
    for qid, question in questions:
        text, warnings = prepare_question(question)
        out.append(PreparedQuestion(qid, question, text, tuple(warnings)))
    return out


def _structure(p) -> tuple[tuple, tuple]:
    """A corpus passage's footnote marks and list items (none for a passage that carries no structure)."""
    return getattr(p, "marks", ()), getattr(p, "items", ())


def select_passages(results: Mapping[str, float], corpus: Mapping[str, Passage], k: int = EVAL_K,
                    context: "str | bool | ContextFilter | None" = None,
                    where: str = "run") -> list[RetrievedPassage]:
    """One question's context, as passages: at most ``k`` of its results, as the context filter chooses them
    (:func:`rirag.retrieval.filtering.context_filter`: a name, a filter, ``None`` the default, ``True`` the paper's
    RIRAG filter, ``False`` the top ``k``)."""
    out = []
    for pid, score in context_filter(context).select(results, k):
        p = corpus.get(pid)
        if p is None:
            raise DataError(f"{where}: passage id {pid!r} is not in the corpus")
        out.append(RetrievedPassage(pid, p.text, float(score), p.document_id, p.passage_id, *_structure(p)))
    return out


# -- answering --------------------------------------------------------------------------------------------------


def answer_items(items: Sequence[tuple[str, str, list[RetrievedPassage]]], generator: Answerer,
                 strategy: str = ZERO_SHOT, generator_name: str | None = None) -> list[Answer]:
    """Answer ``(question_id, question, passages)`` items in one call of the answerer (see the module's
    fallbacks)."""
    prepared = prepare_questions((qid, question) for qid, question, _ in items)
    return _answer([(q, passages) for q, (_, _, passages) in zip(prepared, items)], generator, strategy,
                   generator_name)


def _answer(items: Sequence[tuple[PreparedQuestion, list[RetrievedPassage]]], generator: Answerer,
            strategy: str, generator_name: str | None = None) -> list[Answer]:
    """Answer prepared questions (:func:`prepare_questions`) with their passages: one ``generator.draft`` call for
    the batch, each draft written out by :func:`rirag.generation.render.written`."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown prompting strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")
    name = generator_name or generator.name
    check_strategy(name, generator.needs_passages, strategy)
    grounded = strategy in GROUNDED_STRATEGIES
    answers, todo = [], []
    for q, passages in items:
        answer = Answer(q.id, q.question, list(passages), strategy=strategy, generator=name, warnings=list(q.warnings))
        if q.text and not passages and grounded:
            answer.warnings.append(WARN_NO_PASSAGES)
        if q.text and (passages or not grounded):
            todo.append((answer, AnswerRequest(q.text, [p.text for p in passages], [p.score for p in passages],
                                               strategy, ids=[p.id for p in passages],
                                               marks=[_structure(p)[0] for p in passages])))
        answers.append(answer)
    drafts = generator.draft([request for _, request in todo]) if todo else []
    if len(drafts) != len(todo):
        raise RuntimeError(f"generator {name} returned {len(drafts)} drafts for {len(todo)} questions")
    for (answer, _), draft in zip(todo, drafts):
        _write(answer, draft, grounded)
    return answers


def _write(answer: Answer, draft: Draft, grounded: bool) -> None:
    """The answer's text, raw reply, citation table and warnings from its draft."""
    answer.draft = draft
    for p in draft.added:  # passages a followed cross-reference added, numbered after the retrieved ones
        answer.passages.append(RetrievedPassage(p.id, p.text, 0.0, p.document_id, p.passage_id, *_structure(p)))
    answer.text, markers = written(draft, answer.passages)
    answer.markers = markers
    answer.raw = draft.raw if draft.raw is not None else answer.text
    if not draft.answer_line:
        answer.warnings.append(WARN_NO_ANSWER_LINE)
    # the record's citation table: the text's sentences as the scorers split them, each with the numbers cited in it,
    # where render placed them (a language model's own markers are read from its text); closed-book the model saw
    # no passage, so no number it writes can point at one
    passage_ids = [p.id for p in answer.passages] if grounded else []
    answer.parsed = parse_citations(answer.text, passage_ids) if markers is None else \
        placed_citations(answer.text, markers, passage_ids)
    if not answer.text:
        answer.warnings.append(WARN_EMPTY)
    elif grounded and not answer.parsed.citations and answer.text != NO_ANSWER:
        answer.warnings.append(WARN_NO_CITATIONS)
    if answer.parsed.invalid:
        answer.warnings.append(WARN_INVALID.format(n=len(answer.parsed.invalid)))


def answer_question(question: str, retriever, generator: Answerer, strategy: str = ZERO_SHOT, *,
                    corpus: Mapping[str, Passage], k: int = EVAL_K, context: "str | bool | ContextFilter | None" = None,
                    question_id: str = "question") -> Answer:
    """Retrieve (top ``k``), filter, and answer one question with citations.

    An empty question raises :class:`~rirag.errors.DataError`; an over-long one is cut (recorded in ``warnings``).
    """
    prepared = prepare_questions([(question_id, question)])[0]
    if not prepared.text:
        raise DataError("the question is empty")
    # the depth the filter decides on, so that the context is the one a run file of any depth gives
    chosen = context_filter(context)
    results = retriever.search({question_id: prepared.text}, k=chosen.search_depth(k)).get(question_id, {})
    passages = select_passages(results, corpus, k, chosen, where="retriever") if strategy in GROUNDED_STRATEGIES \
        else []
    return _answer([(prepared, passages)], generator, strategy)[0]


# -- the shared answering loop ---------------------------------------------------------------------------------


def answer_all(questions: Sequence[PreparedQuestion], run: Mapping[str, Mapping[str, float]], corpus, generator,
               strategy: str, answers: AnswersFile, k: int = EVAL_K,
               context: "str | bool | ContextFilter | None" = None, batch_size: int = BATCH_SIZE,
               where: str = "run") -> dict:
    """Answer every prepared question not yet in ``answers`` (resumable), flushing each answer; finalizes the file
    (when anything is in it) and returns a summary.

    A :class:`~rirag.generation.base.GenerationError` stops the loop after writing everything answered so far; it is
    re-raised.
    """
    from collections import Counter

    from tqdm.auto import tqdm

    todo = [q for q in questions if q.id not in answers]
    done_before = len(questions) - len(todo)
    if done_before:
        logger.info("%s: %d of %d questions already answered; answering the other %d", answers.out, done_before,
                    len(questions), len(todo))
    name = generator.name
    warnings: Counter = Counter()
    n_citations = 0
    try:
        with tqdm(total=len(todo), desc=f"answering ({name})", unit="q") as bar:
            for start in range(0, len(todo), batch_size):
                chunk = todo[start:start + batch_size]
                items = [(q, select_passages(run.get(q.id, {}), corpus, k, context, where=f"{where}, {q.id}"))
                         for q in chunk]
                for answer in _answer(items, generator, strategy):
                    answers.write(answer.to_record())
                    warnings.update(w.split(":")[0] for w in answer.warnings)
                    n_citations += len(answer.parsed.citations) if answer.parsed else 0
                bar.update(len(chunk))
    finally:
        if len(answers):  # nothing answered (a failure before the first answer): no empty file is left behind
            answers.finalize([q.id for q in questions])
    return {"answered": len(todo), "already_done": done_before, "total": len(answers), "out": str(answers.out),
            "citations": n_citations, "warnings": dict(warnings)}
