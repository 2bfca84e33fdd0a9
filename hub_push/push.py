"""Assemble every artifact of rirag into its exact Hub upload folder and push it (or only show what would be pushed).

Usage:
    python hub_push/push.py --manifest hub_push/manifest.yaml --dry-run            # what `make publish` runs
    python hub_push/push.py --manifest hub_push/manifest.yaml --only nli-judge     # assemble and push one entry
    python hub_push/push.py --manifest hub_push/manifest.yaml --namespace my-org --private --create-pr

The manifest maps each artifact (the folder a trainer or builder wrote) to a kind (dataset, model, adapter, metric-space,
app-space) and a repo under one namespace ($RIRAG_HUB_NAMESPACE or --namespace override it). Upload folders are
written to ``artifacts/hub/<repo>/``; a dry run stops there and prints the table (repo, kind, files, bytes, card
status); otherwise each folder whose card parses is uploaded with huggingface_hub (token: $HF_TOKEN or
``hf auth login``). Re-running is idempotent. Missing artifacts are rows marked ``missing``, not errors.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PushConfig:
    manifest: str = "hub_push/manifest.yaml"
    only: str = ""  # comma-separated entry names
    dry_run: bool = False
    namespace: str | None = None
    private: bool | None = None
    create_pr: bool | None = None
    root: str = "."


def main(config: PushConfig) -> list:
    from rirag.cli import format_table
    from rirag.hub import assemble_all, load_manifest, push_all

    manifest = load_manifest(config.manifest, config.namespace)
    only = [n.strip() for n in config.only.split(",") if n.strip()] or None
    rows = assemble_all(manifest, Path(config.root), only)
    if not config.dry_run:
        rows = push_all(manifest, rows, private=config.private, create_pr=config.create_pr)
    table = [r.as_dict() for r in rows]
    sys.stdout.write(format_table(table, list(table[0])) + "\n" if table else "no entries\n")
    for r in rows:
        if r.detail:
            sys.stdout.write(f"{r.name}: {r.detail}\n")
    mode = "dry run: nothing pushed" if config.dry_run else "pushed"
    counts = {s: sum(r.status == s for r in rows) for s in ("assembled", "pushed", "missing", "error")}
    sys.stdout.write(f"{mode}; " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
                     + f"; upload folders under {Path(config.root) / manifest.out_dir}\n")
    return rows


def parse_args(argv=None) -> PushConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", default=PushConfig.manifest)
    parser.add_argument("--only", default="", help="comma-separated entry names")
    parser.add_argument("--dry-run", action="store_true", help="assemble and print the table; push nothing")
    parser.add_argument("--namespace", default=None, help="Hub user or organisation (overrides the manifest)")
    parser.add_argument("--private", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--create-pr", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--root", default=".", help="repository root the manifest's paths are relative to")
    args = parser.parse_args(argv)
    return PushConfig(manifest=args.manifest, only=args.only, dry_run=args.dry_run, namespace=args.namespace,
                      private=args.private, create_pr=args.create_pr, root=args.root)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    rows = main(parse_args())
    sys.exit(1 if any(r.status == "error" for r in rows) else 0)
