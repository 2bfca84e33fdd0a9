"""`rirag ask` latency on the offline defaults: cold start to the first answer (a fresh process: imports, data,
retriever index, generator load, first answer), the time of each later answer, and (``--breakdown``, the default
for the default generator) the wall and CPU seconds of each phase of one answer on a warm cache.

Usage:
    python benchmarks/ask_latency.py [--generator focused|extractive|MODEL] [--questions 4] [--threads N]
                                      [--repeats 3] [--breakdown | --no-breakdown]

Questions: the first N of RIRAG_Unseen_Questions.json. One row per (generator, strategy, retriever) is merged into
benchmarks/results/ask_latency.json (other rows are kept). Wall time depends on what else runs on the machine; the
CPU seconds of the process and the load average are recorded next to it.

The breakdown (warm cache: a first `rirag ask` fills the caches, then each measure is the median of ``--repeats``
fresh processes):

* ``ask_s`` / ``ask_cpu_s``: the whole `rirag ask "question"` command, interpreter start to exit (CPU: user + system
  of the child process);
* in a fresh interpreter that does what `rirag ask` does, phase by phase: ``imports`` (the command's modules and
  what they import), ``data`` (the corpus), ``index`` (the retriever: BM25 index and cached passage embeddings),
  ``encoder`` (torch and the encoder's weights), ``retrieval`` (the question's search), ``answer`` (the focused
  answer: units, their embeddings and obligation labels, selection) and ``total``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rirag.data.obliqa import load_obliqa
from rirag.data.questions import unseen_questions
from rirag.generation.base import DEFAULT_GENERATOR, FOCUSED, MAX_NEW_TOKENS
from rirag.generation.prompts import ZERO_SHOT
from rirag.io import atomic_write_json

RESULTS = Path(__file__).parent / "results" / "ask_latency.json"
PHASES = ("imports", "data", "index", "encoder", "retrieval", "answer", "total")


@dataclass
class Config:
    generator: str = DEFAULT_GENERATOR
    generator_model: str | None = None
    strategy: str = ZERO_SHOT
    retriever: str | None = None  # None: the CLI's default (rirag.retrieval.defaults)
    questions: int = 4
    max_new_tokens: int = MAX_NEW_TOKENS
    threads: int | None = None
    data: str | None = None
    out: str = str(RESULTS)
    breakdown: bool | None = None  # None: for the focused answerer (the default), which has the phases measured
    repeats: int = 3


def _probe(question: str) -> dict:
    """Phase by phase, what `rirag ask` does for one question (run in a fresh interpreter)."""
    times: dict[str, tuple[float, float]] = {}
    start = last = (time.perf_counter(), time.process_time())

    def mark(name: str) -> None:
        nonlocal last
        now = (time.perf_counter(), time.process_time())
        times[name] = (now[0] - last[0], now[1] - last[1])
        last = now

    import rirag.cli.answers as cli_answers  # the command's modules, as `rirag ask` imports them
    from rirag.cli import build_parser
    from rirag.generation.pipeline import answer_items, select_passages

    args = build_parser().parse_args(["ask", question])
    mark("imports")
    session = cli_answers.session_from_args(args).load()
    obliqa, options = session.obliqa, session.options
    mark("data")
    retriever = session.retriever
    for part in [retriever, *vars(retriever).values()]:  # the cached passage embeddings of a dense side
        if callable(getattr(part, "cache_path", None)):
            part.passage_embeddings()
    mark("index")
    generator = session.open().generator
    generator.encode(["warm up"])  # torch and the encoder's weights
    mark("encoder")
    results = retriever.search({"ask-1": question}, k=100)["ask-1"]
    mark("retrieval")
    passages = select_passages(results, obliqa.corpus, args.k, True, where="retriever")
    answer = answer_items([("ask-1", question, passages)], generator, options.strategy)[0]
    mark("answer")
    times["total"] = (time.perf_counter() - start[0], time.process_time() - start[1])
    import torch

    return {"phases": times, "passages": len(passages), "answer_words": len(answer.text.split()),
            "torch_threads": torch.get_num_threads(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "obligations": getattr(generator, "obligation_source", None),
            "heavy_imports": sorted(m for m in ("sentence_transformers", "sklearn", "scipy", "nltk", "sympy")
                                    if m in sys.modules)}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def breakdown(question: str, env: dict, repeats: int) -> dict:
    """Median wall/CPU of the whole command and of each phase over ``repeats`` fresh processes, warm cache."""
    ask = [sys.executable, "-m", "rirag.cli", "ask", question]
    subprocess.run(ask, check=True, env=env, stdout=subprocess.DEVNULL)  # fill the caches (cold: minutes, once)
    walls, cpus, probes = [], [], []
    for _ in range(repeats):
        cpu, t = _child_cpu(), time.perf_counter()
        subprocess.run(ask, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        cpus.append(_child_cpu() - cpu)
        done = subprocess.run([sys.executable, __file__, "--probe", question], check=True, env=env,
                              capture_output=True, text=True)
        probes.append(json.loads(done.stdout.strip().splitlines()[-1]))
    row = {"ask_s": round(statistics.median(walls), 2), "ask_cpu_s": round(statistics.median(cpus), 2),
           "ask_s_runs": [round(w, 2) for w in walls]}
    for phase in PHASES:
        row[f"{phase}_s"] = round(statistics.median(p["phases"][phase][0] for p in probes), 2)
        row[f"{phase}_cpu_s"] = round(statistics.median(p["phases"][phase][1] for p in probes), 2)
    last = probes[-1]
    row.update({"torch_threads": last["torch_threads"], "cpu_capability": last["cpu_capability"],
                "obligations": last["obligations"], "heavy_imports": last["heavy_imports"],
                "passages_given": last["passages"], "answer_words": last["answer_words"]})
    return row


def _timed_questions(config: Config, questions: list[str], env: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        timings = Path(tmp) / "timings.json"
        cmd = [sys.executable, "-m", "rirag.cli", "ask", *questions, "--generator", config.generator,
               "--strategy", config.strategy, *(["--retriever", config.retriever] if config.retriever else []),
               "--max-new-tokens", str(config.max_new_tokens), "--timings", str(timings)]
        if config.generator_model:
            cmd += ["--generator-model", config.generator_model]
        if config.data:
            cmd += ["--data", config.data]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        return json.loads(timings.read_text())


def main(config: Config) -> dict:
    load_before = round(os.getloadavg()[0], 2)  # what else ran: wall times depend on it, CPU seconds much less
    questions = [q.text for q in unseen_questions(load_obliqa(config.data))[: config.questions]]
    env = dict(os.environ)
    if config.threads:
        env["OMP_NUM_THREADS"] = str(config.threads)
    measured = _timed_questions(config, questions, env)
    later, later_cpu = measured["answer_s"][1:], measured["answer_cpu_s"][1:]
    row = {
        "generator": measured["generator"], "strategy": config.strategy, "retriever": measured["retriever"],
        "max_new_tokens": config.max_new_tokens, "questions": len(questions),
        "cold_start_s": round(measured["cold_start_s"], 2), "cold_start_cpu_s": round(measured["cold_start_cpu_s"], 2),
        "per_answer_s": round(sum(later) / len(later), 2) if later else None,
        "per_answer_cpu_s": round(sum(later_cpu) / len(later_cpu), 2) if later_cpu else None,
        "command": " ".join(["python benchmarks/ask_latency.py", f"--generator {config.generator}",
                             f"--questions {config.questions}", f"--strategy {config.strategy}"]
                            + ([f"--retriever {config.retriever}"] if config.retriever else [])
                            + ([f"--threads {config.threads}"] if config.threads else [])),
        "cpu_cores": os.cpu_count(), "cpu_cores_usable": len(os.sched_getaffinity(0)), "threads": config.threads,
        "machine": platform.machine(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_average_1min_before": load_before,
    }
    if config.breakdown or (config.breakdown is None and config.generator == FOCUSED and not config.retriever):
        row.update(breakdown(questions[0], env, config.repeats))
    row["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    out = Path(config.out)
    result = json.loads(out.read_text()) if out.exists() else {"rows": {}}
    key = f"{row['generator']}|{config.strategy}|{row['retriever']}"
    result["rows"][key] = row
    atomic_write_json(out, result)
    sys.stdout.write(json.dumps(row, indent=2) + "\n")
    return row


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        sys.stdout.write(json.dumps(_probe(sys.argv[2])) + "\n")
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in Config.__dataclass_fields__.items():
        if name == "breakdown":
            parser.add_argument("--breakdown", action=argparse.BooleanOptionalAction, default=None)
            continue
        kind = int if name in ("questions", "max_new_tokens", "threads", "repeats") else str
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default.default)
    main(Config(**vars(parser.parse_args())))
