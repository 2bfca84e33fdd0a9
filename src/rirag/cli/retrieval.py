"""``rirag retrieve``: passages for the questions of a split (or a ``--questions`` file), written as a TREC run, over
:func:`rirag.retrieval.registry.build_retriever`."""

from __future__ import annotations

import sys
from typing import Any

from rirag import validation as check
from rirag.cli import checks
from rirag.cli.options import (
    WHY_DEFAULT_RETRIEVER,
    add_data_option,
    add_k_option,
    add_retriever_options,
    add_split_option,
    add_system_option,
    bounded_int,
)
from rirag.constants import MAX_RUN_BYTES, RUN_DEPTH
from rirag.data.obliqa import load_obliqa
from rirag.data.runs import write_trec
from rirag.data.splits import split_questions
from rirag.exit_codes import EXIT_OK
from rirag.retrieval.defaults import with_default_retriever
from rirag.retrieval.registry import build_retriever, retriever_spec
from rirag.retrieval.rule_labels import RuleLabelFirst


def cmd_retrieve(args) -> int:
    # every check before the corpus loads, a model loads or a passage is embedded
    checks.split_or_questions(args)
    if args.retriever is None:  # the one default of every command that retrieves (ask, answer, submit, serve)
        args.retriever, args.model, args.option = with_default_retriever(args.model, args.option)
    spec = retriever_spec(args.retriever, args.model, args.option)
    check.output_file(args.out, "--out")
    obliqa = load_obliqa(args.data)
    # the default depth shrinks to a smaller corpus; a --k above the corpus size is an error
    args.k = min(RUN_DEPTH, len(obliqa.corpus)) if args.k is None else check.k_within_corpus(args.k, len(obliqa.corpus))
    if args.split:
        questions = split_questions(obliqa, args.split, args.seed)
    else:  # retrieval needs no gold: the file's gold is not mapped to the corpus (a scan at a million passages)
        from rirag.data.obliqa import Question
        from rirag.data.questions import read_questions

        questions = [Question(r["QuestionID"], r["Question"]) for r in read_questions(args.questions)]
    # a run larger than --max-bytes is refused before it is built (in memory) and written
    system = args.system or args.retriever
    estimate = checks.run_bytes([q.id for q in questions], args.k, max(map(len, obliqa.corpus), default=0), system)
    checks.run_size_within(estimate, args.max_bytes, f"--out {args.out}",
                          f"pass --max-bytes {estimate} (or more) to write it, or a smaller --k")
    retriever = RuleLabelFirst(build_retriever(obliqa.corpus, spec, root=obliqa.root), obliqa.corpus)
    run = retriever.search({q.id: q.text for q in questions}, k=args.k, show_progress=True)
    write_trec(run, args.out, system=system, depth=args.k)
    sys.stdout.write(f"wrote {len(run)} queries × top {args.k} to {args.out}\n")
    return EXIT_OK


def add_parsers(sub: Any) -> None:
    """Register ``retrieve`` on the ``rirag`` subparsers."""
    r = sub.add_parser("retrieve", help="retrieve passages for a split and write a TREC run")
    add_data_option(r)
    add_split_option(r, required=False, extra="; or --questions")
    r.add_argument("--questions", default=None, metavar="FILE",
                   help="JSON, JSONL or CSV of {QuestionID, Question} (gold, if any, is read past) instead of "
                        "--split: the questions of a corpus that rirag data ingest wrote")
    add_retriever_options(r, None, WHY_DEFAULT_RETRIEVER, model_help="model name or path (dense retrievers)",
                          list_options=True)
    r.add_argument("--out", required=True, help="TREC run file (.gz compresses)")
    add_k_option(r, None, f"passages per question, 1 to the corpus size; default {RUN_DEPTH}, or the corpus size "
                          "when smaller")
    add_system_option(r)
    r.add_argument("--max-bytes", type=bounded_int("max_bytes"), default=MAX_RUN_BYTES, metavar="N",
                   help=f"refuse a run larger than N bytes (TREC text, estimated before retrieval; default "
                        f"{MAX_RUN_BYTES:_} = 200 MB)")
    r.set_defaults(func=cmd_retrieve)
