"""Build the in-domain NLI probe from ObliQA passages: a DatasetDict (train: triples from leakage-free train
documents; test: the probe, from validation + test documents) with a dataset card.

Usage:

    python dataset_builders/nli_probe.py --output_dir artifacts/datasets/nli_probe
    python dataset_builders/nli_probe.py --obliqa_dir ../shared/data/obliqa --probe_per_type 300 --train_per_type 600

The triple types and rules are in ``rirag.scoring.nli_probe``; ObliQA comes from ``--obliqa_dir``, else
``$RIRAG_DATA_DIR``, else the Hub.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rirag.constants import SEED

logger = logging.getLogger(__name__)


@dataclass
class NLIProbeArguments:
    obliqa_dir: str | None = field(default=None, metadata={"help": "ObliQA data folder (default: RIRAG_DATA_DIR)."})
    output_dir: str = field(default="artifacts/datasets/nli_probe", metadata={"help": "Where to save the DatasetDict."})
    probe_per_type: int = field(default=300, metadata={"help": "Probe (test) triples per type."})
    train_per_type: int = field(default=600, metadata={"help": "In-domain training triples per type."})
    seed: int = field(default=SEED, metadata={"help": "Split and sampling seed."})
    push_to_hub: str | None = field(default=None, metadata={"help": "Hub dataset id to push to (optional)."})


def build(args: NLIProbeArguments):
    """(DatasetDict, card text)."""
    from collections import Counter

    from datasets import Dataset, DatasetDict

    import rirag
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import leakage_free_split
    from rirag.hub.cards import render_card
    from rirag.scoring import nli_probe
    from rirag.text.sentences import punkt_split

    obliqa = load_obliqa(args.obliqa_dir)
    split = leakage_free_split(obliqa, args.seed)
    triples = nli_probe.build_probe_splits(obliqa.corpus.values(), split.documents, punkt_split,
                                           probe_per_type=args.probe_per_type, train_per_type=args.train_per_type,
                                           seed=args.seed)
    ds = DatasetDict({name: Dataset.from_list(rows) for name, rows in triples.items()})
    documents = {"train": len(split.documents["train"]),
                 "test": len(split.documents["validation"]) + len(split.documents["test"])}
    statistics = [{"split": name, "documents": documents[name], "triples": len(rows),
                   "per_type": ", ".join(f"{t} {n}" for t, n in sorted(Counter(r["type"] for r in rows).items()))}
                  for name, rows in triples.items()]
    card = render_card("nli_probe_dataset.md.j2", source=obliqa.root if args.obliqa_dir else "RegNLP/ObliQA",
                       version=rirag.__version__, seed=args.seed, statistics=statistics,
                       n_synonyms=len(nli_probe.SYNONYMS), min_words=nli_probe.MIN_WORDS, max_words=nli_probe.MAX_WORDS)
    return ds, card


def main(args: NLIProbeArguments) -> None:
    from rirag.io import atomic_dir

    ds, card = build(args)
    with atomic_dir(args.output_dir) as tmp:
        ds.save_to_disk(str(tmp))
        (tmp / "README.md").write_text(card, encoding="utf-8")
    logger.info("saved %s to %s", ds, args.output_dir)
    if args.push_to_hub:
        ds.push_to_hub(args.push_to_hub)


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO)
    (args,) = HfArgumentParser(NLIProbeArguments).parse_args_into_dataclasses()
    main(args)
