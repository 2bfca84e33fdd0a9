"""A model repo's evaluation results in the Hub's ``.eval_results/*.yaml`` format, beside its ``model-index``.

The Hub reads evaluation results from ``.eval_results/*.yaml`` files in a model repo (dataset id, task, value,
source; ``huggingface_hub.EvalResultEntry``) as well as from the card's ``model-index``. Both come from the same
numbers: :func:`write_eval_results` reads the ``model-index`` of the card as assembled (so only numbers measured on
the weights published, see :mod:`rirag.hub.entry_cards`) and writes one file per dataset, split, task and metric, each
entry saying which metric and task it is in ``notes``. A card without a ``model-index`` gets no file.
"""

from __future__ import annotations

import re
from pathlib import Path

from rirag.io import atomic_write_text

#: The folder of a model repo the Hub reads evaluation results from.
EVAL_RESULTS_DIR = ".eval_results"


def _slug(*parts: str | None) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9.-]+", "-", str(p)).strip("-") for p in parts if p)


def eval_result_files(card_text: str, repo_id: str) -> dict[str, str]:
    """``{path in the repo: YAML}`` for each number of the card's ``model-index`` (empty without one)."""
    import yaml
    from huggingface_hub import EvalResultEntry, ModelCard, eval_result_entries_to_yaml

    results = ModelCard(card_text, ignore_metadata_errors=True).data.eval_results or []
    files = {}
    for r in results:
        dataset = r.dataset_type.split("/")[-1]
        task_id = _slug(r.dataset_config, r.dataset_split) or "default"
        entry = EvalResultEntry(
            dataset_id=r.dataset_type, task_id=task_id, value=r.metric_value,
            notes=f"{r.metric_name or r.metric_type} ({r.task_name or r.task_type}, {r.dataset_split} split)",
            source_url=f"https://huggingface.co/{repo_id}", source_name="model card (measured on these weights)")
        # a model-index may hold the same metric on the same data for several tasks (the encoder alone, in a
        # hybrid): the task names the file too
        name = f"{EVAL_RESULTS_DIR}/{_slug(dataset, r.dataset_config, r.dataset_split, r.task_name, r.metric_type)}"
        if name + ".yaml" in files:
            raise ValueError(f"{repo_id}: two model-index numbers would be written to {name}.yaml")
        files[name + ".yaml"] = yaml.safe_dump(eval_result_entries_to_yaml([entry]), sort_keys=False)
    return files


def write_eval_results(folder: str | Path, card_text: str, repo_id: str) -> list[str]:
    """Write :func:`eval_result_files` into an upload folder; returns the paths written."""
    files = eval_result_files(card_text, repo_id)
    for name, text in files.items():
        atomic_write_text(Path(folder) / name, text)
    return sorted(files)
