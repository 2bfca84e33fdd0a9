"""``rirag serve``: the rulebook tools (:mod:`rirag.serve.tools`) as a Model Context Protocol server, with the
official SDK (``mcp``, imported only here and only when a server is built: ``pip install 'rirag[serve]'``), over
stdio or streamable HTTP.

Each tool's arguments are typed and described (the JSON schema an agent reads); a bad argument is a tool error of one
line (``is_error``), never a crash: the SDK answers any exception of a tool as one, and :func:`_tool` turns rirag's
own errors into their one-line message. Over HTTP the server is uvicorn's, stopped by SIGTERM or Ctrl-C: it stops
accepting, lets the calls in flight finish (at most :data:`GRACEFUL_SHUTDOWN_S`), then exits; it writes no file
(the caches it may build are written atomically, :mod:`rirag.retrieval.shared_cache`).
"""

from __future__ import annotations

import functools
import logging
from typing import Annotated, Any, Callable

from pydantic import Field

from rirag.constants import SERVE_MAX_DEPTH, SERVE_MAX_K
from rirag.errors import DataError, UsageError
from rirag.generation.pipeline import MAX_QUESTION_CHARS
from rirag.serve.tools import RulebookTools

logger = logging.getLogger(__name__)

#: Seconds the HTTP server waits for the calls in flight after SIGTERM before it closes them.
GRACEFUL_SHUTDOWN_S = 10
CARD_URI = "rirag://corpus/card"
INGEST_REPORT_URI = "rirag://corpus/ingest-report"

INSTRUCTIONS = ("A rulebook (regulatory passages with rule labels and cross-references). `search` finds passages; "
                "`get_passage` reads one with the references it makes and receives; `follow_references` walks them; "
                "`answer` writes an answer that cites the passages it quotes. Ids come from search results.")


def _tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with rirag's errors raised as the SDK's tool error, in one line."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (DataError, UsageError, ValueError, KeyError) as err:
            raise ToolError(" ".join(str(err).split()) or type(err).__name__) from None

    return call


async def _one_line_tool_errors(ctx, call_next):
    """Server middleware: a tool error's text in one line (the SDK's own message for an argument of the wrong type,
    pydantic's, spans several). The chain carries each result as its wire dict."""
    result = await call_next(ctx)
    if isinstance(result, dict) and result.get("isError"):
        for item in result.get("content") or []:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                item["text"] = " ".join(item["text"].split())
    return result


def build_server(tools: RulebookTools):
    """The MCP server (:class:`mcp.server.mcpserver.MCPServer`) over ``tools``."""
    from mcp.server.mcpserver import MCPServer

    from rirag.constants import VERSION

    server = MCPServer(name="rirag", version=VERSION, instructions=INSTRUCTIONS, middleware=[_one_line_tool_errors])

    @server.tool(description="Search the rulebook: the k passages that best match a query, each with its id (for "
                             "get_passage), document, rule label, headings path, score and the start of its text.")
    @_tool
    def search(query: Annotated[str, Field(description=f"what to look for, in words (at most "
                                                       f"{MAX_QUESTION_CHARS} characters)")],
               k: Annotated[int, Field(description=f"how many passages, 1 to {SERVE_MAX_K}")] = 10,
               documents: Annotated[list[int] | None, Field(
                   description="only passages of these document ids (see the corpus card)")] = None) -> dict[str, Any]:
        return tools.search(query, k, documents)

    @server.tool(description="One passage whole: its text, rule label, headings path, and the references it makes "
                             "(each reference's words and the passage ids it resolves to) and receives (the ids of "
                             "passages that refer to it).")
    @_tool
    def get_passage(id: Annotated[str, Field(description="a passage id, from a search result")]) -> dict[str, Any]:  # noqa: A002
        return tools.get_passage(id)

    @server.tool(description="The passages a passage refers to, and those they refer to, up to depth hops, each with "
                             "its text and the reference that led to it.")
    @_tool
    def follow_references(id: Annotated[str, Field(description="a passage id, from a search result")],  # noqa: A002
                          depth: Annotated[int, Field(description=f"hops, 1 to {SERVE_MAX_DEPTH}")] = 1
                          ) -> dict[str, Any]:
        return tools.follow_references(id, depth)

    @server.tool(description="Answer a question from the rulebook: an answer whose [n] markers cite its sources, "
                             "and each source's id, rule label and text. The retriever used is named.")
    @_tool
    def answer(question: Annotated[str, Field(description=f"the question (at most {MAX_QUESTION_CHARS} "
                                                          "characters)")],
               k: Annotated[int | None, Field(description=f"passages considered, 1 to {SERVE_MAX_K} (default: the "
                                                          "server's)")] = None) -> dict[str, Any]:
        return tools.answer(question, k)

    @server.resource(CARD_URI, name="corpus card", mime_type="text/markdown",
                     description="What the corpus is: its card, or its documents and counts")
    def corpus_card() -> str:
        return tools.corpus_card()

    @server.resource(INGEST_REPORT_URI, name="ingest report", mime_type="application/json",
                     description="What `rirag data ingest` read, kept and dropped for this corpus")
    def ingest_report() -> str:
        return tools.ingest_report()

    return server


def serve(tools: RulebookTools, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve until the client closes stdin (stdio) or SIGTERM / Ctrl-C (http)."""
    server = build_server(tools)
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    logger.info("serving MCP over streamable HTTP at http://%s:%d/mcp", host, port)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                  timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)).run()
