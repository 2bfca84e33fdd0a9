"""Assemble every artifact of rirag into its exact Hub upload folder, load each as its card says, and push it (or only
show what would be pushed).

Usage:
    python hub_push/push.py --manifest hub_push/manifest.yaml --dry-run            # what `make publish` runs
    python hub_push/push.py --manifest hub_push/manifest.yaml --only nli-judge     # assemble and push one entry
    python hub_push/push.py --manifest hub_push/manifest.yaml --namespace my-org --private --create-pr

The manifest maps each artifact (the folder a trainer or builder wrote) to a kind (dataset, model, adapter,
metric-space, app-space) and a repo under one namespace ($RIRAG_HUB_NAMESPACE or --namespace override it). Upload
folders are written to ``artifacts/hub/<repo>/`` (copies: editing them never edits the repository); each is then loaded
exactly as its card's usage snippet says, the repo id replaced by the folder (``load`` column; ``--no-load-check`` skips
it; ``--clean-env`` runs each card's steps as written, its Python snippet, shell block and the demo's local run, in a
clean environment of what the card installs, without rirag unless it installs it, and the metric Space in one of what
the Hub installs for it: :mod:`rirag.hub.clean_env`). A dry run stops there and prints the
table (repo, kind, files, bytes, card status, load); otherwise each folder whose card parses and that loads is
uploaded with huggingface_hub (token: $HF_TOKEN or ``hf auth login``, checked with the Hub before anything is
assembled). Re-running is idempotent. Missing artifacts are rows marked ``missing``, not errors. No token, no
network, a bad manifest: one line on stderr, exit 2.
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
    load_check: bool = True
    clean_env: bool = False  # each card's steps, both Spaces: in a clean environment (rirag.hub.clean_env)


def main(config: PushConfig) -> list:
    from rirag.cli import format_table
    from rirag.hub.assemble import assemble_all
    from rirag.hub.load import check_loads
    from rirag.hub.manifest import ManifestError, load_manifest
    from rirag.hub.push import check_hub_access, push_all

    manifest = load_manifest(config.manifest, config.namespace)
    only = [n.strip() for n in config.only.split(",") if n.strip()] or None
    names = {e.name for e in manifest.entries}
    if set(only or []) - names:  # before the Hub is asked anything
        raise ManifestError(f"--only: unknown entr(y/ies) {sorted(set(only) - names)}; known: "
                            f"{', '.join(sorted(names))}")
    if not config.dry_run:
        user = check_hub_access()  # no token, a refused token, no network: one line, before any work
        logging.getLogger("hub_push").info("pushing as %s", user)
    rows = assemble_all(manifest, Path(config.root), only)
    if config.load_check:
        rows = check_loads(manifest, rows, Path(config.root), clean=config.clean_env)
    if not config.dry_run:
        rows = push_all(manifest, rows, private=config.private, create_pr=config.create_pr)
    table = [r.as_dict() for r in rows]
    if not config.load_check:
        table = [{k: v for k, v in r.items() if k != "load"} for r in table]
    sys.stdout.write(format_table(table, list(table[0])) + "\n" if table else "no entries\n")
    for r in rows:
        if r.detail:
            sys.stdout.write(f"{r.name}: {r.detail}\n")
    mode = "dry run: nothing pushed" if config.dry_run else "pushed"
    counts = {s: sum(r.status == s for r in rows) for s in ("assembled", "pushed", "missing", "error")}
    loads = {s: sum(r.load.startswith(s) for r in rows) for s in ("ok", "failed", "skipped")}
    loaded = (", loads: " + ", ".join(f"{n} {s}" for s, n in loads.items() if n)) if any(loads.values()) else ""
    sys.stdout.write(f"{mode}; " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + loaded
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
    parser.add_argument("--load-check", action=argparse.BooleanOptionalAction, default=True,
                        help="load each upload folder as its card's usage snippet says (default: on)")
    parser.add_argument("--clean-env", action="store_true",
                        help="run each card's steps (Python snippet, shell block, the demo's local run) in a clean "
                             "environment of what the card installs (no rirag unless it installs it), the metric "
                             "Space in one of what the Hub installs for it (offline, symlinks to this interpreter's "
                             "packages)")
    args = parser.parse_args(argv)
    return PushConfig(manifest=args.manifest, only=args.only, dry_run=args.dry_run, namespace=args.namespace,
                      private=args.private, create_pr=args.create_pr, root=args.root, load_check=args.load_check,
                      clean_env=args.clean_env)


def run(argv=None) -> int:
    """The command line: 0 when everything assembled, loaded and (unless a dry run) pushed; 1 when an artifact is
    broken (an error row or a failed load); 2, with one line on stderr, when the manifest, the token or the Hub
    stops it."""
    from rirag.exit_codes import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE
    from rirag.hub.manifest import ManifestError
    from rirag.hub.push import HubAccessError

    try:
        rows = main(parse_args(argv))
    except (ManifestError, HubAccessError) as err:
        sys.stdout.flush()
        sys.stderr.write(f"error: {err}\n")
        return EXIT_USAGE
    broken = any(r.status == "error" or r.load.startswith("failed") for r in rows)
    return EXIT_SOME_FAILED if broken else EXIT_OK


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(run())
