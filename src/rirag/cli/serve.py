"""``rirag serve``: the corpus as Model Context Protocol tools for agents (:mod:`rirag.serve`), over stdio (an MCP
client starts it) or streamable HTTP (``--transport http``, loopback by default)."""

from __future__ import annotations

import argparse
from typing import Any

from rirag.cli.options import (
    WHY_DEFAULT_RETRIEVER,
    add_data_option,
    add_generator_options,
    add_k_option,
    add_retriever_options,
)
from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K, SERVE_HOST, SERVE_PORT
from rirag.errors import UsageError
from rirag.exit_codes import EXIT_OK
from rirag.generation.job import generator_limits, session_from_args


def cmd_serve(args: Any) -> int:
    generator_limits(args)
    try:
        from rirag.serve.server import serve
    except ImportError as err:
        raise UsageError(f"rirag serve needs the MCP SDK: pip install 'rirag[serve]' ({err})") from None
    from rirag.serve.tools import RulebookTools

    tools = RulebookTools(session_from_args(args), bm25_until_ready=not args.no_prepare)
    if not args.no_prepare:
        tools.prepare(background=True)
    serve(tools, args.transport, args.host, args.port)
    return EXIT_OK


def add_parsers(sub: Any) -> None:
    """Register ``serve`` on the ``rirag`` subparsers."""
    s = sub.add_parser("serve", help="serve the corpus as MCP tools (search, get_passage, follow_references, answer)",
                       formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    add_data_option(s)
    add_k_option(s, EVAL_K, "passages an answer considers by default (1 to the corpus size)")
    s.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (default: an MCP client starts the command) or streamable HTTP at http://HOST:PORT/mcp")
    s.add_argument("--host", default=SERVE_HOST, help=f"--transport http: the address (default {SERVE_HOST})")
    s.add_argument("--port", type=int, default=SERVE_PORT, help=f"--transport http: the port (default {SERVE_PORT})")
    s.add_argument("--no-prepare", action="store_true",
                   help="build the retriever's index at the first call, not at start (by default a dense index is "
                        "built in the background while BM25 answers, saying so)")
    add_retriever_options(s, None, WHY_DEFAULT_RETRIEVER)
    add_generator_options(s)
    # the answering session of `rirag ask` (rirag.generation.job.session_from_args), with the default context
    s.set_defaults(func=cmd_serve, context_filter=DEFAULT_CONTEXT_FILTER, no_filter=False)
