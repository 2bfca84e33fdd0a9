"""The cross-reference graph of a corpus: rows, summary, card section, written as a ``datasets`` config."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Mapping

from rirag.io import atomic_dir
from rirag.text.xref import Resolver
from rirag.text.xref_numbers import Passage

# --------------------------------------------------------------------------------------------------
# The graph: every reference of a corpus, written beside it as a datasets config of its own
# --------------------------------------------------------------------------------------------------

#: Folder (beside the corpus) and datasets config name of the cross-reference graph.
GRAPH_CONFIG = "xref"
GRAPH_FILE = "references.jsonl"
SUMMARY_FILE = "summary.json"


def graph_rows(passages: Iterable[Passage], aliases: Mapping[str, str] | None = None) -> list[dict]:
    """One row per reference, in corpus order then text order (the same input gives the same rows)."""
    passages = list(passages)
    resolver = Resolver(passages, aliases)
    rows = []
    for p in passages:
        for ref in resolver.references(p):
            row = ref.as_dict()
            row["source_document"] = p.document_id
            row["source_number"] = p.number
            rows.append(row)
    return rows


def graph_summary(rows: list[dict], passages: int) -> dict:
    """Counts for the build report and the card."""
    by_kind: dict[str, int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)
    for r in rows:
        by_kind[r["kind"]] += 1
        if not r["resolved"]:
            reasons[r["reason"] or "unknown"] += 1
    resolved = sum(1 for r in rows if r["resolved"])
    return {
        "passages": passages,
        "passages_with_references": len({r["source_id"] for r in rows}),
        "references": len(rows),
        "resolved": resolved,
        "unresolved": dict(sorted(reasons.items())),
        "edges": sum(len(r["targets"]) for r in rows),
        "by_kind": dict(sorted(by_kind.items())),
    }


def card_section(summary: dict) -> str:
    """The dataset card's section on the ``xref`` config."""
    unresolved = ", ".join(f"{k} {v}" for k, v in summary["unresolved"].items()) or "none"
    kinds = ", ".join(f"{k} {v}" for k, v in summary["by_kind"].items())
    return (
        "## Cross-references (`xref` config)\n\n"
        f"`{GRAPH_CONFIG}/{GRAPH_FILE}`: one row per reference a passage makes to another rule, found in the "
        "passage text by `rirag.text.xref` and resolved to passage ids of this corpus. Fields: `source_id`, "
        "`source_document`, `source_number`, `start`/`end` (character offsets in the passage text), `surface`, "
        "`kind`, `target_document`, `target_number`, `targets` (passage ids), `resolved`, `reason` (why a "
        "reference is unresolved: `external` for another instrument, `not_in_corpus`, `ambiguous`).\n\n"
        "A rule resolves to its own passages (its paragraphs, not its guidance); a section, chapter, part or "
        "appendix to the passages in it; a relative paragraph (\"paragraph (2)\") to that paragraph of the citing "
        "rule; a range to the passages from its first to its last number.\n\n"
        f"{summary['references']} references in {summary['passages_with_references']} of {summary['passages']} "
        f"passages; {summary['resolved']} resolved ({summary['edges']} edges); unresolved: {unresolved}. "
        f"By kind: {kinds}.\n"
    )


def write_graph(rows: list[dict], summary: dict, out: str | os.PathLike) -> Path:
    """Write the graph folder atomically: ``references.jsonl``, ``summary.json`` and a ``README.md`` whose
    front matter declares the ``xref`` datasets config."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        with open(tmp / GRAPH_FILE, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        (tmp / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        front = (f"---\nconfigs:\n- config_name: {GRAPH_CONFIG}\n  data_files:\n  - split: train\n"
                 f"    path: {GRAPH_FILE}\n---\n\n")
        (tmp / "README.md").write_text(front + card_section(summary), encoding="utf-8")
    return out

