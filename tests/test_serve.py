"""``rirag serve`` (rirag.serve) driven by the MCP SDK's own client, over stdio and streamable HTTP, on a tiny corpus
with a written reference graph: every tool listed with a described schema and called; each bad argument is a tool
error of one line and the server answers the next call."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from rirag.exit_codes import EXIT_TERMINATED  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOOLS = {"search", "get_passage", "follow_references", "answer"}
BAD = [("get_passage", {"id": "no-such-passage"}, "unknown passage id"),
       ("search", {"query": "capital", "k": 0}, "k must be between 1"),
       ("search", {"query": "capital", "k": 10**9}, "k must be between 1"),
       ("answer", {"question": "capital", "k": 10**9}, "k must be between 1"),
       ("search", {"query": "x" * (1 << 20)}, "characters; at most 2,000"),
       ("answer", {"question": "x" * (1 << 20)}, "characters; at most 2,000"),
       ("get_passage", {"id": "../../etc/passwd"}, "never a path"),
       ("follow_references", {"id": "/etc/passwd", "depth": 1}, "never a path"),
       ("follow_references", {"id": "d1-p1", "depth": 99}, "depth must be between 1"),
       ("search", {"query": "capital", "documents": [999]}, "unknown document ids"),
       ("search", {"query": "capital", "k": "many"}, "valid integer")]  # the SDK's own check, in one line too


@pytest.fixture
def corpus(tiny_data_dir) -> Path:
    """The tiny corpus with a graph as `rirag data xref` writes it: d1-p1 refers to d1-p2, which refers to d2-p1."""
    rows = [{"source_id": "d1-p1", "surface": "Rule 1.2", "start": 0, "end": 8, "targets": ["d1-p2"], "resolved": True},
            {"source_id": "d1-p2", "surface": "Rule 1.1 of 2", "start": 0, "end": 13, "targets": ["d2-p1"],
             "resolved": True}]
    (tiny_data_dir / "xref").mkdir()
    (tiny_data_dir / "xref" / "references.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tiny_data_dir / "ingest_report.json").write_text(json.dumps({"documents": 6}))
    return tiny_data_dir


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
            "TOKENIZERS_PARALLELISM": "false"}


def _command(corpus: Path, *extra: str) -> list[str]:
    return ["-m", "rirag.cli", "serve", "--data", str(corpus), "--retriever", "bm25", *extra]


async def _exercise(client: Client) -> None:
    listed = (await client.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:  # an agent can choose: each tool and each argument is described
        assert tool.description and all(p.get("description") for p in tool.input_schema["properties"].values())
    found = await client.call_tool("search", {"query": "capital adequacy records", "k": 3})
    assert not found.is_error
    results = found.structured_content["results"]
    assert len(results) == 3 and results[0]["id"] == "d1-p1" and found.structured_content["retriever"] == "bm25"
    assert {"id", "document_id", "rule", "headings", "score", "text"} <= set(results[0])
    only = await client.call_tool("search", {"query": "records", "k": 2, "documents": [3]})
    assert {r["document_id"] for r in only.structured_content["results"]} == {3}
    passage = (await client.call_tool("get_passage", {"id": "d1-p2"})).structured_content
    assert passage["rule"] == "1.2" and passage["references_received"] == ["d1-p1"]
    assert passage["references_made"] == [{"surface": "Rule 1.1 of 2", "targets": ["d2-p1"]}]
    followed = (await client.call_tool("follow_references", {"id": "d1-p1", "depth": 2})).structured_content
    assert [(f["id"], f["depth"]) for f in followed["followed"]] == [("d1-p2", 1), ("d2-p1", 2)]
    answered = await client.call_tool("answer", {"question": "How long must capital adequacy records be kept?",
                                                 "k": 3})
    assert not answered.is_error
    assert answered.structured_content["sources"] and "[1]" in answered.structured_content["answer"]
    for name, args, message in BAD:
        bad = await client.call_tool(name, args)
        text = bad.content[0].text
        assert bad.is_error and message in text and "\n" not in text, (name, text)
    again = await client.call_tool("search", {"query": "client money", "k": 1})  # still serving
    assert not again.is_error and again.structured_content["results"]
    card = await client.read_resource("rirag://corpus/card")
    assert "passages in 6 documents" in card.contents[0].text
    report = await client.read_resource("rirag://corpus/ingest-report")
    assert json.loads(report.contents[0].text) == {"documents": 6}


def test_an_mcp_client_over_stdio_lists_and_calls_every_tool(corpus):
    params = StdioServerParameters(command=sys.executable, args=_command(corpus), env=_env(), cwd=str(REPO))

    async def main():
        async with Client(params) as client:
            await _exercise(client)

    asyncio.run(asyncio.wait_for(main(), 240))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_mcp_client_over_http_and_sigterm_ends_the_server(corpus):
    port = _free_port()
    server = subprocess.Popen([sys.executable, *_command(corpus, "--transport", "http", "--port", str(port))],
                              env=_env(), cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                await _exercise(client)

        asyncio.run(asyncio.wait_for(main(), 240))
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
    # uvicorn stopped accepting and closed its sessions; the command ends with the status of a SIGTERM, in one line
    assert server.returncode == EXIT_TERMINATED, err[-2000:]
    assert "session manager shutting down" in err and "Traceback" not in err


def test_bm25_answers_until_the_dense_index_is_prepared_and_says_so(tiny_data_dir, tmp_path):
    from rirag.generation.pipeline import AnswerOptions
    from rirag.generation.session import AnsweringSession
    from rirag.retrieval.registry import retriever_spec
    from rirag.serve.tools import RulebookTools
    from tiny_encoder import tiny_sentence_transformer

    model = str(tiny_sentence_transformer(tmp_path / "st"))
    tools = RulebookTools(AnsweringSession(AnswerOptions(retriever=retriever_spec("dense", model, [])),
                                           str(tiny_data_dir)))
    before = tools.search("capital adequacy records", 2)
    assert before["retriever"] == "bm25 (the dense index is being prepared)" and len(before["results"]) == 2
    assert tools.answer("How long must capital adequacy records be kept?")["retriever"].startswith("bm25")
    tools.prepare(background=False)  # what the server runs in a thread at start
    assert tools.search("capital adequacy records", 2)["retriever"] == "dense"


def test_searches_and_answers_compute_at_most_calls_at_once_at_a_time(tiny_data_dir, monkeypatch):
    """The server computes a call per core at once (here 2), the others wait their turn; each model call then runs
    its share of the cores (rirag.onnx_inference.share_cores)."""
    import threading

    from rirag import onnx_inference as ox
    from rirag.generation.pipeline import AnswerOptions
    from rirag.generation.session import AnsweringSession
    from rirag.retrieval.registry import retriever_spec
    from rirag.serve.tools import RulebookTools

    monkeypatch.setattr(ox, "_shared_threads", None)
    monkeypatch.setattr(ox, "cpu_cores", lambda: 2)
    tools = RulebookTools(AnsweringSession(AnswerOptions(retriever=retriever_spec("bm25", None, [])),
                                           str(tiny_data_dir)))
    assert tools.calls_at_once == 2 and ox.shared_threads() == 1
    retriever = tools.session.retriever
    search, inside, most, two_in, release = retriever.search, [0], [0], threading.Event(), threading.Event()
    guard = threading.Lock()

    def blocking_search(*args, **kwargs):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            if inside[0] == 2:
                two_in.set()
        assert release.wait(60)
        with guard:
            inside[0] -= 1
        return search(*args, **kwargs)

    monkeypatch.setattr(retriever, "search", blocking_search)
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(tools.search("capital adequacy records", 1)))
               for _ in range(5)]
    for t in threads:
        t.start()
    assert two_in.wait(60)
    assert not tools._compute.acquire(blocking=False)  # two calls inside: a third waits its turn
    release.set()
    for t in threads:
        t.join(60)
    assert len(results) == 5 and most[0] == 2
