"""Document-grouped cross-validation of the leakage-free protocol, with bootstrap intervals and paired tests.

The leakage-free test split is one document (77 questions); this pools every published question, splits the 40
documents into ``--folds`` seeded folds (a question goes with its gold passages' documents; one whose documents span
folds is discarded and counted, as in the leakage-free re-split), and for each row ranks every fold's questions with
what was chosen or trained on the other folds only. Each row reports R@10 / MAP@10 / MRR@10 pooled over all kept
questions with 95 % bootstrap intervals (questions resampled with replacement, seeded) and a paired test against
BM25 (ranx ``compare``, paired Student's t-test), plus the per-fold values.

Rows (none needs training beyond a choice on the other folds, so all fit a 2-core CPU):

* ``bm25``: BM25 (bm25s, Lucene k1 = 1.5, b = 0.75), nothing trained;
* ``zero-shot``: the zero-shot MiniLM encoder (``--model``), nothing trained;
* ``hybrid (zero-shot, α=0.8)``: the paper's α; ``RRF (zero-shot + BM25)``;
* ``hybrid (zero-shot, α tuned on the other folds)``: α from ``ALPHA_GRID`` chosen per fold on the other folds'
  questions (R@10, then MRR@10).

The trained encoders (ET, CT) and the learned fusion are not here: training them five times does not fit the 2-core
budget. Passage embeddings come from the shared cache (``rirag.retrieval.dense``).

Usage:
    python benchmarks/retrieval_cv.py [--rows bm25,zero-shot,hybrid,rrf,hybrid-tuned] [--folds 5] [--seed 42]
        [--bootstrap 1000] [--out benchmarks/results/retrieval_cv.json]

Rows merge into ``--out`` (keyed by row), with the command, date and core count. Never part of the tests.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from dataclasses import dataclass

import numpy as np

from rirag.constants import ALPHA_GRID, DENSE_MAX_SEQ_LENGTH, EVAL_K, HYBRID_ALPHA, OFFLINE_ENCODER, RUN_DEPTH, SEED
from rirag.data import DataError, Question, load_obliqa
from rirag.evaluation import evaluate_run, metric_names, ranx_run
from rirag.io import merge_results_file, provenance
from rirag.splits import ORIGINAL_SPLITS, qrels_of, split_questions

logger = logging.getLogger("benchmarks.retrieval_cv")

ROWS = ("bm25", "zero-shot", "hybrid", "rrf", "hybrid-tuned")
METRICS = tuple(metric_names(EVAL_K, ("recall", "map", "mrr")))


@dataclass
class Config:
    data: str | None = None
    rows: tuple[str, ...] = ROWS
    model: str = OFFLINE_ENCODER
    folds: int = 5
    seed: int = SEED
    bootstrap: int = 1000
    out: str = "benchmarks/results/retrieval_cv.json"


def pooled_questions(obliqa) -> list[Question]:
    """Every published question with a gold passage, once (the leakage-free re-split pools the same questions)."""
    pooled: dict[str, Question] = {}
    for name in ORIGINAL_SPLITS:
        try:
            questions = split_questions(obliqa, name)
        except DataError:  # original-train is absent offline
            continue
        for q in questions:
            if q.gold:
                pooled.setdefault(q.id, q)
    return list(pooled.values())


def document_folds(questions: list[Question], k: int, seed: int) -> tuple[list[list[Question]], dict, int]:
    """k folds of documents (seeded shuffle, dealt round-robin); each question joins the fold of its documents.
    Returns (questions per fold, document -> fold, discarded count: questions whose documents span folds)."""
    documents = sorted({d for q in questions for d in q.gold_documents})
    random.Random(seed).shuffle(documents)
    fold_of = {d: i % k for i, d in enumerate(documents)}
    folds: list[list[Question]] = [[] for _ in range(k)]
    discarded = 0
    for q in questions:
        where = {fold_of[d] for d in q.gold_documents}
        if len(where) == 1:
            folds[where.pop()].append(q)
        else:
            discarded += 1
    return folds, fold_of, discarded


def bootstrap_interval(values: np.ndarray, n: int, seed: int) -> list[float]:
    """95 % percentile interval of the mean, questions resampled with replacement."""
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n, len(values)))].mean(axis=1)
    return [round(float(np.percentile(means, 2.5)), 4), round(float(np.percentile(means, 97.5)), 4)]


def paired_tests(qrels: dict, runs: dict[str, dict], baseline: str) -> dict[str, dict[str, float]]:
    """p-values of each run against ``baseline`` (ranx compare, paired Student's t-test), per metric."""
    from ranx import Qrels, compare

    qids = list(qrels)
    names = list(runs)
    ranx_runs = []
    for name in names:
        r = ranx_run(runs[name], qids)
        r.name = name
        ranx_runs.append(r)
    report = compare(Qrels(qrels), ranx_runs, list(METRICS), stat_test="student", make_comparable=True).to_dict()
    return {name: {m: round(float(report[name]["comparisons"][baseline][m]), 6) for m in METRICS}
            for name in names if name != baseline}


def main(config: Config) -> dict:
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.fusion import hybrid_fusion, rrf, truncate

    unknown = sorted(set(config.rows) - set(ROWS))
    if unknown:
        raise SystemExit(f"--rows: unknown row(s) {unknown}; known: {', '.join(ROWS)}")
    obliqa = load_obliqa(config.data)
    questions = pooled_questions(obliqa)
    folds, fold_of, discarded = document_folds(questions, config.folds, config.seed)
    kept = [q for fold in folds for q in fold]
    queries = {q.id: q.text for q in kept}
    qrels = qrels_of(kept)
    logger.info("%d pooled questions, %d kept in %d document folds (%s questions), %d discarded", len(questions),
                len(kept), config.folds, "/".join(str(len(f)) for f in folds), discarded)

    runs: dict[str, dict] = {}
    bm25 = passage_index(obliqa.corpus).search(queries, k=RUN_DEPTH)
    runs["bm25"] = bm25
    dense_rows = [r for r in config.rows if r != "bm25"]
    chosen_alpha: list[float] = []
    if dense_rows:
        from rirag.retrieval.dense import DenseRetriever

        dense = DenseRetriever(obliqa.corpus, config.model, max_seq_length=DENSE_MAX_SEQ_LENGTH)
        dense.passage_embeddings(show_progress=True)
        zs = dense.search(queries, k=RUN_DEPTH, show_progress=True)
        if "zero-shot" in config.rows:
            runs["zero-shot"] = zs
        if "hybrid" in config.rows:
            runs[f"hybrid (zero-shot, α={HYBRID_ALPHA})"] = truncate(hybrid_fusion(zs, bm25, HYBRID_ALPHA), RUN_DEPTH)
        if "rrf" in config.rows:
            runs["RRF (zero-shot + BM25)"] = truncate(rrf([zs, bm25]), RUN_DEPTH)
        if "hybrid-tuned" in config.rows:
            tuned: dict = {}
            for i, fold in enumerate(folds):
                others = [q for j, f in enumerate(folds) if j != i for q in f]
                other_qrels = qrels_of(others)

                def score(a, other_qrels=other_qrels, others=others):
                    fused = truncate(hybrid_fusion({q.id: zs[q.id] for q in others},
                                                   {q.id: bm25[q.id] for q in others}, a), EVAL_K)
                    m = evaluate_run(other_qrels, fused)
                    return (round(m[METRICS[0]], 6), round(m[METRICS[2]], 6))

                alpha = max(ALPHA_GRID, key=score)
                chosen_alpha.append(alpha)
                ids = [q.id for q in fold]
                tuned.update(truncate(hybrid_fusion({q: zs[q] for q in ids}, {q: bm25[q] for q in ids}, alpha),
                                      RUN_DEPTH))
            runs["hybrid (zero-shot, α tuned on the other folds)"] = tuned

    rows = []
    p_values = paired_tests(qrels, runs, "bm25") if len(runs) > 1 else {}
    for name, run in runs.items():
        result = evaluate_run(qrels, run, per_query=True)
        per_query = result["per_query"]
        row = {"row": name, "questions": result["n_questions"], **{m: round(result[m], 4) for m in METRICS}}
        for j, m in enumerate(METRICS):
            values = np.array([per_query[q][m] for q in qrels], dtype=np.float64)
            row[f"{m} 95% CI"] = bootstrap_interval(values, config.bootstrap, config.seed + j)
        row["per fold R@10"] = [round(float(np.mean([per_query[q.id][METRICS[0]] for q in fold])), 4)
                                for fold in folds]
        if name in p_values:
            row["p vs bm25 (paired t)"] = p_values[name]
        if name.startswith("hybrid (zero-shot, α tuned"):
            row["note"] = f"α per fold: {', '.join(str(a) for a in chosen_alpha)}"
        rows.append(row)
    from rirag.cli import format_table

    sys.stdout.write(format_table(rows, ["row", "questions", *METRICS]) + "\n")
    record = provenance()
    return merge_results_file(config.out, rows, ("row",), record, new_file={
        "folds": config.folds, "seed": config.seed, "bootstrap": config.bootstrap,
        "pooled_questions": len(questions), "kept_questions": len(kept), "discarded_multi_fold": discarded,
        "fold_questions": [len(f) for f in folds],
        "fold_documents": [sorted(d for d, f in fold_of.items() if f == i) for i in range(config.folds)],
        "model": config.model,
        "not_here": "trained encoders (ET, CT) and the learned fusion: training them per fold does not fit the "
                    "2-core budget"})


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--model", default=OFFLINE_ENCODER)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--out", default=Config.out)
    a = p.parse_args(argv)
    return Config(a.data, tuple(r for r in a.rows.split(",") if r), a.model, a.folds, a.seed, a.bootstrap, a.out)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
