"""Document-grouped cross-validation of the leakage-free protocol, with bootstrap intervals and paired tests.

The leakage-free test split is one document (77 questions); this pools every published question, splits the 40
documents into ``--folds`` seeded folds (a question goes with its gold passages' documents; one whose documents span
folds is discarded and counted, as in the leakage-free re-split), and for each row ranks every fold's questions with
what was chosen or trained on the other folds only. Each row reports R@10 / MAP@10 / MRR@10 pooled over all kept
questions with 95 % bootstrap intervals (questions resampled with replacement, seeded), a paired test against BM25
(ranx ``compare``, paired Student's t-test), the difference from BM25 with its 95 % paired bootstrap interval (the same
questions resampled for both), the per-fold values and the minutes per fold.

Rows (keys of ``--rows``; labels: :data:`rirag.retrieval.defaults.CV_ROWS`):

* ``bm25``: BM25 (bm25s, Lucene k1 = 1.5, b = 0.75), nothing trained;
* ``zero-shot``: the zero-shot MiniLM encoder (``--model``), nothing trained;
* ``hybrid``: α·zero-shot + (1−α)·BM25 with the paper's α; ``rrf``: reciprocal rank fusion of the two;
* ``hybrid-tuned``: α from ``ALPHA_GRID`` chosen per fold on the other folds' questions (R@10, then MRR@10); the row
  also records the α the same rule picks on every kept question (``alpha``: what a deployment would use);
* ``rank-fusion``: RIRAG rank fusion of BM25 passages with document BM25, the registry's ``rank-fusion`` without a
  model (what ``rirag ask`` ran before the default came from this table);
* ``learned-fusion``: the LightGBM LambdaMART ranker (:mod:`rirag.retrieval.learned_fusion`) over BM25, the zero-shot
  encoder, document BM25 and the lexical features, trained per fold on the other folds' questions only with the
  hyperparameters of ``--recipe``; its number of boosting rounds is chosen per fold on a document-grouped inner
  split of the training folds (every ``ROUND_STEP`` up to the recipe's rounds, R@10 then MRR@10), then the ranker is
  retrained on all the training folds with that number. No question memory, no trained encoder.

Minutes per fold: wall time of the fold's own work (its questions' runs and features, the choice or training made
for it), the runs a fusion fuses included; shared set-up (indexes, the corpus embedding, cached after its first
time) is logged, not counted. The default retriever of ``rirag ask`` / ``answer`` / ``submit`` and of the demo is
the best row here that needs no trained artifact (:func:`rirag.retrieval.defaults.default_retriever`).

Usage:
    python benchmarks/retrieval_cv.py [--rows bm25,zero-shot,hybrid,rrf,hybrid-tuned,rank-fusion,learned-fusion]
        [--folds 5] [--seed 42] [--bootstrap 1000] [--recipe recipes/learned_fusion/offline.yaml]
        [--out benchmarks/results/retrieval_cv.json]
    # a small check (a corpus subset, a few questions per fold; write it elsewhere):
    python benchmarks/retrieval_cv.py --folds 2 --max-documents 6 --max-questions 20 --out out/cv.json

Rows merge into ``--out`` (keyed by row; BM25 is always re-measured, as the baseline of every comparison), with the
command, date and core count; a file of another fold layout (folds, seed, questions) is refused. Never part of the
tests.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from rirag.constants import ALPHA_GRID, DENSE_MAX_SEQ_LENGTH, EVAL_K, HYBRID_ALPHA, OFFLINE_ENCODER, RUN_DEPTH, SEED
from rirag.data.obliqa import Question, load_obliqa
from rirag.data.splits import ORIGINAL_SPLITS, qrels_of, split_questions
from rirag.errors import DataError
from rirag.io import merge_results_file, provenance, read_json
from rirag.retrieval.defaults import CV_ROWS
from rirag.retrieval.metrics import evaluate_run, metric_names, ranx_run

logger = logging.getLogger("benchmarks.retrieval_cv")

ROWS = tuple(CV_ROWS)
METRICS = tuple(metric_names(EVAL_K, ("recall", "map", "mrr")))
#: Short metric names of the per-fold fields.
SHORT = dict(zip(METRICS, ("R@10", "MAP@10", "MRR@10")))
#: Learned fusion: boosting rounds tried on the inner split, every this many up to the recipe's ``num_boost_round``.
ROUND_STEP = 25
REPO = Path(__file__).resolve().parents[1]
NOT_HERE = ("trained encoders (ET, CT) as rows or as learned-fusion features: training them per fold (about 13 min "
            "per encoder per fold, plus a corpus embedding each) does not fit the 2-core budget; the learned fusion "
            "here uses BM25, the zero-shot encoder, document BM25 and the lexical features only, without the "
            "question memory")


@dataclass
class Config:
    data: str | None = None
    rows: tuple[str, ...] = ROWS
    model: str = OFFLINE_ENCODER
    folds: int = 5
    seed: int = SEED
    bootstrap: int = 1000
    recipe: str = "recipes/learned_fusion/offline.yaml"
    max_documents: int | None = None
    max_questions: int | None = None
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


def paired_difference_interval(values: np.ndarray, baseline: np.ndarray, n: int, seed: int) -> list[float]:
    """95 % paired bootstrap interval of mean(values − baseline): the same resampled questions for both."""
    return bootstrap_interval(np.asarray(values, dtype=np.float64) - np.asarray(baseline, dtype=np.float64), n, seed)


def paired_tests(qrels: dict, runs: dict[str, dict], baseline: str) -> dict[str, dict[str, float]]:
    """p-values of each run against ``baseline`` (ranx compare, paired Student's t-test), per metric; None where
    the run scores every question as the baseline does."""
    from ranx import Qrels, compare

    qids = list(qrels)
    names = list(runs)
    ranx_runs = []
    for name in names:
        r = ranx_run(runs[name], qids)
        r.name = name
        ranx_runs.append(r)
    report = compare(Qrels(qrels), ranx_runs, list(METRICS), stat_test="student", make_comparable=True).to_dict()

    def p(name, m):  # identical per-question values give no test (NaN): None, as JSON has no NaN
        value = float(report[name]["comparisons"][baseline][m])
        return None if np.isnan(value) else round(value, 6)

    return {name: {m: p(name, m) for m in METRICS} for name in names if name != baseline}


def subset(obliqa, questions: list[Question], max_documents: int | None, seed: int):
    """(corpus, questions) restricted to ``max_documents`` seeded documents (None: everything), for a small check:
    the passages of those documents and the questions whose gold documents are all among them."""
    if not max_documents:
        return obliqa.corpus, questions
    documents = sorted({d for q in questions for d in q.gold_documents})
    keep = set(random.Random(seed).sample(documents, min(max_documents, len(documents))))
    corpus = {pid: p for pid, p in obliqa.corpus.items() if p.document_id in keep}
    return corpus, [q for q in questions if set(q.gold_documents) <= keep]


def cap_folds(folds: list[list[Question]], max_questions: int | None, seed: int) -> list[list[Question]]:
    """At most ``max_questions`` per fold (a seeded sample, in the fold's order); None: all."""
    if not max_questions:
        return folds
    rng = random.Random(seed)
    return [[fold[j] for j in sorted(rng.sample(range(len(fold)), min(max_questions, len(fold))))] for fold in folds]


class PerFold:
    """A run assembled fold by fold, with the minutes each fold took (plus ``extra`` minutes per fold)."""

    def __init__(self):
        self.run: dict = {}
        self.minutes: list[float] = []
        self.notes: dict = {}

    def add(self, started: float, part: dict, extra: float = 0.0) -> None:
        self.run.update(part)
        self.minutes.append((time.perf_counter() - started) / 60 + extra)


def timed_runs(folds: list[list[Question]], search) -> PerFold:
    """``search(queries)`` fold by fold."""
    out = PerFold()
    for fold in folds:
        t = time.perf_counter()
        out.add(t, search({q.id: q.text for q in fold}))
    return out


def _sub(run: dict, qids) -> dict:
    return {q: run[q] for q in qids}


def fused_rows(folds, bm25: PerFold, zs: PerFold, rows) -> dict[str, PerFold]:
    """The rows fusing the zero-shot and BM25 runs, fold by fold (their minutes include both runs')."""
    from rirag.retrieval.fusion import hybrid_fusion, rrf, truncate

    fusions = {"hybrid": lambda i, ids: hybrid_fusion(_sub(zs.run, ids), _sub(bm25.run, ids), HYBRID_ALPHA),
               "rrf": lambda i, ids: rrf([_sub(zs.run, ids), _sub(bm25.run, ids)])}
    out = {}
    for key, fuse in fusions.items():
        if key in rows:
            out[key] = PerFold()
            for i, fold in enumerate(folds):
                t = time.perf_counter()
                out[key].add(t, truncate(fuse(i, [q.id for q in fold]), RUN_DEPTH), bm25.minutes[i] + zs.minutes[i])
    if "hybrid-tuned" in rows:
        out["hybrid-tuned"] = tuned_hybrid(folds, bm25, zs)
    return out


def choose_alpha(questions: list[Question], bm25: dict, zs: dict) -> float:
    """The α of ``ALPHA_GRID`` with the best R@10 (then MRR@10) on ``questions``."""
    from rirag.retrieval.fusion import hybrid_fusion, truncate

    qrels = qrels_of(questions)
    ids = [q.id for q in questions]

    def score(a):
        m = evaluate_run(qrels, truncate(hybrid_fusion(_sub(zs, ids), _sub(bm25, ids), a), EVAL_K))
        return (round(m[METRICS[0]], 6), round(m[METRICS[2]], 6))

    return max(ALPHA_GRID, key=score)


def tuned_hybrid(folds, bm25: PerFold, zs: PerFold) -> PerFold:
    from rirag.retrieval.fusion import hybrid_fusion, truncate

    out = PerFold()
    chosen = []
    for i, fold in enumerate(folds):
        t = time.perf_counter()
        alpha = choose_alpha([q for j, f in enumerate(folds) if j != i for q in f], bm25.run, zs.run)
        chosen.append(alpha)
        ids = [q.id for q in fold]
        out.add(t, truncate(hybrid_fusion(_sub(zs.run, ids), _sub(bm25.run, ids), alpha), RUN_DEPTH),
                bm25.minutes[i] + zs.minutes[i])
    out.notes = {"alpha per fold": chosen, "alpha": choose_alpha([q for f in folds for q in f], bm25.run, zs.run),
                 "note": f"α per fold: {', '.join(str(a) for a in chosen)}"}
    return out


def load_recipe(path: str):
    """The learned-fusion arguments of ``train/learned_fusion.py`` filled from its YAML recipe (unknown keys fail)."""
    import importlib.util

    import yaml

    spec = importlib.util.spec_from_file_location("train_learned_fusion", REPO / "train" / "learned_fusion.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    with open(path, encoding="utf-8") as f:
        return module.LearnedFusionArguments(**(yaml.safe_load(f) or {}))


def gather(features: dict, qids):
    """One FusionFeatures of the queries ``qids`` from per-query ``(candidates, X)``."""
    from rirag.retrieval.learned_fusion import FusionFeatures

    qids = list(qids)
    cands = [features[q][0] for q in qids]
    X = np.concatenate([features[q][1] for q in qids])
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in cands])]).astype(np.int64)
    return FusionFeatures(qids, cands, X, offsets)


def choose_rounds(features: dict, questions: list[Question], args, ids, seed: int) -> int:
    """Boosting rounds (every ROUND_STEP up to the recipe's) with the best R@10, then MRR@10, on a document-grouped
    inner split of ``questions`` (the training folds): trained on one part, scored on the other."""
    from rirag.retrieval.learned_fusion import rank, train_ranker

    parts, _, _ = document_folds(questions, 2, seed)
    inner_train, inner_val = parts
    if not inner_train or not inner_val:
        return args.num_boost_round
    train = gather(features, [q.id for q in inner_train])
    booster = train_ranker(train, train.labels({q.id: q.gold for q in inner_train}, ids), args.lightgbm_params(),
                           args.num_boost_round)
    val = gather(features, [q.id for q in inner_val])
    qrels = qrels_of(inner_val)
    grid = list(range(ROUND_STEP, args.num_boost_round + 1, ROUND_STEP)) or [args.num_boost_round]

    def score(rounds):
        m = evaluate_run(qrels, rank(val, booster.predict(val.X, num_iteration=rounds), ids, EVAL_K))
        return (round(m[METRICS[0]], 6), round(m[METRICS[2]], 6))

    return max(grid, key=score)


def learned_fusion(folds, corpus, dense, bm25_index, config: Config) -> PerFold:
    """Per fold: a LightGBM ranker trained on the other folds' questions (rounds chosen on an inner split of them)
    ranks the fold's questions; features are per question, so each question's are built once."""
    from rirag.retrieval.bm25 import document_index
    from rirag.retrieval.learned_fusion import FeatureBuilder, rank, train_ranker

    args = load_recipe(config.recipe)
    builder = FeatureBuilder(corpus, [config.model], candidate_depth=args.candidate_depth, vote_depth=args.vote_depth,
                             bm25=bm25_index, documents=document_index(corpus), dense=[dense])
    features, feature_minutes = {}, []
    for fold in folds:
        t = time.perf_counter()
        built = builder.build({q.id: q.text for q in fold}, show_progress=True)
        for j, q in enumerate(built.qids):
            features[q] = (built.candidates[j], built.X[built.offsets[j]:built.offsets[j + 1]])
        feature_minutes.append((time.perf_counter() - t) / 60)
    out = PerFold()
    rounds = []
    for i, fold in enumerate(folds):
        t = time.perf_counter()
        others = [q for j, f in enumerate(folds) if j != i for q in f]
        rounds.append(choose_rounds(features, others, args, builder.ids, config.seed + i))
        train = gather(features, [q.id for q in others])
        booster = train_ranker(train, train.labels({q.id: q.gold for q in others}, builder.ids),
                               args.lightgbm_params(), rounds[-1], builder.feature_names)
        held = gather(features, [q.id for q in fold])
        out.add(t, rank(held, booster.predict(held.X), builder.ids, RUN_DEPTH), feature_minutes[i])
        logger.info("learned fusion, fold %d: %d rounds, %.1f min", i, rounds[-1], out.minutes[-1])
    out.notes = {"boosting rounds per fold": rounds,
                 "note": f"boosting rounds per fold (inner split of the training folds): "
                         f"{', '.join(map(str, rounds))}; hyperparameters: {config.recipe}"}
    return out


def measure(config: Config, corpus, folds) -> dict[str, PerFold]:
    """Every asked row's run, fold by fold (BM25 always: it is the baseline)."""
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.registry import RetrieverSpec, build_retriever

    t = time.perf_counter()
    index = passage_index(corpus)
    out = {"bm25": timed_runs(folds, lambda qs: index.search(qs, k=RUN_DEPTH))}
    if "rank-fusion" in config.rows:
        fusion = build_retriever(corpus, RetrieverSpec("rank-fusion"))
        out["rank-fusion"] = timed_runs(folds, lambda qs: fusion.search(qs, k=RUN_DEPTH))
    if set(config.rows) & {"zero-shot", "hybrid", "rrf", "hybrid-tuned", "learned-fusion"}:
        from rirag.retrieval.dense import DenseRetriever

        dense = DenseRetriever(corpus, config.model, max_seq_length=DENSE_MAX_SEQ_LENGTH)
        dense.passage_embeddings(show_progress=True)
        dense.model  # noqa: B018 (loaded here, so the first fold's minutes do not count the model's loading)
        logger.info("set-up (indexes, passage embeddings): %.1f min", (time.perf_counter() - t) / 60)
        zs = timed_runs(folds, lambda qs: dense.search(qs, k=RUN_DEPTH))
        if "zero-shot" in config.rows:
            out["zero-shot"] = zs
        out.update(fused_rows(folds, out["bm25"], zs, config.rows))
        if "learned-fusion" in config.rows:
            out["learned-fusion"] = learned_fusion(folds, corpus, dense, index, config)
    return out


def result_rows(measured: dict[str, PerFold], folds, config: Config) -> list[dict]:
    """One row per measured run: pooled metrics with intervals, the test and the difference against BM25, per-fold
    values and minutes."""
    kept = [q for fold in folds for q in fold]
    qrels = qrels_of(kept)
    runs = {key: m.run for key, m in measured.items()}
    p_values = paired_tests(qrels, runs, "bm25") if len(runs) > 1 else {}
    per_query = {key: evaluate_run(qrels, run, per_query=True)["per_query"] for key, run in runs.items()}
    values = {key: {m: np.array([pq[q][m] for q in qrels], dtype=np.float64) for m in METRICS}
              for key, pq in per_query.items()}
    rows = []
    for key in [k for k in ROWS if k in measured]:
        v, base = values[key], values["bm25"]
        row = {"row": CV_ROWS[key], "questions": len(qrels), **{m: round(float(v[m].mean()), 4) for m in METRICS}}
        for j, m in enumerate(METRICS):
            row[f"{m} 95% CI"] = bootstrap_interval(v[m], config.bootstrap, config.seed + j)
        for m in METRICS:
            row[f"per fold {SHORT[m]}"] = [round(float(np.mean([per_query[key][q.id][m] for q in fold])), 4)
                                           for fold in folds]
        row["minutes per fold"] = [round(x, 3) for x in measured[key].minutes]
        row["minutes"] = round(sum(measured[key].minutes), 3)
        if key != "bm25":
            row["p vs bm25 (paired t)"] = p_values[key]
            for j, m in enumerate(METRICS):
                row[f"{m} − bm25"] = round(float(v[m].mean() - base[m].mean()), 4)
                row[f"{m} − bm25 95% CI"] = paired_difference_interval(v[m], base[m], config.bootstrap,
                                                                       config.seed + j)
        row.update(measured[key].notes)
        rows.append(row)
    return rows


def layout(config: Config, questions, folds, fold_of, discarded) -> dict:
    return {"folds": config.folds, "seed": config.seed, "bootstrap": config.bootstrap,
            "pooled_questions": len(questions), "kept_questions": sum(len(f) for f in folds),
            "discarded_multi_fold": discarded, "fold_questions": [len(f) for f in folds],
            "fold_documents": [sorted(d for d, f in fold_of.items() if f == i) for i in range(config.folds)],
            "model": config.model}


def check_layout(path: str, new: dict) -> None:
    """Rows merge only into a file of the same folds, seed and questions (else the pooled numbers would mix)."""
    if not Path(path).exists():
        return
    old = read_json(Path(path))
    keys = ("folds", "seed", "kept_questions", "fold_questions", "model")
    differ = [k for k in keys if isinstance(old, dict) and k in old and old[k] != new[k]]
    if differ:
        raise SystemExit(f"--out {path}: its {', '.join(differ)} differ from this run's; pass another --out")


def main(config: Config) -> dict:
    unknown = sorted(set(config.rows) - set(ROWS))
    if unknown:
        raise SystemExit(f"--rows: unknown row(s) {unknown}; known: {', '.join(ROWS)}")
    obliqa = load_obliqa(config.data)
    corpus, questions = subset(obliqa, pooled_questions(obliqa), config.max_documents, config.seed)
    folds, fold_of, discarded = document_folds(questions, config.folds, config.seed)
    folds = cap_folds(folds, config.max_questions, config.seed)
    info = layout(config, questions, folds, fold_of, discarded)
    check_layout(config.out, info)
    logger.info("%d pooled questions, %d kept in %d document folds (%s questions), %d discarded; %d passages",
                len(questions), info["kept_questions"], config.folds, "/".join(map(str, info["fold_questions"])),
                discarded, len(corpus))
    rows = result_rows(measure(config, corpus, folds), folds, config)
    from rirag.cli import format_table

    sys.stdout.write(format_table(rows, ["row", "questions", *METRICS, "minutes"]) + "\n")
    return merge_results_file(config.out, rows, ("row",), provenance(), new_file=info, not_here=NOT_HERE)


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    p.add_argument("--model", default=OFFLINE_ENCODER)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--recipe", default=Config.recipe, help="learned-fusion hyperparameters (train/learned_fusion.py)")
    p.add_argument("--max-documents", type=int, default=None, help="small check: a seeded sample of documents")
    p.add_argument("--max-questions", type=int, default=None, help="small check: at most this many per fold")
    p.add_argument("--out", default=Config.out)
    a = vars(p.parse_args(argv))
    a["rows"] = tuple(r for r in a["rows"].split(",") if r)
    return Config(**{f.name: a[f.name] for f in fields(Config)})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
