"""Compare trained encoders (recipe variants) on one or more splits: dense alone and the hybrid over an α grid.

The ablation (``benchmarks/retrieval.py --ablation``) reports the stages of one recipe; this benchmark answers "does
this recipe change help?" for encoders trained by hand, e.g. contrastive tuning with mined negatives or with every
training pair. Each encoder's training summary (``selection.json`` next to the model, when present) is copied into
the result so the JSON says what was trained. Passage embeddings are cached as everywhere else.

Usage:
    python benchmarks/encoder_variants.py --models artifacts/contrastive_tuning/minilm-ct-train,... \
        [--splits validation] [--alphas 0.2,0.5,0.8] [--out benchmarks/results/encoder_variants.json]
        [--rerankers artifacts/reranker/A,... --rerank-queries 100]

With ``--rerankers``, each cross-encoder reranks the top ``RERANK_DEPTH`` of the first model's hybrid (α = 0.8, as
in the ablation) on a seeded sample of questions, reported next to the hybrid on the same sample.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from rirag.cli import format_table
from rirag.constants import DENSE_MAX_SEQ_LENGTH, EVAL_K, HYBRID_ALPHA, RERANK_DEPTH, RUN_DEPTH, SEED
from rirag.data.obliqa import load_obliqa
from rirag.data.splits import qrels_of, split_questions
from rirag.io import merge_results_file, portable_path, provenance, read_json
from rirag.retrieval.metrics import evaluate_run, metric_names

logger = logging.getLogger("benchmarks.encoder_variants")


@dataclass
class Config:
    models: tuple[str, ...]
    splits: tuple[str, ...] = ("validation",)
    alphas: tuple[float, ...] = (0.2, 0.5, 0.8)
    data: str | None = None
    out: str = "benchmarks/results/encoder_variants.json"
    seed: int = SEED
    rerankers: tuple[str, ...] = ()
    rerank_queries: int = 100


def _training_summary(model: str) -> dict:
    path = Path(model) / "selection.json"
    if not path.exists():  # e.g. a reranker: the training command from its model card
        card = Path(model) / "README.md"
        lines = card.read_text(encoding="utf-8").splitlines() if card.exists() else []
        return {"command": next((ln.strip(" `") for ln in lines if "python train/" in ln), None)}
    summary = json.loads(path.read_text(encoding="utf-8"))
    return {k: summary[k] for k in ("pairs", "hard_negatives", "per_epoch", "best", "train_seconds", "command")
            if k in summary}


#: The fields that identify a row (the same values: the same measurement, replaced when re-measured).
ROW_KEY = ("split", "model", "retriever", "alpha", "reranker")


def _rerank_rows(config: Config, rows: list, split: str, model: str, questions, corpus, hybrid_run) -> None:
    import random

    from rirag.retrieval.rerank import RerankRetriever, rerank_run

    sample = random.Random(config.seed).sample(questions, min(config.rerank_queries, len(questions)))
    queries, qrels = {q.id: q.text for q in sample}, qrels_of(sample)
    head = {q: hybrid_run[q] for q in queries}
    runs = {("", "hybrid (reranker sample)"): head}
    for name in config.rerankers:
        rr = RerankRetriever(corpus, None, name, RERANK_DEPTH)
        runs[(name, f"+reranker (hybrid top {RERANK_DEPTH})")] = rerank_run(
            head, queries, corpus, functools.partial(rr.score_pairs, show_progress=True), RERANK_DEPTH)
    for (reranker, label), run in runs.items():
        m = evaluate_run(qrels, run)
        rows.append({"split": split, "model": model, "retriever": label, "alpha": HYBRID_ALPHA,
                     "reranker": reranker, "questions": len(sample),
                     **{n: round(m[n], 4) for n in metric_names(EVAL_K)}})


def main(config: Config) -> dict:
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.fusion import hybrid_fusion, truncate

    obliqa = load_obliqa(config.data)
    bm25 = passage_index(obliqa.corpus)
    names = metric_names(EVAL_K)
    rows = []
    for split in config.splits:
        questions = [q for q in split_questions(obliqa, split, config.seed) if q.gold]
        qrels, queries = qrels_of(questions), {q.id: q.text for q in questions}
        bm25_run = bm25.search(queries, k=RUN_DEPTH)

        def add(model, retriever, run, alpha=None, *, qrels=qrels, split=split):  # this split's, bound now
            m = evaluate_run(qrels, run)
            rows.append({"split": split, "model": model, "retriever": retriever, "alpha": alpha,
                         **{n: round(m[n], 4) for n in names}})

        add("", "bm25", bm25_run)
        for model in config.models:
            dense = DenseRetriever(obliqa.corpus, model, max_seq_length=DENSE_MAX_SEQ_LENGTH)
            dense.passage_embeddings(show_progress=True)
            dense_run = dense.search(queries, k=RUN_DEPTH)
            add(model, "dense", dense_run)
            for a in config.alphas:
                add(model, "hybrid", truncate(hybrid_fusion(dense_run, bm25_run, a), RUN_DEPTH), a)
            if config.rerankers and model == config.models[0]:
                _rerank_rows(config, rows, split, model, questions, obliqa.corpus,
                             truncate(hybrid_fusion(dense_run, bm25_run, HYBRID_ALPHA), RUN_DEPTH))
    sys.stdout.write(format_table(rows, ["split", "model", "retriever", "alpha", *names]) + "\n")
    record = provenance()
    training = {m: _training_summary(m) for m in config.models + config.rerankers}
    if Path(config.out).exists():  # merged: the summaries of encoders measured before are kept
        training = {**(read_json(Path(config.out)).get("training") or {}), **training}
    # rows merge into --out: a re-measured row (same split, model, retriever, α, reranker) is replaced, others kept
    return merge_results_file(config.out, rows, ROW_KEY, record, new_file={"data": portable_path(obliqa.root)},
                              training=training)


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", required=True, help="comma-separated encoder folders or names")
    p.add_argument("--splits", default="validation")
    p.add_argument("--alphas", default="0.2,0.5,0.8")
    p.add_argument("--data", default=None)
    p.add_argument("--out", default=Config.out)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--rerankers", default="", help="comma-separated cross-encoders (rerank the first model's hybrid)")
    p.add_argument("--rerank-queries", type=int, default=100)
    a = p.parse_args(argv)
    return Config(tuple(m for m in a.models.split(",") if m), tuple(a.splits.split(",")),
                  tuple(float(x) for x in a.alphas.split(",")), a.data, a.out, a.seed,
                  tuple(r for r in a.rerankers.split(",") if r), a.rerank_queries)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
