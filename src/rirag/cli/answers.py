"""``rirag answer``, ``rirag ask`` and ``rirag submit``: thin commands over one answering session
(:class:`rirag.generation.session.AnsweringSession`): each parses its options, checks its outputs, hands the session
its questions and prints what comes back.

    rirag answer (--run RUN.trec --split SPLIT | --questions FILE [--run RUN.trec]) --out answers.json
                 [--generator G] [--strategy S] [--k 10] [--context-filter F] [--allow-missing]
    rirag ask "question" ["another question" ...] [--retriever R] [--generator G] [--strategy S]
    rirag submit [--questions RIRAG_Unseen_Questions.json] --out DIR [--retriever R] [--generator G]

``--generator``: ``focused`` (the default, :data:`rirag.generation.base.DEFAULT_GENERATOR`: the question-focused
extractive answerer, no language model), ``extractive``, ``endpoint`` (with ``--generator-model NAME --base-url
URL``), or a causal LM (Hub id, folder, ``.gguf`` file; ``smollm2-135m-instruct`` is the offline SmolLM2-135M-Instruct
of its wheel); the table is in :mod:`rirag.generation.base`. Answers files are resumable: rerun the
same command after an interruption and only the missing questions are answered. A manifest beside the answers
(:mod:`rirag.generation.runfiles`) keeps runs from mixing: answers of another run (other questions, run, retriever,
generator options, k or filter) stop the command with one line unless ``--overwrite``, and a lock keeps a second
command off the same answers. Every check on the outputs, and the bounds of the options
(:data:`rirag.validation.LIMITS`), come before retrieval or any model loads; every input (the run: finite scores,
passages in the corpus, every question in it; the questions: :func:`rirag.data.questions.read_questions`; the
generator's model: at hand) is checked before the manifest, the lock or any answer is written, and a command that
ends before its first answer leaves ``--out`` as it found it (:class:`~rirag.generation.runfiles.AnswersRun`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from rirag import validation as check
from rirag.cli import checks
from rirag.cli.options import (
    add_data_option,
    add_generator_options,
    add_k_option,
    add_max_input_option,
    add_overwrite_option,
    add_retriever_options,
    add_split_option,
    add_system_option,
)
from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K
from rirag.data.answers import AnswersFile, shared_task_records
from rirag.data.questions import read_questions
from rirag.data.runs import read_trec, write_trec
from rirag.data.splits import split_questions
from rirag.errors import DataError
from rirag.exit_codes import EXIT_GENERATION_ERROR, EXIT_OK
from rirag.generation.base import GenerationError
from rirag.generation.focused.config import SWITCHES, switches_on
from rirag.generation.pipeline import AnswerOptions, prepare_questions
from rirag.generation.registry import generator_spec
from rirag.generation.runfiles import AnswersRun, build_manifest, file_sha256
from rirag.generation.session import AnsweringSession
from rirag.io import atomic_write_json
from rirag.retrieval.defaults import with_default_retriever
from rirag.retrieval.filtering import CONTEXT_FILTERS
from rirag.retrieval.registry import retriever_spec
from rirag.text.citations import strip_citations

logger = logging.getLogger(__name__)

#: File names of the shared-task deliverables written by ``rirag submit``.
SUBMIT_RUN_FILE = "retrieval.trec"
SUBMIT_ANSWERS_FILE = "answers.json"
#: The shared task's answer file as its scorer reads it (:func:`rirag.data.answers.shared_task_records`: its five
#: fields, each ``Answer`` without ``[n]`` markers; the citations stay in ``answers.json``).
SUBMIT_PLAIN_ANSWERS_FILE = "answers.shared-task.json"
#: What ``rirag submit`` wrote and with which settings.
SUBMIT_SUMMARY_FILE = "submission.json"
#: What ``--retriever`` defaults to (said in the help): :func:`rirag.retrieval.defaults.default_retriever`.
WHY_DEFAULT_RETRIEVER = ("the best row of the cross-validation that needs no trained model, "
                         "benchmarks/results/retrieval_cv.json")


# -- from the parsed options to the session ------------------------------------------------------------------


def _option_items(args: Any) -> list[tuple[str, Any]]:
    """``--option`` values as ``(key, value)`` pairs (typed by :func:`rirag.cli.options.parse_option`; a plain
    ``KEY=VALUE`` string, from a caller that builds its own namespace, is split here)."""
    items = []
    for item in args.option:
        if isinstance(item, str):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise DataError(f"--option {item!r}: expected KEY=VALUE")
            item = (key.strip(), value)
        items.append(tuple(item))
    return items


def retriever_spec_from_args(args: Any):
    """The checked retriever spec (typed options, a model where needed); cheap: nothing loads. Without
    ``--retriever``, the default one (:func:`rirag.retrieval.defaults.with_default_retriever`); ``args`` is left as
    parsed."""
    name, model, items = args.retriever, args.model, _option_items(args)
    if name is None:
        name, model, items = with_default_retriever(model, items)
    return retriever_spec(name, model, items)


def answer_options(args: Any) -> AnswerOptions:
    """The command's options resolved once into :class:`~rirag.generation.pipeline.AnswerOptions` (checked; nothing
    loads; ``args`` unchanged). A command answering from ``--run`` has no retriever."""
    retriever = None if getattr(args, "run", None) else retriever_spec_from_args(args)
    spec = generator_spec(args.generator, args.generator_model, args)
    return AnswerOptions(spec, retriever, args.strategy, args.k, "top-k" if args.no_filter else args.context_filter)


def session_from_args(args: Any) -> AnsweringSession:
    """The command's answering session, checked (the strategy fits, the generator's model is at hand); nothing
    loads."""
    return AnsweringSession(answer_options(args), args.data).check()


#: Generator options that change how answers are produced, not what they say: left out of the run manifest.
RUNTIME_GENERATOR_OPTIONS = frozenset({"device", "batch_size", "concurrency", "max_retries", "api_key_env"})


def _generator_option_names() -> list[str]:
    """Every option :func:`add_generator_options` defines (read from a throwaway parser, so a new one is included)."""
    probe = argparse.ArgumentParser(add_help=False)
    add_generator_options(probe)
    return list(vars(probe.parse_args([])))


def generator_manifest(args: Any) -> dict[str, Any]:
    """The generator part of a run manifest: its name and every option that changes what it writes."""
    options = {name: getattr(args, name, None) for name in _generator_option_names()
               if name not in RUNTIME_GENERATOR_OPTIONS and name not in ("generator", "strategy")}
    for flag in set(SWITCHES) - set(switches_on(options)):  # off: the manifest of answers written before the option
        options.pop(flag, None)
    return {"generator": args.generator, "generator_options": options}


def _summary(summary: dict, session: AnsweringSession) -> str:
    lines = [f"answered {summary['answered']} questions ({summary['already_done']} already done) → {summary['out']}"
             f" ({summary['total']} records, {summary['citations']} citations in the new answers)"]
    description = session.generator.describe()
    if description:
        lines.append(f"answered by the {description}")
    for w, n in sorted(summary["warnings"].items()):
        lines.append(f"  {n} × {w}")
    return "\n".join(lines) + "\n"


def _answers_run(command: str, args: Any, options: AnswerOptions, answers: Path, questions: list[tuple[str, str]],
                 questions_from: str, passages: dict[str, Any], label: str | None = None, companions: tuple = ()):
    """The manifest and lock of ``answers`` (see :mod:`rirag.generation.runfiles`), checked (nothing written)."""
    manifest = build_manifest(command, questions, questions_from, passages=passages,
                              generator=generator_manifest(args), strategy=options.strategy, k=options.k,
                              context_filter=options.context.name)
    run = AnswersRun(answers, manifest, overwrite=args.overwrite, label=label, companions=companions)
    run.check()
    return run


def _questions_file(args: Any) -> list[tuple[str, str]]:
    """The ``--questions`` file (:func:`rirag.data.questions.read_questions`), checked before the data loads."""
    checks.input_path(args.questions, "--questions")
    return [(r["QuestionID"], r["Question"]) for r in read_questions(args.questions)]


def _answer_questions(args: Any, session: AnsweringSession, from_file: list | None) -> tuple[list, str]:
    """``rirag answer``'s questions (``--questions``, read as ``from_file``, or a split of the corpus) and where they
    come from."""
    if from_file is not None:
        return from_file, str(args.questions)
    questions = [(q.id, q.text) for q in split_questions(session.obliqa, args.split, args.seed)]
    source = f"split {args.split} (seed {args.seed})"
    checks.question_ids(questions, source)
    return questions, source


# -- rirag answer -------------------------------------------------------------------------------------------------


def cmd_answer(args: Any) -> int:
    # every check that needs no data, before the corpus loads
    checks.generator_limits(args)
    if bool(args.split) == bool(args.questions):
        raise DataError("pass exactly one of --split SPLIT (with --run) or --questions FILE")
    if args.split and not args.run:
        raise DataError("--split needs --run RUN.trec (the retrieval run whose passages are answered from)")
    out = check.output_file(args.out, "--out")
    if args.run:
        checks.input_path(args.run, "--run")
    session = session_from_args(args)
    options = session.options
    from_file = _questions_file(args) if args.questions else None
    session.load()
    questions, questions_from = _answer_questions(args, session, from_file)
    passages = {"run": str(args.run), "run_sha256": file_sha256(args.run)} if args.run \
        else options.retriever_manifest()
    # the answers file: another run's answers are refused, before any work
    answers_run = _answers_run("answer", args, options, out, questions, questions_from, passages)
    # then every input, before the manifest and the lock are written: the run (finite scores, passages in the
    # corpus, every question in it) and the generator
    if args.run:
        run = read_trec(args.run)
        checks.run_for_answers(run, session.corpus, [qid for qid, _ in questions], str(args.run), args.allow_missing)
        _warn_shallow_run(run, options, len(session.corpus), str(args.run))
    session.open()
    prepared = prepare_questions(questions)
    with answers_run:  # a second writer is locked out; a failure before the first answer leaves --out as it was
        if not args.run:
            run = session.retrieve(prepared)
        where = str(args.run) if args.run else f"retriever {options.retriever.name}"
        try:
            summary = session.answer_all(prepared, AnswersFile(out), run, args.batch_size, where)
        except GenerationError as err:
            logger.error("%s\nanswers written so far are in %s; rerun the same command to resume", err, out)
            return EXIT_GENERATION_ERROR
    sys.stdout.write(_summary(summary, session))
    return EXIT_OK


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


# -- rirag ask ----------------------------------------------------------------------------------------------------


def format_answer(answer, titles: dict[int, str]) -> str:
    """The answer, then each cited passage: [n] title · PassageID (score) and a snippet; control characters escaped
    (:func:`rirag.validation.printable`)."""
    lines = [textwrap.fill(answer.text or "(no answer)", 100), ""]
    numbers = {p.id: i for i, p in enumerate(answer.passages, start=1)}
    cited = answer.cited
    if cited:
        lines.append("Sources:")
    elif answer.passages:
        lines.append("The answer cites no passage. Passages given to the generator:")
        cited = answer.passages
    for p in cited:
        title = titles.get(p.document_id, f"Document {p.document_id}")
        lines.append(f"  [{numbers[p.id]}] {title} · {p.passage_id} · id {p.id} · score {p.score:.3f}")
        lines.append(textwrap.indent(textwrap.fill(textwrap.shorten(p.text, 400, placeholder=" …"), 96), "      "))
    for c in (answer.parsed.invalid if answer.parsed else []):
        lines.append(f"  [{c.number}] (invalid: there are only {len(answer.passages)} passages)")
    for f in (answer.draft.followed if answer.draft is not None else []):
        lines.append(f"followed: {f.reference} -> [{f.target}] (referred to by [{f.source}])")
    for w in answer.warnings:
        lines.append(f"note: {w}")
    # the question, the passages and what the generator made of them: escape sequences are shown, never obeyed
    return check.printable("\n".join(lines)) + "\n"


def cmd_ask(args: Any) -> int:
    checks.generator_limits(args)
    session = session_from_args(args)
    checks.question_texts([(f"ask-{i + 1}", q) for i, q in enumerate(args.question)], "the questions given")
    if args.timings:
        check.output_file(args.timings, "--timings")
    start, cpu_start = time.perf_counter(), time.process_time()
    session.open()
    _ = session.retriever
    timings, cpu = [], []
    for i, question in enumerate(args.question):
        t, c = time.perf_counter(), time.process_time()
        try:
            answer = session.ask(question, question_id=f"ask-{i + 1}")
        except GenerationError as err:
            raise DataError(str(err)) from err
        timings.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        if len(args.question) > 1:
            sys.stdout.write(f"\nQ: {check.printable(question)}\n")
        sys.stdout.write(format_answer(answer, session.titles))
        description = session.generator.describe() if i == 0 else None
        if description:
            sys.stdout.write(f"(answered by the {description})\n")
        if i == 0:
            cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    _log_timings(args, session, cold, cold_cpu, timings, cpu)
    return EXIT_OK


def _log_timings(args: Any, session: AnsweringSession, cold: float, cold_cpu: float, timings: list[float],
                 cpu: list[float]) -> None:
    """Wall time depends on what else runs; CPU seconds (all threads of this process) less so: both are logged,
    and written to ``--timings``."""
    later, later_cpu = timings[1:], cpu[1:]
    logger.info("cold start to first answer %.1f s wall, %.1f s CPU (first answer itself %.1f s wall)%s", cold,
                cold_cpu, timings[0], f"; later answers {sum(later) / len(later):.2f} s wall, "
                f"{sum(later_cpu) / len(later_cpu):.2f} s CPU each over {len(later)}" if later else "")
    if args.timings:
        options = session.options
        atomic_write_json(args.timings, {"cold_start_s": cold, "cold_start_cpu_s": cold_cpu, "answer_s": timings,
                                         "answer_cpu_s": cpu, "retriever": options.retriever.name,
                                         "generator": session.generator.name, "strategy": options.strategy,
                                         "max_new_tokens": args.max_new_tokens})


# -- rirag submit -------------------------------------------------------------------------------------------------


def _submit_questions(args: Any, session: AnsweringSession, from_file: list | None) -> tuple[list, str]:
    """``rirag submit``'s questions (``--questions``, read as ``from_file``, else the corpus's unseen questions) and
    where they come from."""
    if from_file is not None:
        return from_file, str(args.questions)
    obliqa = session.obliqa
    if obliqa is None or not obliqa.unseen:
        raise DataError(f"{session.root}: no RIRAG_Unseen_Questions.json; pass --questions FILE")
    questions = [(q.id, q.text) for q in obliqa.unseen]
    source = f"{obliqa.root}/RIRAG_Unseen_Questions.json"
    checks.question_ids(questions, source)  # the run holds them: one word each
    return questions, source


def cmd_submit(args: Any) -> int:
    # every check that needs no data, before the corpus loads: --out must be a folder (an existing file is refused)
    checks.generator_limits(args)
    out = check.output_dir(args.out, "--out")
    for name in (SUBMIT_RUN_FILE, SUBMIT_ANSWERS_FILE, SUBMIT_PLAIN_ANSWERS_FILE, SUBMIT_SUMMARY_FILE):
        if (out / name).is_dir():
            raise DataError(f"--out {out}: {out / name} is a folder; the submission writes a file there")
    session = session_from_args(args)
    options = session.options
    from_file = _questions_file(args) if args.questions else None
    session.load()
    questions, questions_from = _submit_questions(args, session, from_file)
    # answers of another run in --out are refused and a second writer is locked out, before any work
    answers_run = _answers_run("submit", args, options, out / SUBMIT_ANSWERS_FILE, questions, questions_from,
                               options.retriever_manifest(), label=f"--out {out} ({SUBMIT_ANSWERS_FILE})",
                               companions=(out / SUBMIT_RUN_FILE, out / SUBMIT_PLAIN_ANSWERS_FILE,
                                           out / SUBMIT_SUMMARY_FILE))
    session.open()  # a bad generator/strategy is reported before anything is written
    prepared = prepare_questions(questions)
    # a second writer is locked out; a failure before the first answer leaves --out as it was
    with answers_run:
        answers = AnswersFile(out / SUBMIT_ANSWERS_FILE)  # read once the lock is held (--overwrite set the old aside)
        run = session.retrieve(prepared)
        try:
            summary = session.answer_all(prepared, answers, run, args.batch_size,
                                         f"retriever {options.retriever.name}")
        except GenerationError as err:
            logger.error("%s\nthe answers written so far are in %s; rerun to resume", err, out)
            return EXIT_GENERATION_ERROR
        # the run once the answers are all there (a rerun retrieves again, so nothing is lost before)
        system = (args.system or options.retriever.name).replace(" ", "_")
        run_path = write_trec({q.id: run.get(q.id, {}) for q in prepared}, out / SUBMIT_RUN_FILE, system=system,
                              depth=EVAL_K)
    # the shared task's own file, from the records in memory (never read back from answers.json)
    plain_path = out / SUBMIT_PLAIN_ANSWERS_FILE
    atomic_write_json(plain_path, shared_task_records(answers.ordered(q for q, _ in questions), strip_citations))
    atomic_write_json(out / SUBMIT_SUMMARY_FILE, {
        "questions": len(questions), "run": str(run_path), "answers": summary["out"],
        "answers_shared_task": str(plain_path),
        **options.retriever_manifest(), "generator": session.generator.name, "strategy": options.strategy,
        "run_depth": EVAL_K, "empty_questions": [q.id for q in prepared if not q.text]})
    sys.stdout.write(f"wrote {len(prepared)} queries × top {EVAL_K} to {run_path}\n" + _summary(summary, session)
                     + f"shared-task answers (no citation markers): {plain_path}\n")
    return EXIT_OK


# -- parsers ------------------------------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    add_data_option(p)
    add_k_option(p, EVAL_K, "passages considered per question before filtering (1 to the corpus size)")
    p.add_argument("--context-filter", default=DEFAULT_CONTEXT_FILTER, choices=list(CONTEXT_FILTERS),
                   help="which of the top k the answerer sees: "
                        + "; ".join(f"{name}: {f.note}" for name, f in CONTEXT_FILTERS.items())
                        + f" (default {DEFAULT_CONTEXT_FILTER}; the same whatever the run's depth)")
    p.add_argument("--no-filter", action="store_true", help="the top k as ranked (--context-filter top-k)")


def add_parsers(sub: Any) -> None:
    """Register ``answer``, ``ask`` and ``submit`` on the ``rirag`` subparsers."""
    a = sub.add_parser("answer", help="answer a split (from a run) or a questions file; resumable answers JSON")
    _common(a)
    a.add_argument("--run", default=None, help="TREC run whose passages (after --context-filter) ground the answers")
    add_split_option(a, required=False, extra="; the questions of the run")
    a.add_argument("--questions", default=None, help="JSON list of {QuestionID, Question} instead of --split")
    a.add_argument("--allow-missing", action="store_true",
                   help="record questions the run lacks as unanswered (with a warning) instead of failing")
    a.add_argument("--out", required=True, help="answers JSON (shared-task format + Citations); resumed when its "
                   "manifest (<out>.manifest.json) matches this run, refused otherwise")
    add_overwrite_option(a)
    add_max_input_option(a)
    add_retriever_options(a, None, WHY_DEFAULT_RETRIEVER)
    add_generator_options(a)
    a.set_defaults(func=cmd_answer)

    q = sub.add_parser("ask", help="answer one question (or a few) with citations, printed with their sources")
    q.add_argument("question", nargs="+", help="the question (several: answered in turn, timed)")
    _common(q)
    add_retriever_options(q, None, WHY_DEFAULT_RETRIEVER)
    add_generator_options(q)
    q.add_argument("--timings", default=None, metavar="FILE", help="write cold-start and per-answer times (JSON)")
    q.set_defaults(func=cmd_ask, exit_at_once=True)

    s = sub.add_parser("submit", help="the shared task's deliverables: top-10 TREC run + answers JSON")
    _common(s)
    s.add_argument("--questions", default=None, help="default: RIRAG_Unseen_Questions.json of the data folder")
    s.add_argument("--out", required=True, help="folder for retrieval.trec, answers.json (cited), "
                   "answers.shared-task.json (the shared task's fields, no citation markers), submission.json")
    add_system_option(s)
    add_overwrite_option(s)
    add_max_input_option(s)
    add_retriever_options(s, None, WHY_DEFAULT_RETRIEVER)
    add_generator_options(s)
    s.set_defaults(func=cmd_submit)
