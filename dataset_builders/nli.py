"""Build the NLI judge's DatasetDict (train / test, a test part held out per source) from ``../shared/data/nli``.

Usage:

    python dataset_builders/nli.py --data_dir ../shared/data/nli --output_dir artifacts/datasets/nli
    python dataset_builders/nli.py --train_caps lingnli=25000          # the judge recipe's training subset

Labels are normalised to entailment / neutral / contradiction; SNLI ``-`` rows and pairs with conflicting labels are
dropped; the test part of each source (``test_per_source`` rows, at most 20 %) is held out by premise, and no
training row shares a premise or a pair with any source's test part (``rirag.scoring.nli_data.build_splits``).
RTE (2-way) is kept for evaluation only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rirag.constants import SEED


@dataclass
class NLIBuilderArguments:
    data_dir: str = field(default="../shared/data/nli",
                          metadata={"help": "Folder holding the NLI sources (SOURCES.md)."})
    output_dir: str = field(default="artifacts/datasets/nli", metadata={"help": "Where to save the DatasetDict."})
    test_per_source: int = field(default=500, metadata={"help": "Held-out rows per source (at most 20% of it)."})
    max_train_per_source: int | None = field(default=None, metadata={"help": "Cap on training rows per source."})
    train_caps: str = field(default="", metadata={"help": "Per-source training caps, e.g. 'lingnli=25000'."})
    seed: int = field(default=SEED, metadata={"help": "Shuffle / hold-out seed."})


def build(args: NLIBuilderArguments):
    from datasets import Dataset, DatasetDict

    from rirag.scoring.nli_data import build_splits

    splits = build_splits(args.data_dir, test_per_source=args.test_per_source,
                          max_train_per_source=args.max_train_per_source, train_caps=args.train_caps, seed=args.seed)
    return DatasetDict({name: Dataset.from_list(rows) for name, rows in splits.items()})


def card(ds, args: NLIBuilderArguments) -> str:
    from collections import Counter

    counts = {name: Counter(split["source"]) for name, split in ds.items()}
    sources = sorted(set().union(*counts.values()))
    rows = "\n".join(f"| {s} | {counts['train'].get(s, 0)} | {counts['test'].get(s, 0)} |" for s in sources)
    return (
        "---\ntask_categories: [text-classification]\ntask_ids: [natural-language-inference]\n---\n\n"
        "# NLI pairs for the local RePASs judge\n\nBuilt by `python dataset_builders/nli.py` (seed "
        f"{args.seed}) from the public NLI files listed in `data/nli/SOURCES.md` (licenses there; several are "
        "non-commercial). Each source's test part is held out by premise (all hypotheses of a held-out premise are "
        "test); a training row whose premise or pair occurs in any source's test part is dropped (LingNLI takes its "
        "premises from MNLI). MNLI pools dev-matched and dev-mismatched. ContractNLI premises are the annotated "
        "evidence spans; NLI4Wills premises are the conditions followed by the law, hypotheses the will statement. "
        "RTE is 2-way and test only.\n\n| source | train | test |\n|---|---|---|\n" + rows + "\n"
    )


def main(args: NLIBuilderArguments) -> None:
    from rirag.io import atomic_dir

    ds = build(args)
    with atomic_dir(args.output_dir) as tmp:
        ds.save_to_disk(str(tmp))
        (tmp / "README.md").write_text(card(ds, args), encoding="utf-8")
    logging.getLogger(__name__).info("saved %s", ds)


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO)
    (args,) = HfArgumentParser(NLIBuilderArguments).parse_args_into_dataclasses()
    main(args)
