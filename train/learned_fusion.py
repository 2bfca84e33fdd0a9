"""Train the learned-fusion ranker: LightGBM LambdaMART over BM25, dense encoders and document BM25.

Training questions: the protocol's training split (the same questions the encoders were tuned on; see the README for
why that is fine here). Candidates and features: :mod:`rirag.retrieval.learned_fusion`. Labels: gold passages 1, other
candidates 0. With ``eval_split``, the saved ranker is also evaluated there (Recall@10, MAP@10, MRR@10, nDCG@10) and
the numbers go into ``learned_fusion.json`` and the card. The folder (``ranker.txt``, ``learned_fusion.json``, a
card) loads with ``rirag retrieve --retriever learned-fusion --option ranker=FOLDER``.

Usage:

    python train/learned_fusion.py --config recipes/learned_fusion/offline.yaml
    python train/learned_fusion.py --config recipes/learned_fusion/offline.yaml --train_split original-dev \
        --eval_split "" --encoders artifacts/contrastive_tuning/minilm-ct-original-dev,... \
        --output_dir artifacts/learned_fusion/minilm-lf-original-dev

YAML keys are the field names below; the command line overrides; unknown keys fail.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import asdict, dataclass, field

from rirag.constants import (
    DENSE_MAX_SEQ_LENGTH,
    LEARNED_FUSION_CANDIDATE_DEPTH,
    LEARNED_FUSION_MEMORY_DEPTH,
    LEARNED_FUSION_RANKER,
    LEARNED_FUSION_VOTE_DEPTH,
    OFFLINE_ENCODER,
    SEED,
)
from rirag.io import portable_args

logger = logging.getLogger(__name__)


@dataclass
class LearnedFusionArguments:
    encoders: str = field(default=OFFLINE_ENCODER, metadata={
        "help": "Comma-separated dense encoders (Hub ids or folders) whose scores are features, in order."})
    output_dir: str = field(default=LEARNED_FUSION_RANKER, metadata={"help": "Ranker folder."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR)."})
    train_split: str = field(default="train", metadata={"help": "'train' (leakage-free) or 'original-dev' (original)."})
    eval_split: str = field(default="validation", metadata={"help": "Split to report after training ('' : none)."})
    split_seed: int = field(default=SEED, metadata={"help": "Seed of the leakage-free re-split."})
    candidate_depth: int = field(default=LEARNED_FUSION_CANDIDATE_DEPTH, metadata={
        "help": "Candidates: the union of each passage signal's top this many."})
    vote_depth: int = field(default=LEARNED_FUSION_VOTE_DEPTH, metadata={
        "help": "Document vote: share of a signal's top this many in the candidate's document."})
    question_memory: bool = field(default=False, metadata={
        "help": "Also use the training questions as a memory: the gold passages of a query's nearest training "
                "questions become candidates with their own features (helps only where splits share passages, "
                "i.e. the original protocol; a question is never its own neighbour)."})
    memory_depth: int = field(default=LEARNED_FUSION_MEMORY_DEPTH, metadata={
        "help": "With question_memory: neighbour questions per query."})
    max_seq_length: int = field(default=DENSE_MAX_SEQ_LENGTH, metadata={"help": "Passage tokens of the encoders."})
    num_boost_round: int = field(default=200, metadata={"help": "Boosting rounds."})
    learning_rate: float = field(default=0.05, metadata={"help": "LightGBM learning rate."})
    num_leaves: int = field(default=15, metadata={"help": "Leaves per tree."})
    min_data_in_leaf: int = field(default=50, metadata={"help": "Rows per leaf at least."})
    feature_fraction: float = field(default=0.8, metadata={"help": "Share of features per tree."})
    bagging_fraction: float = field(default=0.8, metadata={"help": "Share of rows per tree (bagging every tree)."})
    truncation_level: int = field(default=20, metadata={"help": "LambdaMART: pairs formed within this top."})
    seed: int = field(default=SEED, metadata={"help": "LightGBM seed."})
    num_threads: int = field(default=0, metadata={"help": "LightGBM threads (0: OpenMP default)."})
    push_to_hub: bool = field(default=False, metadata={"help": "Upload the folder to hub_model_id."})
    hub_model_id: str | None = field(default=None, metadata={"help": "Hub repository for push_to_hub."})

    def encoder_list(self) -> list[str]:
        return [e.strip() for e in self.encoders.split(",") if e.strip()]

    def lightgbm_params(self) -> dict:
        return {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "learning_rate": self.learning_rate,
                "num_leaves": self.num_leaves, "min_data_in_leaf": self.min_data_in_leaf,
                "feature_fraction": self.feature_fraction, "bagging_fraction": self.bagging_fraction,
                "bagging_freq": 1, "lambdarank_truncation_level": self.truncation_level, "seed": self.seed,
                "deterministic": True, "num_threads": self.num_threads, "verbose": -1}


def fusion_card(args: LearnedFusionArguments, summary: dict, metrics: dict, memory: bool):
    """The ranker's card data (``model_cards/learned_fusion.md.j2``, the template hub_push renders too): its encoders
    (hub_push names their Hub repos), training facts, non-default arguments and its ``eval_split`` numbers."""
    from rirag.hub.card_data import IGNORED_HYPERPARAMETERS, LearnedFusionCard, non_default_hyperparameters
    from rirag.retrieval.learned_fusion import CONFIG_FILE

    repo_id = args.hub_model_id or args.output_dir
    encoders = summary["encoders"]
    settings = {"train split": args.train_split, "training questions": summary["train_questions"],
                "candidate depth": args.candidate_depth, "candidate recall (training)": summary["candidate_recall"],
                "boosting rounds": args.num_boost_round, "learning rate": args.learning_rate,
                "leaves": args.num_leaves,
                "question memory": (f"the {args.memory_depth} nearest of the {summary['train_questions']} training "
                                    "questions (memory.json) by encoder cosine and by BM25, their gold passages' "
                                    "similarities and gold counts") if memory else "off",
                "top features by gain": ", ".join(n for n, _ in summary["top_features_by_gain"][:5]),
                "train seconds": summary["train_seconds"]}
    card = LearnedFusionCard(
        name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id, base_model=encoders[0] if encoders else None,
        description="LightGBM LambdaMART ranker fusing BM25, the dense encoders below and document-level BM25 over "
                    f"the union of each signal's top {args.candidate_depth}, trained on the `{args.train_split}` "
                    "questions.",
        command=summary["command"], train_data=f"ObliQA `{args.train_split}` questions (gold passages labelled 1)",
        settings=settings, feature_version=summary["feature_version"], memory=memory,
        eval_split=args.eval_split or args.train_split,
        encoders=[{"path": e, "repo": None, "hub_or_path": e} for e in encoders],
        hyperparameters=non_default_hyperparameters(args, ignore=IGNORED_HYPERPARAMETERS | {"encoders"}),
    )
    rows = [{"ranker": repo_id, "retriever": "learned-fusion", "split": args.eval_split, **metrics}] if metrics else []
    return card.with_results({"rows": rows}, repo_id, f"{args.output_dir}/{CONFIG_FILE}")


def main(args: LearnedFusionArguments) -> dict:
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import qrels_of, split_questions
    from rirag.hub.card_data import save_card
    from rirag.io import atomic_write_json
    from rirag.retrieval.learned_fusion import (
        CONFIG_FILE,
        FEATURE_VERSION,
        MEMORY_FILE,
        RANKER_FILE,
        FeatureBuilder,
        QuestionMemory,
        rank,
        train_ranker,
    )
    from rirag.retrieval.metrics import evaluate_run, metric_names
    from rirag.training.runner import require_artifacts, single_process_only

    single_process_only("learned fusion (LightGBM, no torch data parallelism)")  # copies would all write
    require_artifacts(*args.encoder_list())  # the trained encoders, before any data loads
    obliqa = load_obliqa(args.data)
    questions = [q for q in split_questions(obliqa, args.train_split, args.split_seed) if q.gold]
    memory = QuestionMemory.from_questions(questions) if args.question_memory else None
    builder = FeatureBuilder(obliqa.corpus, args.encoder_list(), candidate_depth=args.candidate_depth,
                             vote_depth=args.vote_depth, max_seq_length=args.max_seq_length, memory=memory,
                             memory_depth=args.memory_depth)
    start = time.time()
    features = builder.build({q.id: q.text for q in questions}, show_progress=True)
    labels = features.labels({q.id: q.gold for q in questions}, builder.ids)
    coverage = float(labels.sum()) / max(1, sum(len(q.gold) for q in questions))
    logger.info("%d training questions, %d candidates, candidate recall %.4f", len(questions), len(labels), coverage)
    booster = train_ranker(features, labels, args.lightgbm_params(), args.num_boost_round, builder.feature_names)
    seconds = time.time() - start

    metrics = {}
    if args.eval_split:
        held = [q for q in split_questions(obliqa, args.eval_split, args.split_seed) if q.gold]
        eval_features = builder.build({q.id: q.text for q in held}, show_progress=True)
        run = rank(eval_features, booster.predict(eval_features.X), builder.ids)
        m = evaluate_run(qrels_of(held), run)
        metrics = {n: round(m[n], 4) for n in metric_names()}
        logger.info("%s: %s", args.eval_split, metrics)

    os.makedirs(args.output_dir, exist_ok=True)
    booster.save_model(os.path.join(args.output_dir, RANKER_FILE))
    if memory is not None:
        memory.save(os.path.join(args.output_dir, MEMORY_FILE))
    importance = booster.feature_importance("gain")
    top = sorted(zip(builder.feature_names, importance), key=lambda kv: -kv[1])[:8]
    command = "python train/learned_fusion.py " + " ".join(portable_args(sys.argv[1:]))
    summary = {"encoders": builder.encoders, "candidate_depth": args.candidate_depth, "vote_depth": args.vote_depth,
               "memory_depth": args.memory_depth if memory is not None else 0,
               "feature_names": builder.feature_names, "feature_version": FEATURE_VERSION,
               "train_split": args.train_split,
               "train_questions": len(questions), "candidate_recall": round(coverage, 4),
               "lightgbm": args.lightgbm_params(), "num_boost_round": args.num_boost_round,
               "train_seconds": round(seconds, 1), "eval_split": args.eval_split, "metrics": metrics,
               "top_features_by_gain": [[n, round(float(g) / max(1e-9, float(importance.sum())), 4)] for n, g in top],
               "arguments": asdict(args), "command": command}
    atomic_write_json(os.path.join(args.output_dir, CONFIG_FILE), summary)
    save_card(fusion_card(args, summary, metrics, memory is not None), args.output_dir)
    if args.push_to_hub:
        from rirag.hub.push import push_trained

        if not args.hub_model_id:
            raise ValueError("push_to_hub needs hub_model_id")
        push_trained((args.output_dir, args.hub_model_id))  # the typed card; encoders named by their Hub ids
    return {"metrics": metrics, "train_seconds": seconds, "candidate_recall": coverage, "booster": booster}


if __name__ == "__main__":
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (arguments,) = TrlParser((LearnedFusionArguments,)).parse_args_and_config()
    sys.exit(run_trainer(main, arguments))
