"""The rirag command: thin subcommands over the library; tables go to stdout, logs to stderr.

    rirag data build [--data DIR] [--out DIR] [--scheme original|leakage-free|all] [--seed N]
    rirag data ingest SOURCE --out DIR [--questions FILE]   (pages, JSONL/CSV or .txt/.md: a corpus for --data)
    rirag retrieve --retriever bm25|dense|hybrid|rank-fusion|rrf|rerank --split SPLIT|--questions FILE --out run.trec
                   [--k 100] [--model PATH] [--option KEY=VALUE ...]
    rirag evaluate retrieval --run run.trec --split SPLIT|--questions FILE [--json FILE] [--k 10] [--per-query FILE]
    rirag answer --run RUN.trec --split SPLIT | --questions FILE --out answers.json [--generator G] [--strategy S]
    rirag ask "question" [--retriever R] [--generator G] [--strategy S]
    rirag submit [--questions RIRAG_Unseen_Questions.json] --out DIR [--retriever R] [--generator G]
    rirag serve [--data DIR] [--transport stdio|http] [--port N] [--retriever R]   (MCP tools for agents)

One module per command group (:mod:`.data`, :mod:`.retrieval`, :mod:`.evaluate`, :mod:`.answers`, :mod:`.serve`),
the options they share defined once (:mod:`.options`), one table of exit statuses (:mod:`rirag.exit_codes`) and one
wrapper that maps the library's errors to them (:mod:`.runner`). Nothing outside this package parses arguments or
picks an exit status.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys

from rirag.cli import answers, data, evaluate, retrieval, serve
from rirag.cli.options import Parser
from rirag.cli.output import format_table
from rirag.cli.runner import run_command
from rirag.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

__all__ = ["build_parser", "format_table", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rirag", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    data.add_parsers(sub)  # data build
    retrieval.add_parsers(sub)  # retrieve
    evaluate.add_parsers(sub)  # evaluate retrieval, evaluate answers
    answers.add_parsers(sub)  # answer, ask, submit
    serve.add_parsers(sub)  # serve (MCP)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Every expected failure is one line on stderr and exit status 2; Ctrl-C is one line and 130
    (:func:`rirag.cli.runner.run_command`); every subcommand gets this through ``args.func``."""
    return _run(argv)[0]


def program() -> int:
    """The ``rirag`` program (its console script and ``python -m rirag.cli``): :func:`main` over ``sys.argv``, and
    for a command that asks for it (``rirag ask``) the end of the process as soon as it returns
    (:func:`exit_at_once`). A caller of :func:`main` keeps its process."""
    status, args = _run(None)
    if getattr(args, "exit_at_once", False):
        exit_at_once(status)
    return status


def _run(argv: list[str] | None) -> tuple[int, argparse.Namespace | None]:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a bad option (argparse printed one line): a return code, not an exit
        return (exit_.code if isinstance(exit_.code, int) else (EXIT_OK if exit_.code is None else EXIT_USAGE)), None
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED, None
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    status = run_command(args.func, args, verbose=args.verbose)
    if argv is None:  # the program itself (not a caller passing its arguments): the interpreter exits next
        # Python's final garbage collections would walk every object torch and transformers created, about 2 s of
        # CPU (measured on `rirag ask`, benchmarks/ask_latency.py) for memory the exit returns anyway
        gc.freeze()
    return status, args


def exit_at_once(status: int) -> None:
    """End the process after the exit handlers (``atexit``: logging's flush among them) and the standard streams'
    flush, without the interpreter's teardown, which frees every object one by one: about 0.13 s of a `rirag ask`
    over a million passages (hyperfine, 8 runs, 2 cores), for memory the exit returns anyway. For a command whose
    every file is written and closed when it returns."""
    import atexit
    import os

    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None:  # not CPython: its own exit
        return
    run_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more reaches it anyway
            pass
    os._exit(status)
