"""One answering job: what ``rirag answer``, ``rirag submit`` and ``rirag ask`` do between parsing their options and
printing, in the library (the commands only parse, build an :class:`AnsweringJob` and print what it returns).

A job owns, in this order, every step of a command:

1. its checks that need no data: the outputs (``--out`` a file for ``answer``, a folder for ``submit``), ``--run``,
   the combination of ``--split``/``--questions``/``--run``;
2. the answering session (:class:`~rirag.generation.session.AnsweringSession`) from the options, checked (the
   retriever's and generator's options, the strategy, the generator's model at hand; nothing loads);
3. the questions, all through :func:`rirag.data.questions.read_questions`: ``--questions FILE``, a split of the
   corpus (``answer``), or the corpus's unseen questions (``submit``: :func:`rirag.data.questions.unseen_questions`);
4. the manifest and lock of the answers (:class:`~rirag.generation.runfiles.AnswersRun`), checked before anything is
   written, then every input (the run: finite scores, passages in the corpus, every question in it);
5. retrieval (or the run's passages), the answers written to the journaled answers file (resumable), and
   ``submit``'s deliverables: the TREC run, ``answers.json`` (cited), ``answers.shared-task.json`` (the shared
   task's fields, no ``[n]`` markers) and ``submission.json``.

The options are read from ``settings``, any object holding them as attributes (the parsed command line: the
attributes of ``rirag answer``/``submit``/``ask``'s parsers). A failure of the generator while answering is logged
in one line and returned as :attr:`JobResult.failed` (the answers written so far stay, a rerun resumes); bad input is
a :class:`~rirag.errors.DataError` or :class:`~rirag.errors.UsageError` naming the option, file or record.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from rirag import validation as check
from rirag.constants import EVAL_K
from rirag.data.answers import AnswersFile, shared_task_records
from rirag.data.questions import question_ids, question_texts, read_questions, unseen_questions
from rirag.data.runs import input_path, read_trec, run_for_answers, write_trec
from rirag.data.splits import split_questions
from rirag.errors import DataError
from rirag.generation.base import GenerationError
from rirag.generation.focused.config import SWITCHES, switches_on
from rirag.generation.pipeline import Answer, AnswerOptions, prepare_questions
from rirag.generation.registry import generator_spec
from rirag.generation.runfiles import AnswersRun, build_manifest
from rirag.generation.session import AnsweringSession
from rirag.io import atomic_write_json, file_sha256
from rirag.retrieval.defaults import with_default_retriever
from rirag.retrieval.registry import retriever_spec
from rirag.text.citations import strip_citations

logger = logging.getLogger(__name__)

__all__ = ["AnsweringJob", "AskedAnswer", "JobResult", "SUBMIT_FILES", "answer_options", "generator_limits",
           "generator_manifest", "retriever_spec_from_args", "session_from_args"]

#: File names of the shared-task deliverables written by ``rirag submit``.
SUBMIT_RUN_FILE = "retrieval.trec"
SUBMIT_ANSWERS_FILE = "answers.json"
#: The shared task's answer file as its scorer reads it (:func:`rirag.data.answers.shared_task_records`: its five
#: fields, each ``Answer`` without ``[n]`` markers; the citations stay in ``answers.json``).
SUBMIT_PLAIN_ANSWERS_FILE = "answers.shared-task.json"
#: What ``rirag submit`` wrote and with which settings.
SUBMIT_SUMMARY_FILE = "submission.json"
SUBMIT_FILES = (SUBMIT_RUN_FILE, SUBMIT_ANSWERS_FILE, SUBMIT_PLAIN_ANSWERS_FILE, SUBMIT_SUMMARY_FILE)


#: Generator options and their bounds (checked by :func:`generator_limits` before any work; the command's flags are
#: bounded by the same at parse time).
GENERATOR_LIMITS = {"batch_size": ("--batch-size", "generation_batch_size", 1),
                    "max_new_tokens": ("--max-new-tokens", "max_new_tokens", 1),
                    "concurrency": ("--concurrency", "concurrency", 1),
                    "max_retries": ("--max-retries", "max_retries", 0)}
#: Generator options that change how answers are produced, not what they say: left out of the run manifest.
RUNTIME_GENERATOR_OPTIONS = frozenset({"device", "batch_size", "concurrency", "max_retries", "api_key_env"})


def generator_limits(settings: Any) -> None:
    """The generator's allocating options within :data:`rirag.validation.LIMITS` (``answer``, ``ask``,
    ``submit``)."""
    for dest, (option, limit, minimum) in GENERATOR_LIMITS.items():
        value = getattr(settings, dest, None)
        if value is not None:
            check.int_between(minimum, limit)(value, option)


def generator_manifest(settings: Any, names: Iterable[str]) -> dict[str, Any]:
    """The generator part of a run manifest: its name and every option of ``names`` (the command's generator
    options) that changes what it writes; a switch of the focused answerer only when on."""
    options = {name: getattr(settings, name, None) for name in names
               if name not in RUNTIME_GENERATOR_OPTIONS and name not in ("generator", "strategy")}
    for flag in set(SWITCHES) - set(switches_on(options)):  # off: the manifest of answers written before the option
        options.pop(flag, None)
    return {"generator": settings.generator, "generator_options": options}


# -- from the options to the session ------------------------------------------------------------------------------


def _option_items(settings: Any) -> list[tuple[str, Any]]:
    """``--option`` values as ``(key, value)`` pairs (typed by :func:`rirag.cli.options.parse_option`; a plain
    ``KEY=VALUE`` string, from a caller that builds its own namespace, is split here)."""
    items = []
    for item in getattr(settings, "option", None) or []:
        if isinstance(item, str):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise DataError(f"--option {item!r}: expected KEY=VALUE")
            item = (key.strip(), value)
        items.append(tuple(item))
    return items


def retriever_spec_from_args(settings: Any):
    """The checked retriever spec (typed options, a model where needed); cheap: nothing loads. Without
    ``--retriever``, the default one (:func:`rirag.retrieval.defaults.with_default_retriever`); ``settings`` is left
    as given."""
    name, model, items = settings.retriever, settings.model, _option_items(settings)
    if name is None:
        name, model, items = with_default_retriever(model, items)
    return retriever_spec(name, model, items)


def answer_options(settings: Any) -> AnswerOptions:
    """The options resolved once into :class:`~rirag.generation.pipeline.AnswerOptions` (checked; nothing loads;
    ``settings`` unchanged). A job answering from ``--run`` has no retriever."""
    retriever = None if getattr(settings, "run", None) else retriever_spec_from_args(settings)
    spec = generator_spec(settings.generator, settings.generator_model, settings)
    return AnswerOptions(spec, retriever, settings.strategy, settings.k,
                         "top-k" if settings.no_filter else settings.context_filter)


def session_from_args(settings: Any) -> AnsweringSession:
    """The answering session of the options, checked (the strategy fits, the generator's model is at hand); nothing
    loads."""
    return AnsweringSession(answer_options(settings), settings.data).check()


# -- what a job returns ---------------------------------------------------------------------------------------------


@dataclass
class JobResult:
    """What ``answer`` / ``submit`` did: the answers' summary (:func:`rirag.generation.pipeline.answer_all`), the
    generator's description, and ``submit``'s files. ``failed``: the generator failed while answering (logged; the
    answers written so far stay)."""

    command: str
    summary: dict = field(default_factory=dict)
    description: str | None = None
    failed: bool = False
    queries: int = 0
    run_path: Path | None = None
    plain_answers_path: Path | None = None


@dataclass
class AskedAnswer:
    """One answer of ``ask``, with the corpus's titles (to print its sources) and, for the first, the generator's
    description."""

    question: str
    answer: Answer
    titles: Mapping[int, str]
    description: str | None = None


# -- the job --------------------------------------------------------------------------------------------------------


class AnsweringJob:
    """One command's answering job (see the module). ``command``: ``"answer"``, ``"submit"`` or ``"ask"``;
    ``settings``: its options as attributes. The run manifest names the generator and every option of
    ``settings.generator_option_names`` (the command's generator options, set by its parser) that changes what it
    writes (:func:`generator_manifest`); without that attribute, the options of the generator's spec."""

    def __init__(self, command: str, settings: Any):
        if command not in ("answer", "submit", "ask"):
            raise ValueError(f"unknown answering command {command!r}")
        self.command, self.settings = command, settings
        self.session: AnsweringSession | None = None

    # -- answer and submit ----------------------------------------------------------------------------------------
    def run(self) -> JobResult:
        """``answer`` or ``submit``, from the checks to the written answers (and deliverables)."""
        if self.command == "ask":
            raise ValueError("an ask job answers through ask()")
        s = self.settings
        generator_limits(s)  # every check that needs no data, before the corpus loads
        out = self._check_outputs()
        session = self.session = session_from_args(s)
        options = session.options
        from_file = self._questions_file() if s.questions else None
        session.load()
        questions, questions_from = self._questions(from_file)
        answers_path = out if self.command == "answer" else out / SUBMIT_ANSWERS_FILE
        # the answers file: another run's answers are refused and a second writer locked out, before any work
        answers_run = self._answers_run(out, answers_path, questions, questions_from)
        if self.command == "answer" and s.run:  # then every input, before the manifest and the lock are written
            run = read_trec(s.run)
            run_for_answers(run, session.corpus, [qid for qid, _ in questions], str(s.run), s.allow_missing)
            _warn_shallow_run(run, options, len(session.corpus), str(s.run))
        session.open()  # a bad generator/strategy is reported before anything is written
        prepared = prepare_questions(questions)
        result = JobResult(self.command, queries=len(prepared))
        with answers_run:  # a failure before the first answer leaves --out as it was
            answers = AnswersFile(answers_path)  # read once the lock is held (--overwrite set the old aside)
            if not (self.command == "answer" and s.run):
                run = session.retrieve(prepared)
            where = str(s.run) if self.command == "answer" and s.run else f"retriever {options.retriever.name}"
            try:
                result.summary = session.answer_all(prepared, answers, run, s.batch_size, where)
            except GenerationError as err:
                if self.command == "answer":
                    logger.error("%s\nanswers written so far are in %s; rerun the same command to resume", err, out)
                else:
                    logger.error("%s\nthe answers written so far are in %s; rerun to resume", err, out)
                result.failed = True
                return result
            result.description = session.generator.describe()
            if self.command == "submit":  # the run once the answers are all there (a rerun retrieves again)
                system = (s.system or options.retriever.name).replace(" ", "_")
                result.run_path = write_trec({q.id: run.get(q.id, {}) for q in prepared}, out / SUBMIT_RUN_FILE,
                                             system=system, depth=EVAL_K)
        if self.command == "submit":
            self._deliverables(out, answers, questions, prepared, result)
        return result

    def _check_outputs(self) -> Path:
        s = self.settings
        if self.command == "answer":
            if bool(s.split) == bool(s.questions):
                raise DataError("pass exactly one of --split SPLIT (with --run) or --questions FILE")
            if s.split and not s.run:
                raise DataError("--split needs --run RUN.trec (the retrieval run whose passages are answered from)")
            out = check.output_file(s.out, "--out")
            if s.run:
                input_path(s.run, "--run")
            return out
        out = check.output_dir(s.out, "--out")  # --out must be a folder (an existing file is refused)
        for name in SUBMIT_FILES:
            if (out / name).is_dir():
                raise DataError(f"--out {out}: {out / name} is a folder; the submission writes a file there")
        return out

    def _questions_file(self) -> list[tuple[str, str]]:
        """The ``--questions`` file (:func:`rirag.data.questions.read_questions`), checked before the data loads."""
        input_path(self.settings.questions, "--questions")
        return [(r["QuestionID"], r["Question"]) for r in read_questions(self.settings.questions)]

    def _questions(self, from_file: list | None) -> tuple[list[tuple[str, str]], str]:
        """The questions (``--questions``, read as ``from_file``; else a split of the corpus for ``answer``, the
        corpus's unseen questions for ``submit``) and where they come from."""
        s, session = self.settings, self.session
        if from_file is not None:
            return from_file, str(s.questions)
        if self.command == "answer":
            questions = [(q.id, q.text) for q in split_questions(session.obliqa, s.split, s.seed)]
            source = f"split {s.split} (seed {s.seed})"
            question_ids(questions, source)
            return questions, source
        obliqa = session.obliqa
        unseen = unseen_questions(obliqa) if obliqa is not None else []
        if not unseen:
            raise DataError(f"{session.root}: no RIRAG_Unseen_Questions.json; pass --questions FILE")
        return [(q.id, q.text) for q in unseen], str(obliqa.unseen_path)

    def _answers_run(self, out: Path, answers: Path, questions: list[tuple[str, str]],
                     questions_from: str) -> AnswersRun:
        """The manifest and lock of the answers (see :mod:`rirag.generation.runfiles`), checked (nothing written)."""
        s, options = self.settings, self.session.options
        passages = ({"run": str(s.run), "run_sha256": file_sha256(s.run)} if self.command == "answer" and s.run
                    else options.retriever_manifest())
        names, spec = getattr(s, "generator_option_names", None), options.generator
        generator = (generator_manifest(s, names) if names is not None
                     else {"generator": spec.name, "generator_options": dict(spec.options)})
        manifest = build_manifest(self.command, questions, questions_from, passages=passages, generator=generator,
                                  strategy=options.strategy, k=options.k, context_filter=options.context.name)
        extra = {} if self.command == "answer" else {
            "label": f"--out {out} ({SUBMIT_ANSWERS_FILE})",
            "companions": (out / SUBMIT_RUN_FILE, out / SUBMIT_PLAIN_ANSWERS_FILE, out / SUBMIT_SUMMARY_FILE)}
        run = AnswersRun(answers, manifest, overwrite=s.overwrite, **extra)
        run.check()
        return run

    def _deliverables(self, out: Path, answers: AnswersFile, questions: list[tuple[str, str]], prepared: list,
                      result: JobResult) -> None:
        """``submit``'s shared-task file, from the records in memory (never read back from ``answers.json``), and
        its summary."""
        options = self.session.options
        plain_path = result.plain_answers_path = out / SUBMIT_PLAIN_ANSWERS_FILE
        atomic_write_json(plain_path, shared_task_records(answers.ordered(q for q, _ in questions), strip_citations))
        atomic_write_json(out / SUBMIT_SUMMARY_FILE, {
            "questions": len(questions), "run": str(result.run_path), "answers": result.summary["out"],
            "answers_shared_task": str(plain_path),
            **options.retriever_manifest(), "generator": self.session.generator.name, "strategy": options.strategy,
            "run_depth": EVAL_K, "empty_questions": [q.id for q in prepared if not q.text]})

    # -- ask ------------------------------------------------------------------------------------------------------
    def ask(self) -> Iterator[AskedAnswer]:
        """``ask``: each of ``settings.question`` answered in turn (yielded as it is ready); cold-start and
        per-answer times logged, and written to ``settings.timings`` when set."""
        s = self.settings
        generator_limits(s)
        session = self.session = session_from_args(s)
        question_texts([(f"ask-{i + 1}", q) for i, q in enumerate(s.question)], "the questions given")
        if getattr(s, "timings", None):
            check.output_file(s.timings, "--timings")
        start, cpu_start = time.perf_counter(), time.process_time()
        session.open()
        _ = session.retriever
        timings, cpu = [], []
        for i, question in enumerate(s.question):
            t, c = time.perf_counter(), time.process_time()
            try:
                answer = session.ask(question, question_id=f"ask-{i + 1}")
            except GenerationError as err:
                raise DataError(str(err)) from err
            timings.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            yield AskedAnswer(question, answer, session.titles, session.generator.describe() if i == 0 else None)
            if i == 0:
                cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu_start
        self._log_timings(cold, cold_cpu, timings, cpu)

    def _log_timings(self, cold: float, cold_cpu: float, timings: list[float], cpu: list[float]) -> None:
        """Wall time depends on what else runs; CPU seconds (all threads of this process) less so: both are logged,
        and written to ``--timings``."""
        later, later_cpu = timings[1:], cpu[1:]
        logger.info("cold start to first answer %.1f s wall, %.1f s CPU (first answer itself %.1f s wall)%s", cold,
                    cold_cpu, timings[0], f"; later answers {sum(later) / len(later):.2f} s wall, "
                    f"{sum(later_cpu) / len(later_cpu):.2f} s CPU each over {len(later)}" if later else "")
        s = self.settings
        if getattr(s, "timings", None):
            options = self.session.options
            atomic_write_json(s.timings, {"cold_start_s": cold, "cold_start_cpu_s": cold_cpu, "answer_s": timings,
                                          "answer_cpu_s": cpu, "retriever": options.retriever.name,
                                          "generator": self.session.generator.name, "strategy": options.strategy,
                                          "max_new_tokens": getattr(s, "max_new_tokens", None)})


def _warn_shallow_run(run: dict, options: AnswerOptions, corpus_size: int, where: str) -> None:
    """A run shallower than the depth the context filter normalises over gives other contexts than ``ask``,
    ``submit`` or a deeper run: said once."""
    context = options.context
    depth = min(context.depth, corpus_size)
    if not context.filters or depth <= options.k:
        return
    deepest = max((len(results) for results in run.values()), default=0)
    # a run cut at the context size (a submit run, rirag retrieve --k 10); a deeper one that holds fewer than
    # ``depth`` for every question may be the retriever's whole list (BM25 leaves out passages scoring 0)
    if 0 < deepest <= max(options.k, EVAL_K):
        logger.warning("%s holds at most %d results per question: --context-filter %s normalises over the top %d, "
                       "so its contexts differ from a deeper run's (rirag retrieve --k %d)",
                       where, deepest, context.name, depth, depth)
