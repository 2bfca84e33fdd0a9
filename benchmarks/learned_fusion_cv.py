"""K-fold cross-validation of a learned-fusion configuration on the protocol's training questions.

Choosing ranker features or settings on the evaluation split would overfit it; this scores a configuration by
training the LightGBM ranker on k-1 folds of the training questions (original-dev by default) and ranking the held-out
fold, with the same candidates, features and LightGBM settings as ``train/learned_fusion.py`` (recipe defaults). With
``--question-memory true`` every training question is in the memory and is never its own neighbour, as in training.

Usage:
    python benchmarks/learned_fusion_cv.py --encoders A,B,C --question-memory true \
        --out benchmarks/results/learned_fusion_cv.original-dev.json

To compare with an earlier version of the features, run the same command with that version's ``src`` first on
``PYTHONPATH``. The result (appended to ``--out`` with the command, the rirag version's path and the core count)
holds the pooled out-of-fold Recall@10, MAP@10, MRR@10, nDCG@10 and the candidate recall. Never part of the tests.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rirag.constants import EVAL_K, LEARNED_FUSION_MEMORY_DEPTH, SEED
from rirag.io import portable_path, provenance

logger = logging.getLogger("benchmarks.learned_fusion_cv")


@dataclass
class Config:
    encoders: str
    split: str = "original-dev"
    data: str | None = None
    question_memory: bool = False
    memory_depth: int = LEARNED_FUSION_MEMORY_DEPTH
    folds: int = 5
    seed: int = SEED
    out: str = "benchmarks/results/learned_fusion_cv.original-dev.json"


def main(config: Config) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
    import rirag.retrieval.learned_fusion as lf
    from learned_fusion import LearnedFusionArguments
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import qrels_of, split_questions
    from rirag.io import atomic_write_json, read_json
    from rirag.retrieval.metrics import evaluate_run, metric_names

    recipe = LearnedFusionArguments(encoders=config.encoders)
    obliqa = load_obliqa(config.data)
    questions = [q for q in split_questions(obliqa, config.split, config.seed) if q.gold]
    memory = lf.QuestionMemory.from_questions(questions) if config.question_memory else None
    builder = lf.FeatureBuilder(obliqa.corpus, recipe.encoder_list(), memory=memory, memory_depth=config.memory_depth)
    features = builder.build({q.id: q.text for q in questions}, show_progress=True)
    labels = features.labels({q.id: q.gold for q in questions}, builder.ids)

    def subset(idx):
        rows = np.concatenate([np.arange(features.offsets[i], features.offsets[i + 1]) for i in idx])
        sizes = [features.offsets[i + 1] - features.offsets[i] for i in idx]
        sub = lf.FusionFeatures([features.qids[i] for i in idx], [features.candidates[i] for i in idx],
                                features.X[rows], np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
        return sub, labels[rows]

    folds = np.array_split(np.random.default_rng(config.seed).permutation(len(questions)), config.folds)
    run = {}
    for k in range(config.folds):
        train = np.sort(np.concatenate([folds[j] for j in range(config.folds) if j != k]))
        held, _ = subset(np.sort(folds[k]))
        booster = lf.train_ranker(*subset(train), recipe.lightgbm_params(), recipe.num_boost_round)
        run.update(lf.rank(held, booster.predict(held.X), builder.ids))
        logger.info("fold %d of %d done", k + 1, config.folds)
    m = evaluate_run(qrels_of(questions), run)
    record = {**provenance(), "rirag": portable_path(Path(lf.__file__).resolve().parents[2]),
              "split": config.split, "questions": len(questions), "folds": config.folds,
              "encoders": builder.encoders, "question_memory": config.question_memory,
              "memory_depth": config.memory_depth if memory is not None else 0,
              "features": len(builder.feature_names),
              "candidate_recall": round(float(labels.sum()) / sum(len(q.gold) for q in questions), 4),
              **{n: round(m[n], 4) for n in metric_names(EVAL_K)}}
    logger.info("%s", record)
    results = read_json(Path(config.out)) if Path(config.out).exists() else []
    atomic_write_json(config.out, results + [record])
    return record


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--encoders", required=True, help="comma-separated encoders, as train/learned_fusion.py")
    p.add_argument("--split", default=Config.split)
    p.add_argument("--data", default=None)
    p.add_argument("--question-memory", default="false", choices=["true", "false"])
    # the spelling the committed results/learned_fusion_cv.*.json (and docs/results.md) quote: still accepted, unlisted
    p.add_argument("--question_memory", dest="question_memory", choices=["true", "false"], default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)
    p.add_argument("--memory-depth", type=int, default=Config.memory_depth)
    p.add_argument("--folds", type=int, default=Config.folds)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", default=Config.out)
    a = p.parse_args(argv)
    return Config(a.encoders, a.split, a.data, a.question_memory == "true", a.memory_depth, a.folds, a.seed, a.out)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(parse_args())
