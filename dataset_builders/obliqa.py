"""Build ObliQA (published splits and the leakage-free document-level re-split) as BEIR/MTEB-shaped datasets.

Usage:
    python dataset_builders/obliqa.py [--data ../shared/data/obliqa] [--out artifacts/datasets/obliqa]
                                      [--scheme all] [--seed 42] [--audit-embedder offline|none|MODEL]
                                      [--push-to-hub ORG/NAME]

Same as `rirag data build`. Data comes from --data, else $RIRAG_DATA_DIR, else the Hub (RegNLP/ObliQA).
"""

from __future__ import annotations

import sys

from rirag.cli import main

if __name__ == "__main__":
    sys.exit(main(["data", "build", *sys.argv[1:]]))
