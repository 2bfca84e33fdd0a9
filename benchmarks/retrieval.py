"""Retrieval benchmark: the metric table of every retriever per split, plus queries per second.

Usage:
    python benchmarks/retrieval.py [--data DIR] [--splits original-test,original-dev,validation,test]
                                   [--out benchmarks/results/retrieval.json] [--runs-dir benchmarks/runs]

Prints a Markdown table and writes JSON with the command, date and core count. Never part of the test run.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass

from rirag.cli import format_table
from rirag.constants import EVAL_K, RUN_DEPTH, SEED
from rirag.data import load_obliqa
from rirag.evaluation import evaluate_run, metric_names, write_trec
from rirag.io import atomic_write_json
from rirag.retrieval.registry import RetrieverSpec, build_retriever
from rirag.splits import EVAL_SPLITS, qrels_of, split_questions

logger = logging.getLogger("benchmarks.retrieval")


@dataclass
class Config:
    data: str | None = None
    splits: tuple[str, ...] = EVAL_SPLITS
    retrievers: tuple[str, ...] = ("bm25",)
    out: str = "benchmarks/results/retrieval.json"
    runs_dir: str | None = None
    seed: int = SEED


def main(config: Config) -> dict:
    obliqa = load_obliqa(config.data)
    rows = []
    for name in config.retrievers:
        t0 = time.perf_counter()
        retriever = build_retriever(obliqa.corpus, RetrieverSpec(name))
        build_s = time.perf_counter() - t0
        for split in config.splits:
            questions = split_questions(obliqa, split, config.seed)
            queries = {q.id: q.text for q in questions}
            t0 = time.perf_counter()
            run = retriever.search(queries, k=RUN_DEPTH)
            search_s = time.perf_counter() - t0
            metrics = evaluate_run(qrels_of(questions), run)
            rows.append({"retriever": name, "split": split, "questions": metrics["n_questions"],
                         **{m: round(metrics[m], 4) for m in metric_names(EVAL_K)},
                         "queries_per_s": round(len(queries) / search_s, 1), "index_s": round(build_s, 2)})
            if config.runs_dir:
                write_trec(run, os.path.join(config.runs_dir, f"{split}.{name}.trec.gz"), system=name)
    sys.stdout.write(format_table(rows, list(rows[0])) + "\n")
    result = {
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_cores": os.cpu_count(),
        "machine": platform.machine(),
        "data": obliqa.root,
        "rows": rows,
    }
    atomic_write_json(config.out, result)
    return result


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    p.add_argument("--splits", default=",".join(EVAL_SPLITS))
    p.add_argument("--retrievers", default="bm25")
    p.add_argument("--out", default=Config.out)
    p.add_argument("--runs-dir", default=None, help="also write each run as SPLIT.RETRIEVER.trec.gz here")
    p.add_argument("--seed", type=int, default=SEED)
    a = p.parse_args(argv)
    return Config(a.data, tuple(a.splits.split(",")), tuple(a.retrievers.split(",")), a.out, a.runs_dir, a.seed)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
