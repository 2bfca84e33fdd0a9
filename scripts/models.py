"""Train every offline artifact the README's best paths use, in dependency order (what `make models` runs).

Usage:
    python scripts/models.py                      # build what is missing or stale, skip what is current
    python scripts/models.py --dry-run            # the table of what would be built, nothing run
    python scripts/models.py --only nli-judge,raft   # these stages (and what they need)
    python scripts/models.py --rebuild et-train   # retrain a stage even when current (its dependents follow)
    python scripts/models.py --record benchmarks/results/models_build.json   # also write the table as JSON

Stages (rirag.models.STAGES): obligation classifier, NLI judge, ET / ET+CT / CT encoders and the
learned-fusion rankers of both protocols, the RAFT adapter. Each stage's output goes to artifacts/logs/models/
<stage>.log; a stamp in artifacts/.build/ records the recipe hash and command it was built with. Ends with a table
(artifact, status, minutes, command); exit 1 when a stage failed, 2 on a bad option.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from rirag.exit_codes import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE
from rirag.io import atomic_write_json, provenance
from rirag.models import STAGES
from rirag.training.plan import build, failed, format_table, table_record


@dataclass
class ModelsConfig:
    root: str = "."
    only: str = ""
    rebuild: str = ""
    dry_run: bool = False
    record: str = ""


def write_record(path: str, rows) -> None:
    """The table with the machine it was measured on (cores, torch's CPU capability, native bf16)."""
    from rirag.training.precision import cpu_capability, cpu_native_bf16

    atomic_write_json(path, {**provenance(), "cpu_capability": cpu_capability(), "cpu_native_bf16": cpu_native_bf16(),
                             "rows": table_record(rows)})


def main(config: ModelsConfig) -> int:
    try:
        rows = build(STAGES, Path(config.root), only=config.only.split(","), rebuild=config.rebuild.split(","),
                     dry_run=config.dry_run)
    except ValueError as err:
        logging.getLogger("models").error("%s", err)
        return EXIT_USAGE
    sys.stdout.write(format_table(rows) + "\n")
    if config.record:
        write_record(config.record, rows)
    return EXIT_SOME_FAILED if failed(rows) else EXIT_OK


def parse_args(argv: list[str] | None = None) -> ModelsConfig:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=".", help="repository root (the stage commands run there)")
    p.add_argument("--only", default="", help="comma-separated stage names (their inputs are built too)")
    p.add_argument("--rebuild", default="", help="comma-separated stage names to retrain even when current")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    p.add_argument("--record", default="", help="also write the table (and the machine's CPU facts) to this JSON")
    args = p.parse_args(argv)
    return ModelsConfig(**{f.name: getattr(args, f.name) for f in fields(ModelsConfig)})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main(parse_args()))
