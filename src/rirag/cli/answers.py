"""``rirag answer``, ``rirag ask`` and ``rirag submit``: thin commands over one answering job
(:class:`rirag.generation.job.AnsweringJob`, over the answering session
:class:`rirag.generation.session.AnsweringSession`): each parses its options, builds the job, runs it and prints what
comes back.

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
import sys
import textwrap
from typing import Any

from rirag import validation as check
from rirag.cli.options import (
    WHY_DEFAULT_RETRIEVER,
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
from rirag.exit_codes import EXIT_GENERATION_ERROR, EXIT_OK
from rirag.generation.job import (  # noqa: F401 - the options' resolution, named here as the commands use it
    AnsweringJob,
    JobResult,
    answer_options,
    retriever_spec_from_args,
    session_from_args,
)
from rirag.generation.job import generator_manifest as job_generator_manifest
from rirag.retrieval.filtering import CONTEXT_FILTERS


def _generator_option_names() -> list[str]:
    """Every option :func:`add_generator_options` defines (read from a throwaway parser, so a new one is included)."""
    probe = argparse.ArgumentParser(add_help=False)
    add_generator_options(probe)
    return list(vars(probe.parse_args([])))


def generator_manifest(args: Any) -> dict[str, Any]:
    """The generator part of a run manifest (:func:`rirag.generation.job.generator_manifest`) of the command's
    generator options."""
    return job_generator_manifest(args, getattr(args, "generator_option_names", None) or _generator_option_names())


def _summary(result: JobResult) -> str:
    summary = result.summary
    lines = [f"answered {summary['answered']} questions ({summary['already_done']} already done) → {summary['out']}"
             f" ({summary['total']} records, {summary['citations']} citations in the new answers)"]
    if result.description:
        lines.append(f"answered by the {result.description}")
    for w, n in sorted(summary["warnings"].items()):
        lines.append(f"  {n} × {w}")
    return "\n".join(lines) + "\n"


# -- the commands: parse, run the job, print ----------------------------------------------------------------------


def cmd_answer(args: Any) -> int:
    result = AnsweringJob("answer", args).run()
    if result.failed:
        return EXIT_GENERATION_ERROR
    sys.stdout.write(_summary(result))
    return EXIT_OK


def cmd_submit(args: Any) -> int:
    result = AnsweringJob("submit", args).run()
    if result.failed:
        return EXIT_GENERATION_ERROR
    sys.stdout.write(f"wrote {result.queries} queries × top {EVAL_K} to {result.run_path}\n" + _summary(result)
                     + f"shared-task answers (no citation markers): {result.plain_answers_path}\n")
    return EXIT_OK


def cmd_ask(args: Any) -> int:
    for asked in AnsweringJob("ask", args).ask():
        if len(args.question) > 1:
            sys.stdout.write(f"\nQ: {check.printable(asked.question)}\n")
        sys.stdout.write(format_answer(asked.answer, asked.titles))
        if asked.description:
            sys.stdout.write(f"(answered by the {asked.description})\n")
    return EXIT_OK


def format_answer(answer, titles: dict[int, str]) -> str:
    """The answer, then each cited passage: [n] title · PassageID (score) and a snippet; control characters escaped
    (:func:`rirag.validation.printable`). [n] is the number shown to the reader (:meth:`Answer.shown_numbers
    <rirag.generation.pipeline.Answer.shown_numbers>`: the cited passages 1, 2, 3 in order, never skipping), in the
    answer's text as in its sources; the answers file of ``rirag answer`` keeps the passages' places."""
    shown, numbers = answer.shown_numbers(), answer.shown_ids()
    lines = [textwrap.fill(answer.shown_text() or "(no answer)", 100), ""]
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
    uncited = len({p.id for p in answer.passages} - {p.id for p in cited})
    if uncited:
        lines.append(f"  ({uncited} more passage{'s' if uncited > 1 else ''} given to the answerer, not cited)")
    for c in (answer.parsed.invalid if answer.parsed else []):
        lines.append(f"  [{c.number}] (invalid: there are only {len(answer.passages)} passages)")
    for f in (answer.draft.followed if answer.draft is not None else []):
        lines.append(f"followed: {f.reference} -> [{shown.get(f.target, f.target)}] (referred to by "
                     f"[{shown.get(f.source, f.source)}])")
    for w in answer.warnings:
        lines.append(f"note: {w}")
    # the question, the passages and what the generator made of them: escape sequences are shown, never obeyed
    return check.printable("\n".join(lines)) + "\n"


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
    """Register ``answer``, ``ask`` and ``submit`` on the ``rirag`` subparsers (``answer`` and ``submit`` record the
    names of their generator options, which the run manifest reads: ``generator_option_names``)."""
    names = tuple(_generator_option_names())
    a = sub.add_parser("answer", help="answer a split (from a run) or a questions file; resumable answers JSON")
    _common(a)
    a.add_argument("--run", default=None, help="TREC run whose passages (after --context-filter) ground the answers")
    add_split_option(a, required=False, extra="; the questions of the run")
    a.add_argument("--questions", default=None,
                   help="questions instead of --split: JSON, JSONL or CSV of {QuestionID, Question}")
    a.add_argument("--allow-missing", action="store_true",
                   help="record questions the run lacks as unanswered (with a warning) instead of failing")
    a.add_argument("--out", required=True, help="answers JSON (shared-task format + Citations); resumed when its "
                   "manifest (<out>.manifest.json) matches this run, refused otherwise")
    add_overwrite_option(a)
    add_max_input_option(a)
    add_retriever_options(a, None, WHY_DEFAULT_RETRIEVER)
    add_generator_options(a)
    a.set_defaults(func=cmd_answer, generator_option_names=names)

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
    s.set_defaults(func=cmd_submit, generator_option_names=names)
