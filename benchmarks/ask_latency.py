"""`rirag ask` latency on the offline defaults: cold start to the first answer (a fresh process: imports, data,
retriever index, generator load, first answer) and the time of each later answer.

Usage:
    python benchmarks/ask_latency.py [--generator smollm2-135m-instruct] [--questions 4] [--threads N]

Questions: the first N of RIRAG_Unseen_Questions.json. One row per (generator, strategy, retriever) is merged into
benchmarks/results/ask_latency.json (other rows are kept). Wall time depends on what else runs on the machine; the
CPU seconds of the process are recorded next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rirag.data import load_obliqa
from rirag.generation.base import MAX_NEW_TOKENS, OFFLINE_GENERATOR
from rirag.generation.prompts import ZERO_SHOT
from rirag.io import atomic_write_json

RESULTS = Path(__file__).parent / "results" / "ask_latency.json"


@dataclass
class Config:
    generator: str = OFFLINE_GENERATOR
    generator_model: str | None = None
    strategy: str = ZERO_SHOT
    retriever: str | None = None  # None: the CLI's default (rirag.retrieval.defaults)
    questions: int = 4
    max_new_tokens: int = MAX_NEW_TOKENS
    threads: int | None = None
    data: str | None = None
    out: str = str(RESULTS)


def main(config: Config) -> dict:
    load_before = round(os.getloadavg()[0], 2)  # what else ran: wall times depend on it, CPU seconds much less
    questions = [q.text for q in load_obliqa(config.data).unseen[: config.questions]]
    env = dict(os.environ)
    if config.threads:
        env["OMP_NUM_THREADS"] = str(config.threads)
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
        measured = json.loads(timings.read_text())
    later, later_cpu = measured["answer_s"][1:], measured["answer_cpu_s"][1:]
    row = {
        "generator": measured["generator"], "strategy": config.strategy, "retriever": measured["retriever"],
        "max_new_tokens": config.max_new_tokens, "questions": len(questions),
        "cold_start_s": round(measured["cold_start_s"], 2), "cold_start_cpu_s": round(measured["cold_start_cpu_s"], 2),
        "per_answer_s": round(sum(later) / len(later), 2) if later else None,
        "per_answer_cpu_s": round(sum(later_cpu) / len(later_cpu), 2) if later_cpu else None,
        "command": " ".join(["python benchmarks/ask_latency.py", f"--generator {config.generator}",
                             f"--questions {config.questions}", f"--strategy {config.strategy}"]),
        "cpu_cores": os.cpu_count(), "threads": config.threads, "machine": platform.machine(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_average_1min_before": load_before,
    }
    out = Path(config.out)
    result = json.loads(out.read_text()) if out.exists() else {"rows": {}}
    key = f"{row['generator']}|{config.strategy}|{row['retriever']}"
    result["rows"][key] = row
    atomic_write_json(out, result)
    sys.stdout.write(json.dumps(row, indent=2) + "\n")
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in Config.__dataclass_fields__.items():
        kind = int if name in ("questions", "max_new_tokens", "threads") else str
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default.default)
    main(Config(**vars(parser.parse_args())))
