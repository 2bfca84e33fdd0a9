"""`rirag serve` under load, on loopback: 1, 8 and 32 concurrent MCP clients (the SDK's own client, over streamable
HTTP) calling ``search`` and ``answer`` for a bounded time each; then SIGTERM in the middle of a load.

Usage:
    python benchmarks/serve_load.py --data CORPUS [--questions FILE] [--retriever bm25] [--clients 1 8 32]
                                    [--seconds 20] [--seconds-max 60] [--tools search answer] [--no-sigterm]

Each (tool, clients) level runs ``--seconds`` (the largest level ``--seconds-max``); every client is one MCP session
that calls the tool in a loop with the next question of ``--questions`` (a JSON list of {Question}), measured from
the call to its result. A row: calls, errors (tool errors and exceptions), throughput (calls per second), latency
p50/p95/p99 (ms), the server's peak RSS so far (``VmHWM``, MB) and the CPU time the server and the clients spent a
call answered (ms: what a call costs whatever else the machine runs; on a shared machine the latencies are not the
server's alone). The SIGTERM row: 8 clients calling both tools,
SIGTERM after ``--sigterm-after`` seconds: the calls that finished, those that failed and how (they must fail
cleanly, not hang), the server's exit status and seconds to exit, and any temporary file left in the cache folder.
The server and the clients share the machine's cores (recorded, with the 1-minute load average before and after).
Rows merge into benchmarks/results/serve_load.json by (retriever, obligations, tool, clients): ``obligations`` is
what the answerer reads obligations with (``--generator-model``; by default the trained classifier where
``make models`` put it, which costs about as much CPU per answer as all the rest, else deontic cues).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rirag.constants import LOCAL_OBLIGATION_CLASSIFIER
from rirag.generation.extractive import MODAL_CUES
from rirag.io import merge_results_file, portable_path, provenance

RESULTS = Path(__file__).parent / "results" / "serve_load.json"
#: Seconds a call may take before it counts as an error (a hung call must not hang the benchmark).
CALL_TIMEOUT_S = 60
FALLBACK_QUESTIONS = ["What must a firm report to the PRA?", "How is the capital requirement calculated?",
                      "What records must an institution keep?", "When does the deposit guarantee scheme apply?"]


def obligation_source(generator_model: str | None) -> str:
    """What the server's answerer reads obligations with (a row's ``obligations``): the classifier costs about as
    much CPU per answer as the rest of the answer; the deontic cues cost nothing."""
    model = generator_model or LOCAL_OBLIGATION_CLASSIFIER
    if model == MODAL_CUES or (model == LOCAL_OBLIGATION_CLASSIFIER and not Path(model).is_dir()):
        return MODAL_CUES
    return f"classifier {portable_path(model) if Path(model).is_dir() else model}"


def _questions(path: str | None) -> list[str]:
    if not path:
        return FALLBACK_QUESTIONS
    return [str(q["Question"]) for q in json.loads(Path(path).read_text(encoding="utf-8"))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def start_server(args, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "rirag.cli", "serve", "--transport", "http", "--port", str(port), "--data",
           args.data]
    if args.retriever:
        cmd += ["--retriever", args.retriever]
    if args.generator_model:
        cmd += ["--generator-model", args.generator_model]
    log = open(args.server_log, "w") if args.server_log else subprocess.DEVNULL  # noqa: SIM115 - kept for the run
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with status {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not listen within 600 s")


def _arguments(tool: str, question: str) -> dict:
    return {"query": question, "k": 10} if tool == "search" else {"question": question}


def _leaf(err: BaseException) -> str:
    """The first exception inside an exception group (what the SDK's task groups raise), as ``Type: message``."""
    while getattr(err, "exceptions", None):
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"[:200]


async def _client(url: str, tools: list[str], questions: list[str], offset: int, stop: float, out: list) -> None:
    """One MCP session calling ``tools`` in turn until ``stop``; appends (tool, seconds, ok, error, start) per
    call (``start``: monotonic seconds)."""
    from mcp import Client

    i = offset
    try:
        async with Client(url) as client:
            while time.monotonic() < stop:
                tool, question = tools[i % len(tools)], questions[i % len(questions)]
                i += 1
                t, began = time.perf_counter(), time.monotonic()
                try:
                    r = await asyncio.wait_for(client.call_tool(tool, _arguments(tool, question)), CALL_TIMEOUT_S)
                    out.append((tool, time.perf_counter() - t, not r.is_error,
                                r.content[0].text[:200] if r.is_error else None, began))
                except Exception as err:  # noqa: BLE001 - counted, with its kind
                    out.append((tool, time.perf_counter() - t, False, _leaf(err), began))
                    return
    except Exception as err:  # noqa: BLE001 - the session itself failed (connect, or closed by the server)
        out.append((tools[0], 0.0, False, "session " + _leaf(err), time.monotonic()))


async def _warm(url: str, questions: list[str]) -> None:
    from mcp import Client

    async with Client(url) as client:
        for tool in ("search", "answer"):
            await client.call_tool(tool, _arguments(tool, questions[0]))


async def _load(url: str, tools: list[str], clients: int, seconds: float, questions: list[str]) -> tuple[list, float]:
    out: list = []
    start = time.monotonic()
    await asyncio.gather(*(_client(url, tools, questions, c * 7, start + seconds, out) for c in range(clients)))
    return out, time.monotonic() - start


def _cpu_seconds(pid: int | None = None) -> float | None:
    """User and system CPU seconds of process ``pid`` (/proc), or of this process and its threads (None)."""
    if pid is None:
        used = os.times()
        return used.user + used.system
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_ms_per_call(before: float | None, after: float | None, calls: int) -> float | None:
    return round((after - before) * 1000 / calls, 1) if before is not None and after is not None and calls else None


def _row(tool: str, clients: int, calls: list, wall: float, server: subprocess.Popen,
         cpu_before: tuple[float | None, float | None] = (None, None)) -> dict:
    ok = np.array([c[1] for c in calls if c[2]]) * 1000
    errors = [c[3] for c in calls if not c[2]]
    pct = {f"p{p}_ms": round(float(np.percentile(ok, p)), 1) if len(ok) else None for p in (50, 95, 99)}
    return {"tool": tool, "clients": clients, "load_average_1min_after": round(os.getloadavg()[0], 2),
            "seconds": round(wall, 1), "calls": len(calls), "errors": len(errors),
            "error_examples": sorted(set(errors))[:3], "throughput_per_s": round(len(ok) / wall, 2), **pct,
            "server_peak_rss_mb": _peak_rss_mb(server.pid),
            "server_cpu_ms_per_call": _cpu_ms_per_call(cpu_before[0], _cpu_seconds(server.pid), len(ok)),
            "clients_cpu_ms_per_call": _cpu_ms_per_call(cpu_before[1], _cpu_seconds(), len(ok))}


def sigterm_row(args, questions: list[str]) -> dict:
    """8 clients on both tools; SIGTERM to the server mid-load; how the calls and the server ended."""
    port = _free_port()
    server = start_server(args, port)
    url = f"http://127.0.0.1:{port}/mcp"

    async def run():
        task = asyncio.ensure_future(_load(url, ["search", "answer"], 8, args.sigterm_after + 30, questions))
        await asyncio.sleep(args.sigterm_after)
        sent = time.monotonic()
        server.send_signal(signal.SIGTERM)
        status = await asyncio.to_thread(server.wait, 60)
        exited = time.monotonic() - sent
        calls, _ = await task
        return calls, status, exited, sent

    calls, status, exited, sent = asyncio.run(run())
    in_flight = [c for c in calls if c[4] < sent < c[4] + c[1]]
    cache = Path(os.environ.get("RIRAG_CACHE_DIR", ".cache/rirag"))
    leftovers = [portable_path(p) for p in cache.rglob("*.tmp")] if cache.is_dir() else []
    return {"tool": "sigterm", "clients": 8, "sigterm_after_s": args.sigterm_after,
            "calls_finished": sum(1 for c in calls if c[2]), "calls_failed": sum(1 for c in calls if not c[2]),
            "in_flight_at_sigterm": len(in_flight), "in_flight_finished": sum(1 for c in in_flight if c[2]),
            "failures": sorted({(c[3] or "")[:80] for c in calls if not c[2]})[:5],
            "server_exit_status": status, "seconds_to_exit": round(exited, 2), "temporary_files_left": leftovers}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="the corpus folder (e.g. the PRA rulebook as ingested)")
    p.add_argument("--questions", default=None, help="JSON list of {Question}: the queries the clients send")
    p.add_argument("--retriever", default="bm25", help="the server's --retriever ('' for rirag's default)")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--tools", nargs="+", default=["search", "answer"], choices=["search", "answer"])
    p.add_argument("--seconds", type=float, default=20, help="seconds of each level but the largest")
    p.add_argument("--seconds-max", type=float, default=60, help="seconds of the largest level")
    p.add_argument("--sigterm-after", type=float, default=5)
    p.add_argument("--generator-model", default=None,
                   help="the server's --generator-model: the answerer's obligation classifier folder, or "
                        f"'{MODAL_CUES}' (its deontic cues); default: the server's own ({LOCAL_OBLIGATION_CLASSIFIER} "
                        "where it exists, else the cues)")
    p.add_argument("--no-sigterm", action="store_true")
    p.add_argument("--sigterm-only", action="store_true", help="only the SIGTERM row")
    p.add_argument("--server-log", default=None, help="write the server's log here")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    questions = _questions(args.questions)
    load_before = round(os.getloadavg()[0], 2)  # the machine is shared: what else ran is recorded
    rows, started = ([], None) if args.sigterm_only else load_rows(args, questions)
    if not args.no_sigterm:
        rows.append(sigterm_row(args, questions))
        print(json.dumps(rows[-1]), flush=True)
    retriever = args.retriever or "default"
    obligations = obligation_source(args.generator_model)
    for r in rows:
        r["retriever"], r["obligations"], r["load_average_1min_before"] = retriever, obligations, load_before
    top = {} if started is None else {f"server_start_to_first_calls_s_{retriever}": started}
    merge_results_file(args.out, rows, ("retriever", "obligations", "tool", "clients"), provenance(),
                       new_file={"corpus": Path(args.data).name, "questions": len(questions)}, **top)
    return 0


def load_rows(args, questions: list[str]) -> tuple[list[dict], float]:
    """One server; each (clients, tool) level in turn; the seconds from its start to the first calls answered."""
    port = _free_port()
    t = time.monotonic()
    server = start_server(args, port)
    url = f"http://127.0.0.1:{port}/mcp"
    asyncio.run(_warm(url, questions))  # the first calls build what is built on first use (models, graph)
    started = round(time.monotonic() - t, 1)
    rows = []
    try:
        for clients in args.clients:
            for tool in args.tools:
                seconds = args.seconds_max if clients == max(args.clients) else args.seconds
                cpu = (_cpu_seconds(server.pid), _cpu_seconds())
                calls, wall = asyncio.run(_load(url, [tool], clients, seconds, questions))
                rows.append(_row(tool, clients, calls, wall, server, cpu))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    return rows, started


if __name__ == "__main__":
    sys.exit(main())
