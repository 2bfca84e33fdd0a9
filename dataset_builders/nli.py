"""Build the NLI judge's DatasetDict (train / test, a test part held out per source) from ``../shared/data/nli``.

Usage:

    python dataset_builders/nli.py --data_dir ../shared/data/nli --output_dir artifacts/datasets/nli

Labels are normalised to entailment / neutral / contradiction; SNLI ``-`` rows are dropped; RTE (2-way) is kept
for evaluation only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rirag.constants import SEED


@dataclass
class NLIBuilderArguments:
    data_dir: str = field(default="../shared/data/nli", metadata={"help": "Folder holding the NLI sources (SOURCES.md)."})
    output_dir: str = field(default="artifacts/datasets/nli", metadata={"help": "Where to save the DatasetDict."})
    test_per_source: int = field(default=300, metadata={"help": "Held-out rows per source (at most 20% of it)."})
    max_train_per_source: int | None = field(default=None, metadata={"help": "Cap on training rows per source."})
    seed: int = field(default=SEED, metadata={"help": "Shuffle seed."})


def build(args: NLIBuilderArguments):
    from datasets import Dataset, DatasetDict

    from rirag.scoring.nli_data import build_splits

    splits = build_splits(args.data_dir, test_per_source=args.test_per_source,
                          max_train_per_source=args.max_train_per_source, seed=args.seed)
    return DatasetDict({name: Dataset.from_list(rows) for name, rows in splits.items()})


def main(args: NLIBuilderArguments) -> None:
    ds = build(args)
    ds.save_to_disk(args.output_dir)
    with open(f"{args.output_dir}/README.md", "w", encoding="utf-8") as f:
        f.write(
            "---\ntask_categories: [text-classification]\ntask_ids: [natural-language-inference]\n---\n\n"
            "# NLI pairs for the local RePASs judge\n\nBuilt by `python dataset_builders/nli.py` from the public NLI "
            "files listed in `data/nli/SOURCES.md` (licenses there; several are non-commercial).\n\n"
            + "\n".join(f"- {k}: {len(v)} rows" for k, v in ds.items()) + "\n"
        )
    logging.getLogger(__name__).info("saved %s", ds)


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO)
    (args,) = HfArgumentParser(NLIBuilderArguments).parse_args_into_dataclasses()
    main(args)
