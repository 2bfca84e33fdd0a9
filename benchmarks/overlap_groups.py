"""Where the best run's gain over BM25 comes from on the published splits: original-test by original-dev overlap.

The published dev and test splits share gold passages. Each original-test question is put in one group by how many
of its gold passages are also gold for some original-dev question: ``all``, ``partly`` or ``never`` seen. For each
group this reports the committed best run (``benchmarks/runs/original-test.best.trec.gz``: the learned fusion with
the question memory, which proposes original-dev questions' gold passages) next to BM25 (recomputed: it takes
seconds), with the share of the whole R@10 gain that each group contributes. Cheap: no model is loaded.

Usage:
    python benchmarks/overlap_groups.py [--run benchmarks/runs/original-test.best.trec.gz]
        [--out benchmarks/results/overlap_groups.original-test.json]

Results merge into ``--out`` (rows keyed by run and group), with the command, date and core count.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass

from rirag.constants import EVAL_K, RUN_DEPTH
from rirag.data.obliqa import load_obliqa
from rirag.data.runs import read_trec
from rirag.data.splits import qrels_of, split_questions
from rirag.io import merge_results_file, provenance
from rirag.retrieval.bm25 import passage_index
from rirag.retrieval.metrics import evaluate_run, metric_names

logger = logging.getLogger("benchmarks.overlap_groups")

GROUPS = ("all", "partly", "never")
ROW_KEY = ("run", "group")


@dataclass
class Config:
    data: str | None = None
    run: str = "benchmarks/runs/original-test.best.trec.gz"
    seen_split: str = "original-dev"
    eval_split: str = "original-test"
    out: str = "benchmarks/results/overlap_groups.original-test.json"


def group_of(gold: tuple[str, ...], seen: set[str]) -> str:
    """``all`` / ``partly`` / ``never``: how many of a question's gold passages are in ``seen``."""
    hits = sum(1 for g in gold if g in seen)
    return "all" if hits == len(gold) else "partly" if hits else "never"


def group_rows(questions, seen: set[str], runs: dict[str, dict]) -> list[dict]:
    """One row per (run, group) and per run over all questions: mean metrics, question count, and for every run but
    the first (the baseline) the R@10 gain over it and the share of the whole gain that the group contributes."""
    names = metric_names(EVAL_K)
    recall = names[0]
    groups = {g: [q for q in questions if group_of(q.gold, seen) == g] for g in GROUPS}
    groups["every question"] = list(questions)
    per_query = {name: evaluate_run(qrels_of(questions), run, per_query=True)["per_query"]
                 for name, run in runs.items()}
    baseline = next(iter(runs))
    total = {name: sum(per_query[name][q.id][recall] - per_query[baseline][q.id][recall] for q in questions)
             for name in runs}
    rows = []
    for name in runs:
        for group, qs in groups.items():
            if not qs:
                continue
            row = {"run": name, "group": group, "questions": len(qs),
                   **{m: round(sum(per_query[name][q.id][m] for q in qs) / len(qs), 4) for m in names}}
            if name != baseline:
                gain = sum(per_query[name][q.id][recall] - per_query[baseline][q.id][recall] for q in qs)
                row[f"{recall} gain over {baseline}"] = round(gain / len(qs), 4)
                row["share of the whole gain"] = round(gain / total[name], 4) if total[name] else None
            rows.append(row)
    return rows


def main(config: Config) -> dict:
    obliqa = load_obliqa(config.data)
    seen = {g for q in split_questions(obliqa, config.seen_split) for g in q.gold}
    questions = [q for q in split_questions(obliqa, config.eval_split) if q.gold]
    best = read_trec(config.run)
    bm25 = passage_index(obliqa.corpus).search({q.id: q.text for q in questions}, k=RUN_DEPTH)
    rows = group_rows(questions, seen, {"bm25": bm25, os.path.basename(config.run): best})
    from rirag.cli import format_table

    sys.stdout.write(format_table(rows, list(dict.fromkeys(k for r in rows for k in r))) + "\n")
    record = provenance()
    return merge_results_file(config.out, rows, ROW_KEY, record, new_file={
        "split": config.eval_split, "seen": f"gold passages of {config.seen_split}",
        "groups": "all / partly / never: how many of a question's gold passages are gold for some "
                  f"{config.seen_split} question"})


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    p.add_argument("--run", default=Config.run)
    p.add_argument("--out", default=Config.out)
    a = p.parse_args(argv)
    return Config(data=a.data, run=a.run, out=a.out)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
