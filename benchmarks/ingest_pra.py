"""Ingestion of the PRA Rulebook (issue 38): time, build report, share of the PRA questions' gold texts that map to
the ingested passages, and BM25 on those questions (R@10, MAP@10, MRR@10, Both@10, one-only@10, Neither@10).

Usage:
    python benchmarks/ingest_pra.py [--pages ../shared/data/pra_rulebook]
                                    [--questions ../shared/data/ukfin_xref/ukfin_dev_questions.json] [--out out/pra]

Runs ``rirag data ingest`` as a user does (a fresh process: wall and CPU seconds of the child), then BM25 through the
library (the retriever ``rirag retrieve --retriever bm25`` builds) and writes benchmarks/results/ingest_pra.json.
RegNLP's BM25 on the same 80 questions (their passages): Both@10 0.562, R@10 0.719 (../shared/data/ukfin_xref).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from rirag.constants import EVAL_K, RUN_DEPTH
from rirag.data.obliqa import load_obliqa
from rirag.data.questions import load_questions
from rirag.data.splits import qrels_of
from rirag.io import atomic_write_json
from rirag.retrieval.metrics import evaluate_run, metric_names, pair_metric_names, pair_metrics
from rirag.retrieval.registry import build_retriever, retriever_spec

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "ingest_pra.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default=str(REPO.parent / "shared" / "data" / "pra_rulebook"))
    ap.add_argument("--questions", default=str(REPO.parent / "shared" / "data" / "ukfin_xref" /
                                               "ukfin_dev_questions.json"))
    ap.add_argument("--out", default=str(REPO / "out" / "pra"))
    args = ap.parse_args(argv)

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rirag.cli", "data", "ingest", args.pages, "--out", args.out,
                    "--questions", args.questions], check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads((Path(args.out) / "ingest_report.json").read_text("utf-8"))

    corpus = load_obliqa(args.out)
    qset = load_questions(args.questions, corpus)
    retriever = build_retriever(corpus.corpus, retriever_spec("bm25", None, []))
    run = retriever.search({q.id: q.text for q in qset.questions}, k=RUN_DEPTH)
    result = evaluate_run(qrels_of(qset.questions), run, k=EVAL_K)
    pairs = pair_metrics(qset.items, run, k=EVAL_K)
    row = {
        "ingest_wall_s": round(wall, 1),
        "ingest_cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "cpus": os.cpu_count(),
        "documents": report["documents"], "passages": report["passages"], "dropped": report["dropped"],
        "length_words": report["length_words"],
        "gold_mapped": qset.report()["gold_mapped"], "gold_items": qset.report()["gold_items"],
        "gold_by": qset.report()["by"],
        "bm25": {**{n: round(result[n], 4) for n in metric_names(EVAL_K)},
                 **{n: round(pairs[n], 4) for n in pair_metric_names(EVAL_K)}, "pairs": pairs["pair_questions"]},
        "regnlp_bm25": {"recall@10": 0.719, "both@10": 0.562},
    }
    atomic_write_json(RESULTS, row)
    print(json.dumps(row, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
