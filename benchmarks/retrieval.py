"""Retrieval benchmark and ablation: the metric table of every retriever / stage per split, plus queries per second.

Usage:
    python benchmarks/retrieval.py [--data DIR] [--splits original-test,original-dev,validation,test]
                                   [--out benchmarks/results/retrieval.json] [--runs-dir benchmarks/runs]
    python benchmarks/retrieval.py --ablation [--protocols original,leakage-free] [--rerank-queries 300]
                                   [--artifacts artifacts] [--runs-dir benchmarks/runs]
    python benchmarks/retrieval.py --update-memory-row [--artifacts artifacts] [--runs-dir benchmarks/runs]
    python benchmarks/retrieval.py --update-learned-fusion-rows [--protocols leakage-free,original] [--runs-dir ...]

Plain mode (``make bench``) evaluates registry retrievers without models (BM25) on every split. ``--ablation``
evaluates, for each protocol, the rows BM25, zero-shot base encoder, +ET, +CT (from the base: the control for ET),
+ET+CT, +hybrid (α=0.8 and α tuned on validation), RIRAG rank fusion, RRF, +learned fusion (a LightGBM ranker over all
of these signals), +reranker (hybrid top 50), +learned fusion with a question memory (original protocol) and the
score-filtered hybrid (its encoder, CT or ET+CT, is the one with the better leakage-free validation R@10), with the
models that ``benchmarks/ablation.sh`` trains into ``artifacts/``:

* protocol ``leakage-free``: models trained on ``train``; reported on ``validation`` and ``test``;
* protocol ``original``: models trained on ``original-dev``; reported on ``original-test``.

A row whose model is missing is reported with ``status: missing``, one whose model cannot be used with
``status: error`` and the reason (never silently dropped; the other rows are kept). The best row is chosen on
leakage-free validation R@10 (without the leakage-free protocol there is no best run: it is never chosen on a test
split), and the same stage is the best run of the original protocol, except that there the learned fusion's
question-memory variant replaces the plain one (``ORIGINAL_PREFERS_MEMORY``: chosen by 5-fold CV on original-dev,
never on test); they are written as ``validation.best.trec.gz``, ``test.best.trec.gz`` and
``original-test.best.trec.gz`` (plus ``validation.bm25.trec.gz`` and the question-memory row's
``original-test.memory.trec.gz``) in ``--runs-dir``.
Prints a Markdown table. Results are merged into ``--out`` (:func:`rirag.io.merge_results_file`): a re-measured
row (same protocol, split and row) replaces the old one, every other committed row is kept unchanged, and each run is
logged under ``updates`` with its command, date and core count (a new file gets them at top level). Never part of
the test run.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import platform
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rirag.cli import format_table
from rirag.constants import (
    ALPHA_GRID,
    DENSE_MAX_SEQ_LENGTH,
    EVAL_K,
    FILTER_MAX_DROP,
    FILTER_MIN_SCORE,
    HYBRID_ALPHA,
    OFFLINE_ENCODER,
    RANK_FUSION_DOC_WEIGHT,
    RERANK_DEPTH,
    RUN_DEPTH,
    SEED,
)
from rirag.data.obliqa import load_obliqa
from rirag.data.runs import write_trec
from rirag.data.splits import EVAL_SPLITS, qrels_of, split_questions
from rirag.errors import DataError
from rirag.io import atomic_write_json, merge_results_file, merge_rows, portable_path, provenance
from rirag.retrieval.learned_fusion import RANKER_FILE
from rirag.retrieval.metrics import evaluate_run, metric_names
from rirag.retrieval.registry import RetrieverSpec, build_retriever

logger = logging.getLogger("benchmarks.retrieval")

#: Fusion weights tried on leakage-free validation for the tuned-α hybrid row (the paper's α=0.8 row is always kept).
#: Questions timed for the hybrid's queries/s (end to end, corpus already embedded).
TIMING_QUERIES = 500

#: The learned-fusion row (its encoders are listed in the row's ``encoders``).
LEARNED_FUSION_ROW = "+learned fusion (LightGBM: BM25, CT, ET+CT, zero-shot, document BM25)"
#: The same with the training questions as a memory (original protocol only: its splits share gold passages).
MEMORY_ROW = "+learned fusion + question memory (original protocol only)"

#: In the original protocol the best configuration is the learned fusion with the question memory when the best stage
#: on leakage-free validation is the learned fusion (where the memory is n/a). Chosen on the protocol's own training
#: questions: 5-fold CV on original-dev (``benchmarks/learned_fusion_cv.py``, recorded in
#: ``benchmarks/results/learned_fusion_cv.original-dev.json``) gives R@10 / MAP@10 / MRR@10 0.851 / 0.720 / 0.794
#: with the memory against 0.828 / 0.701 / 0.780 without it (feature version 2).
ORIGINAL_PREFERS_MEMORY = True

#: protocol -> (training split whose models are used, evaluation splits). Leakage-free comes first: its validation
#: split chooses the tuned encoder, α and the best row that the original protocol reuses.
PROTOCOLS = {
    "leakage-free": ("train", ("validation", "test")),
    "original": ("original-dev", ("original-test",)),
}
#: The fields that identify a row of the results file (a row with the same values is the same measurement).
ROW_KEY = ("protocol", "split", "row")
#: The protocol a split belongs to (BM25 needs no training; its plain-mode rows are filed under the split's protocol).
PROTOCOL_OF = {"original-dev": "original", "original-test": "original", "original-train": "original",
               "train": "leakage-free", "validation": "leakage-free", "test": "leakage-free"}
#: Splits that get a committed best run (``SPLIT.best.trec.gz``).
BEST_RUN_SPLITS = ("validation", "original-test", "test")


@dataclass
class Config:
    data: str | None = None
    splits: tuple[str, ...] = EVAL_SPLITS
    retrievers: tuple[str, ...] = ("bm25",)
    out: str = "benchmarks/results/retrieval.json"
    runs_dir: str | None = None
    seed: int = SEED
    ablation: bool = False
    protocols: tuple[str, ...] = ("leakage-free", "original")
    artifacts: str = "artifacts"
    base_model: str = OFFLINE_ENCODER
    rerank_queries: int = 0
    rerank_depth: int = RERANK_DEPTH
    dense_max_seq_length: int = DENSE_MAX_SEQ_LENGTH
    update_memory_row: bool = False
    update_learned_fusion_rows: bool = False
    extra: dict = field(default_factory=dict)


def main(config: Config) -> dict:
    unknown = sorted(set(config.protocols) - set(PROTOCOLS))
    if unknown:
        raise ValueError(f"unknown protocol(s) {unknown}; known: {list(PROTOCOLS)}")
    if config.update_memory_row or config.update_learned_fusion_rows:
        return update_learned_fusion_rows(config, memory_only=not config.update_learned_fusion_rows)
    if config.ablation:
        return ablation(config)
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
            rows.append({"protocol": PROTOCOL_OF.get(split, ""), "split": split, "row": name,
                         "questions": metrics["n_questions"],
                         **{m: round(metrics[m], 4) for m in metric_names(EVAL_K)},
                         "status": "ok", "note": "", "queries_per_s": round(len(queries) / search_s, 1),
                         "index_s": round(build_s, 2)})
            if config.runs_dir:
                write_trec(run, os.path.join(config.runs_dir, f"{split}.{name}.trec.gz"), system=name)
    sys.stdout.write(format_table(rows, list(rows[0])) + "\n")
    return _write(config, obliqa, rows)


def _previous_rows(path: str) -> list[dict]:
    """The rows of an existing results file (none for a new one)."""
    from rirag.io import read_json

    if not Path(path).exists():
        return []
    result = read_json(Path(path))
    return result.get("rows", []) if isinstance(result, dict) else []


def _write(config: Config, obliqa, rows: list[dict], **extra) -> dict:
    """Merge ``rows`` into ``config.out`` (rows not re-measured stay as they were; see the module docstring)."""
    return merge_results_file(config.out, rows, ROW_KEY, provenance(),
                              new_file={"machine": platform.machine(), "data": portable_path(obliqa.root)}, **extra)


# --------------------------------------------------------------------------------------------------
# Ablation
# --------------------------------------------------------------------------------------------------


def protocol_models(artifacts: str, train_split: str, base: str) -> dict[str, str]:
    """The model folders ``benchmarks/ablation.sh`` writes for one protocol (see the recipes)."""
    a = Path(artifacts)
    return {
        "base": base,
        "et": str(a / "entailment_tuning" / f"minilm-et-{train_split}"),
        "etct": str(a / "contrastive_tuning" / f"minilm-et-ct-{train_split}"),
        "ct": str(a / "contrastive_tuning" / f"minilm-ct-{train_split}"),
        "reranker": str(a / "reranker" / f"minilm-reranker-{train_split}"),
        "learned_fusion": str(a / "learned_fusion" / f"minilm-lf-{train_split}"),
        "learned_fusion_memory": str(a / "learned_fusion" / f"minilm-lfmem-{train_split}"),
    }


def _exists(model: str) -> bool:
    return model == OFFLINE_ENCODER or (Path(model) / "modules.json").exists() or (Path(model) / "config.json").exists()


def _stage(row: str) -> str:
    """A row name without its encoder tag: '+hybrid (ET+CT, α=0.8)' and '+hybrid (CT, α=0.8)' are one stage."""
    import re

    return re.sub(r"\((ET\+CT|CT|zero-shot)([ ,)])", r"(\2", row)


def _full_runs(rows: list[dict]) -> list[tuple[str, str]]:
    """(split, row) of every measured row that covers its whole split (not a seeded sample), in row order."""
    return [(r["split"], r["row"]) for r in rows if r.get("status") == "ok" and "sample" not in r["row"]
            and not r.get("note", "").endswith("(seeded sample)")]


def _choose_best_row(rows: list[dict]) -> str | None:
    """The row with the highest leakage-free validation R@10 (whole split only); None, with a warning, without
    validation rows: a best run is never chosen on a test split."""
    full = set(_full_runs(rows))
    ok = [r for r in rows if r["split"] == "validation" and (r["split"], r["row"]) in full]
    if not ok:
        logger.warning("no leakage-free validation rows: no best run is chosen (run the leakage-free protocol)")
        return None
    return max(ok, key=lambda r: r[f"recall@{EVAL_K}"])["row"]


def _best_rows(best_row: str | None, available) -> dict[str, str]:
    """split -> the row whose run is that split's best run: the row of ``best_row``'s stage (row names differ across
    protocols only by the encoder tag), or on original-test the question-memory row (``ORIGINAL_PREFERS_MEMORY``).
    ``available``: the (split, row) pairs that have a run, in row order (the first of a stage wins)."""
    out: dict[str, str] = {}
    if best_row is None:
        return out
    for split in BEST_RUN_SPLITS:
        match = [r for (sp, r) in available if sp == split and _stage(r) == _stage(best_row)]
        if (ORIGINAL_PREFERS_MEMORY and split == "original-test" and _stage(best_row) == _stage(LEARNED_FUSION_ROW)
                and (split, MEMORY_ROW) in available):
            match = [MEMORY_ROW]
        if match:
            out[split] = match[0]
    return out


def _write_best_and_memory_runs(runs_dir: str, runs: dict, best_rows: dict[str, str]) -> None:
    """``SPLIT.best.trec.gz`` for each split's best row and ``SPLIT.memory.trec.gz`` for the question-memory row, of
    the runs in ``runs`` ((split, row) -> run)."""
    for (split, row), run in runs.items():
        if row == MEMORY_ROW:
            write_trec(run, os.path.join(runs_dir, f"{split}.memory.trec.gz"), system="rirag-learned-fusion-memory",
                       depth=RUN_DEPTH)
        if best_rows.get(split) == row:
            write_trec(run, os.path.join(runs_dir, f"{split}.best.trec.gz"), system="rirag-best", depth=RUN_DEPTH)


def _record(protocol, split, row, run, questions, seconds=None, note="", **extra) -> dict:
    """One ablation row: the run's metrics on ``questions`` (and queries/s when ``seconds`` is given)."""
    names = metric_names(EVAL_K)
    m = evaluate_run(qrels_of(questions), run)
    rec = {"protocol": protocol, "split": split, "row": row, "questions": m["n_questions"],
           **{n: round(m[n], 4) for n in names}, "status": "ok", "note": note, **extra}
    if seconds:
        rec["queries_per_s"] = round(len(questions) / seconds, 1)
    logger.info("%s %s %s: %s", protocol, split, row, {n: rec[n] for n in names})
    return rec


def _learned_fusion_row(config: Config, corpus, protocol, split, row, folder, questions, bm25=None, docs=None):
    """A learned-fusion row (with or without question memory): (record, run)."""
    from rirag.retrieval.learned_fusion import LearnedFusionRetriever

    lf = LearnedFusionRetriever(corpus, folder, bm25=bm25, documents=docs, max_seq_length=config.dense_max_seq_length)
    t0 = time.perf_counter()
    run = lf.search({q.id: q.text for q in questions}, k=RUN_DEPTH, show_progress=True)
    note = "LightGBM ranker trained on the protocol's training questions"
    if lf.builder.memory is not None:
        note += f"; memory: the {lf.builder.memory_depth} nearest training questions' gold passages per similarity"
    return _record(protocol, split, row, run, questions, time.perf_counter() - t0, note, model=str(folder),
                   encoders=lf.builder.encoders), run


def update_learned_fusion_rows(config: Config, memory_only: bool = False) -> dict:
    """Re-evaluate only the learned-fusion rows of ``config.protocols`` (``memory_only``: only the original protocol's
    question-memory row) and replace them in ``config.out``; every other row, and the file's command and settings,
    stay as they are, and the update is logged under ``updates``. In ``--runs-dir`` it rewrites the memory run
    (``SPLIT.memory.trec.gz``) and, where the learned-fusion row is the file's best row of a split,
    ``SPLIT.best.trec.gz``. For retrained rankers without the whole ablation."""
    from rirag.io import read_json
    from rirag.retrieval.bm25 import document_index, passage_index

    result = read_json(Path(config.out))
    obliqa = load_obliqa(config.data)
    bm25, docs = passage_index(obliqa.corpus), document_index(obliqa.corpus)
    rows, updated = result["rows"], []
    runs: dict[tuple[str, str], dict] = {}  # (split, row) -> the re-measured run
    wanted = [(MEMORY_ROW, "learned_fusion_memory")]
    if not memory_only:
        wanted.insert(0, (LEARNED_FUSION_ROW, "learned_fusion"))
    for protocol in config.protocols:
        train_split, splits = PROTOCOLS[protocol]
        models = protocol_models(config.artifacts, train_split, config.base_model)
        for row, key in wanted:
            if key == "learned_fusion_memory" and protocol != "original":
                continue  # n/a in the leakage-free protocol (see ablation)
            if not (Path(models[key]) / RANKER_FILE).exists():
                logger.warning("no ranker at %s: row %r left as it was", models[key], row)
                continue
            for split in splits:
                questions = [q for q in split_questions(obliqa, split, config.seed) if q.gold]
                rec, run = _learned_fusion_row(config, obliqa.corpus, protocol, split, row, Path(models[key]),
                                               questions, bm25, docs)
                at = [i for i, r in enumerate(rows) if (r["protocol"], r["split"], r["row"]) == (protocol, split, row)]
                if at:
                    rows[at[0]] = rec
                else:
                    rows.append(rec)
                updated += [row] if row not in updated else []
                runs[(split, row)] = run
    # the re-measured validation row may change which row is best
    result["best_row"] = _choose_best_row(rows)
    result["best_rows"] = best = _best_rows(result["best_row"], _full_runs(rows))
    if config.runs_dir:
        stale = sorted(split for split, row in best.items() if (split, row) not in runs)
        if stale:
            logger.warning("the best row of %s was not re-measured here: its best run in %s is left as it was (a "
                           "whole ablation rewrites it)", ", ".join(stale), config.runs_dir)
        _write_best_and_memory_runs(config.runs_dir, runs, best)
    result.setdefault("updates", []).append({**provenance(), "rows": updated})
    atomic_write_json(config.out, result)
    return result


def ablation(config: Config) -> dict:
    from tqdm.auto import tqdm

    from rirag.retrieval.bm25 import document_index, passage_index
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.filtering import filter_run
    from rirag.retrieval.fusion import HybridRetriever, hybrid_fusion, rank_fusion, rrf, truncate
    from rirag.retrieval.rerank import RerankRetriever

    obliqa = load_obliqa(config.data)
    corpus = obliqa.corpus
    bm25 = passage_index(corpus)
    docs = document_index(corpus)
    document_of = {pid: str(p.document_id) for pid, p in corpus.items()}
    names = metric_names(EVAL_K)
    rows: list[dict] = []
    runs: dict[tuple[str, str], dict] = {}  # (split, row) -> run
    dense_cache: dict[str, DenseRetriever] = {}
    tuned_alpha: dict[str, float] = {}
    chosen: dict[str, str] = {}  # 'encoder' -> the tuned stage chosen on validation ('ct' or 'etct')

    def dense_for(model: str) -> DenseRetriever:
        if model not in dense_cache:
            # one passage length for every encoder (the registry's default), so that the embeddings cached while
            # training (selection, reranker negatives) serve here as well
            dense_cache[model] = DenseRetriever(corpus, model, max_seq_length=config.dense_max_seq_length)
        return dense_cache[model]

    def add(protocol, split, row, run, questions, seconds=None, note="", **extra):
        rows.append(_record(protocol, split, row, run, questions, seconds, note, **extra))
        runs[(split, row)] = run

    # leakage-free validation first: it chooses the encoder, α and best row used by every other split
    jobs = [(p, s) for p in PROTOCOLS if p in config.protocols for s in PROTOCOLS[p][1]]
    for protocol, split in tqdm(jobs, desc="ablation (protocol, split)"):
        train_split = PROTOCOLS[protocol][0]
        models = protocol_models(config.artifacts, train_split, config.base_model)
        questions = [q for q in split_questions(obliqa, split, config.seed) if q.gold]
        queries = {q.id: q.text for q in questions}
        if not questions:
            rows.append({"protocol": protocol, "split": split, "row": "*", "status": "empty",
                         "note": "no question with a gold passage"})
            continue

        t0 = time.perf_counter()
        bm25_run = bm25.search(queries, k=RUN_DEPTH)
        add(protocol, split, "bm25", bm25_run, questions, time.perf_counter() - t0)

        dense_runs, dense_recall = {}, {}
        for row, key in (("zero-shot", "base"), ("+ET", "et"), ("+CT", "ct"), ("+ET+CT", "etct")):
            model = models[key]
            if not _exists(model):
                rows.append({"protocol": protocol, "split": split, "row": row, "status": "missing",
                             "note": f"no model at {model}"})
                continue
            r = dense_for(model)
            r.passage_embeddings(show_progress=True)
            t0 = time.perf_counter()
            dense_runs[key] = r.search(queries, k=RUN_DEPTH, show_progress=False)
            add(protocol, split, row, dense_runs[key], questions, time.perf_counter() - t0, model=model)
            dense_recall[key] = rows[-1][f"recall@{EVAL_K}"]

        # the final dense encoder (the one the fusion rows use): the tuned encoder with the best leakage-free
        # validation R@10 (ET+CT or CT), kept for every later split and protocol; without validation rows, ET+CT if
        # trained, else CT, else the base model
        tuned = [k for k in ("etct", "ct") if k in dense_runs]
        if split == "validation" and tuned:
            chosen["encoder"] = max(tuned, key=dense_recall.get)
        final = chosen.get("encoder") if chosen.get("encoder") in dense_runs else \
            next((k for k in ("etct", "ct", "base") if k in dense_runs), None)
        if final is None:
            continue
        tag = {"etct": "ET+CT", "ct": "CT", "base": "zero-shot"}[final]
        hyb = truncate(hybrid_fusion(dense_runs[final], bm25_run, HYBRID_ALPHA), RUN_DEPTH)
        # queries/s of the whole hybrid (query encoding, BM25, fusion) with the corpus already embedded, timed on
        # a seeded sample of at most TIMING_QUERIES questions
        timed = dict(random.Random(config.seed).sample(sorted(queries.items()), min(TIMING_QUERIES, len(queries))))
        t0 = time.perf_counter()
        HybridRetriever(dense_for(models[final]), bm25, HYBRID_ALPHA).search(timed, k=RUN_DEPTH)
        qps = round(len(timed) / (time.perf_counter() - t0), 1)
        add(protocol, split, f"+hybrid ({tag}, α={HYBRID_ALPHA})", hyb, questions, model=models[final],
            queries_per_s=qps, timed_queries=len(timed))
        if final != "base" and "base" in dense_runs:
            zs = truncate(hybrid_fusion(dense_runs["base"], bm25_run, HYBRID_ALPHA), RUN_DEPTH)
            add(protocol, split, f"hybrid (zero-shot, α={HYBRID_ALPHA})", zs, questions)
        # α chosen on leakage-free validation R@10 (then MRR@10) over ALPHA_GRID, applied unchanged elsewhere
        if split == "validation":
            val_qrels = qrels_of(questions)

            def _score(a, *, qrels=val_qrels, dense_run=dense_runs[final], bm25_run=bm25_run):
                m = evaluate_run(qrels, truncate(hybrid_fusion(dense_run, bm25_run, a), EVAL_K))
                return (round(m[f"recall@{EVAL_K}"], 6), round(m[f"mrr@{EVAL_K}"], 6))
            tuned_alpha["value"] = max(ALPHA_GRID, key=_score)
        if "value" in tuned_alpha and tuned_alpha["value"] != HYBRID_ALPHA:
            a = tuned_alpha["value"]
            add(protocol, split, f"+hybrid ({tag}, α={a} tuned on validation)",
                truncate(hybrid_fusion(dense_runs[final], bm25_run, a), RUN_DEPTH), questions,
                note="α chosen on leakage-free validation R@10", model=models[final])
        doc_scores = docs.score_all(queries)
        doc_run = {q: {d: float(s) for d, s in zip(docs.ids, row)} for q, row in zip(queries, doc_scores)}
        add(protocol, split, f"rank fusion ({tag} passages + BM25 documents, w={RANK_FUSION_DOC_WEIGHT})",
            rank_fusion(dense_runs[final], doc_run, document_of, RANK_FUSION_DOC_WEIGHT), questions)
        add(protocol, split, "rank fusion (BM25 passages + BM25 documents)",
            rank_fusion(bm25_run, doc_run, document_of, RANK_FUSION_DOC_WEIGHT), questions)
        add(protocol, split, f"RRF ({tag} + BM25)", truncate(rrf([dense_runs[final], bm25_run]), RUN_DEPTH),
            questions)
        filtered = filter_run(hyb, FILTER_MIN_SCORE, FILTER_MAX_DROP, EVAL_K)
        kept = sum(len(r) for r in filtered.values()) / max(1, len(filtered))
        add(protocol, split, f"+hybrid, score-filtered (≥{FILTER_MIN_SCORE}, drop>{FILTER_MAX_DROP})", filtered,
            questions, note=f"mean passages kept {kept:.2f}")

        for row, key in ((LEARNED_FUSION_ROW, "learned_fusion"), (MEMORY_ROW, "learned_fusion_memory")):
            folder = Path(models[key])
            if key == "learned_fusion_memory" and protocol == "leakage-free":
                rows.append({"protocol": protocol, "split": split, "row": row, "status": "n/a",
                             "note": "the leakage-free re-split shares no gold passage between training and "
                                     "evaluation documents, so a memory of training questions cannot help"})
                continue
            if not (folder / RANKER_FILE).exists():
                rows.append({"protocol": protocol, "split": split, "row": row, "status": "missing",
                             "note": f"no ranker at {folder}"})
                continue
            try:
                rec, lf_run = _learned_fusion_row(config, corpus, protocol, split, row, folder, questions, bm25,
                                                  docs)
            except DataError as err:  # e.g. a ranker from another feature version: report it, keep the other rows
                rows.append({"protocol": protocol, "split": split, "row": row, "status": "error", "note": str(err)})
                logger.error("%s %s %s: %s", protocol, split, row, err)
                continue
            rows.append(rec)
            runs[(split, row)] = lf_run

        if _exists(models["reranker"]):
            sub = questions
            if config.rerank_queries and len(questions) > config.rerank_queries:
                sub = random.Random(config.seed).sample(questions, config.rerank_queries)
            subq = {q.id: q.text for q in sub}
            rr = RerankRetriever(corpus, None, models["reranker"], config.rerank_depth)
            t0 = time.perf_counter()
            from rirag.retrieval.rerank import rerank_run

            try:
                reranked = rerank_run({q: hyb[q] for q in subq}, subq, corpus,
                                      functools.partial(rr.score_pairs, show_progress=True), config.rerank_depth)
            except (DataError, OSError) as err:  # an unloadable model: report it, keep the other rows
                rows.append({"protocol": protocol, "split": split, "row": "+reranker", "status": "error",
                             "note": str(err)})
                logger.error("%s %s +reranker: %s", protocol, split, err)
                continue
            seconds = time.perf_counter() - t0
            note = f"{len(sub)} of {len(questions)} questions (seeded sample)" if sub is not questions else ""
            add(protocol, split, f"+reranker (hybrid top {config.rerank_depth})", reranked, sub, seconds,
                note=note, model=models["reranker"])
            if sub is not questions:
                add(protocol, split, "+hybrid on the reranker's sample", {q: hyb[q] for q in subq}, sub,
                    note="same questions as the reranker row")
        else:
            rows.append({"protocol": protocol, "split": split, "row": "+reranker", "status": "missing",
                         "note": f"no model at {models['reranker']}"})

    # the best row is chosen over the file's rows after this run's rows are merged in (a run of one protocol keeps
    # the other protocol's rows); only runs measured here are written
    merged = merge_rows(_previous_rows(config.out), rows, ROW_KEY)
    best_row = _choose_best_row(merged)
    best_rows = _best_rows(best_row, _full_runs(merged))
    if config.runs_dir:
        _write_best_and_memory_runs(config.runs_dir, runs, best_rows)
        if ("validation", "bm25") in runs:
            write_trec(runs[("validation", "bm25")], os.path.join(config.runs_dir, "validation.bm25.trec.gz"),
                       system="bm25", depth=RUN_DEPTH)
    cols = ["protocol", "split", "row", "questions", *names, "queries_per_s", "status", "note"]
    sys.stdout.write(format_table(rows, cols) + "\n")
    return _write(config, obliqa, rows, best_row=best_row, best_rows=best_rows, ablation=True,
                  settings={"alpha": HYBRID_ALPHA, "rank_fusion_doc_weight": RANK_FUSION_DOC_WEIGHT,
                            "rerank_depth": config.rerank_depth, "rerank_queries": config.rerank_queries,
                            "filter": [FILTER_MIN_SCORE, FILTER_MAX_DROP], **config.extra})


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    p.add_argument("--splits", default=",".join(EVAL_SPLITS))
    p.add_argument("--retrievers", default="bm25")
    p.add_argument("--out", default=Config.out)
    p.add_argument("--runs-dir", default=None, help="also write runs (plain: SPLIT.RETRIEVER.trec.gz; ablation: best)")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--ablation", action="store_true", help="the staged ablation over trained artifacts")
    p.add_argument("--protocols", default="leakage-free,original")
    p.add_argument("--artifacts", default=Config.artifacts)
    p.add_argument("--base-model", default=OFFLINE_ENCODER)
    p.add_argument("--rerank-queries", type=int, default=0,
                   help="rerank a seeded sample of this many questions (0: all)")
    p.add_argument("--rerank-depth", type=int, default=RERANK_DEPTH)
    p.add_argument("--update-memory-row", action="store_true",
                   help="re-evaluate only the original protocol's question-memory row and replace it in --out")
    p.add_argument("--update-learned-fusion-rows", action="store_true",
                   help="re-evaluate only the learned-fusion rows of --protocols and replace them in --out")
    a = p.parse_args(argv)
    return Config(a.data, tuple(a.splits.split(",")), tuple(a.retrievers.split(",")), a.out, a.runs_dir, a.seed,
                  a.ablation, tuple(a.protocols.split(",")), a.artifacts, a.base_model, a.rerank_queries,
                  a.rerank_depth, update_memory_row=a.update_memory_row,
                  update_learned_fusion_rows=a.update_learned_fusion_rows)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
