"""Build the RAFT DatasetDict (prompt / completion instances from ObliQA's training questions) with its card.

Usage:

    python dataset_builders/raft.py --config recipes/raft/offline.yaml [--max_questions 400]
    python dataset_builders/raft.py --config recipes/raft/paper.yaml --teacher_base_url http://localhost:8000/v1

Reads the RAFT data keys of a recipe (``rirag.generation.raft.RaftDataArguments``; the trainer's keys in the same
YAML are ignored here), the command line overrides. Writes ``dataset_name``: the DatasetDict (``train``,
``held_out``), ``README.md`` (the card) and ``raft_report.json`` (P measured, skips, teacher drops).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import fields


def parse(argv: list[str]):
    import yaml
    from transformers import HfArgumentParser

    from rirag.generation.raft import RaftDataArguments

    parser = HfArgumentParser(RaftDataArguments)
    parser.add_argument("--config", default=None, help="A RAFT recipe (YAML); its other keys are ignored.")
    known, _ = parser.parse_known_args(argv)
    if known.config:
        with open(known.config, encoding="utf-8") as f:
            recipe = yaml.safe_load(f) or {}
        names = {f.name for f in fields(RaftDataArguments)}
        parser.set_defaults(**{k: v for k, v in recipe.items() if k in names})
    return parser.parse_args_into_dataclasses(argv)[0]  # [1] is the namespace holding --config


def main(argv: list[str]) -> dict:
    from rirag.generation.raft import build_raft_dataset
    from rirag.hub.dataset_build import save_raft_dataset

    args = parse(argv)
    dataset, report = build_raft_dataset(args)
    save_raft_dataset(dataset, report, args.dataset_name, "python dataset_builders/raft.py " + " ".join(argv))
    logging.getLogger(__name__).info("RAFT dataset saved to %s: %s", args.dataset_name, report)
    return report


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main(sys.argv[1:])
