"""Convert Open Australian LegalQA into the rirag retrieval shape (corpus / queries / qrels), split by citation.

Usage:
    python dataset_builders/australian_legalqa.py [--data qa.jsonl|FOLDER|HUB_ID] [--out DIR] [--seed 42]
                                                  [--audit-embedder offline|none|MODEL] [--push-to-hub ORG/NAME]

Without --data the records come from the Hub dataset isaacus/open-australian-legal-qa (qa.jsonl).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import fields

from rirag.cli import format_table
from rirag.hub.dataset_build import AustralianBuildConfig, build_australian


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(AustralianBuildConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", default=f.default,
                            type=type(f.default) if f.default is not None else str)
    config = AustralianBuildConfig(**vars(parser.parse_args(argv)))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    summary = build_australian(config)
    sys.stdout.write(format_table(summary["statistics"], list(summary["statistics"][0])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
