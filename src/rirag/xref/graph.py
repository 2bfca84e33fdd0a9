"""The cross-reference graph of a corpus: its rows, summary and card section, written as a ``datasets`` config
(:func:`write_graph`, what ``rirag data xref`` writes), and read back by passage (:class:`ReferenceGraph`: from the
written ``references.jsonl``, else resolved on the fly). Following references in focused answers
(:mod:`rirag.generation.focused.follow`) and the expansion of a retriever's run (:mod:`rirag.xref.expansion`) both
read it."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from rirag.errors import DataError
from rirag.io import atomic_dir
from rirag.xref.names_cache import load_names, names_path, save_names
from rirag.xref.passages import document_names, xref_documents, xref_passages
from rirag.xref.records import Passage
from rirag.xref.resolver import Resolver

logger = logging.getLogger(__name__)

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


def card_section(summary: dict, config: str = GRAPH_CONFIG) -> str:
    """The dataset card's section on the graph's datasets config, ``config`` (the Hub card's ``xref``; a written
    graph folder's own, :func:`local_config_name`)."""
    unresolved = ", ".join(f"{k} {v}" for k, v in summary["unresolved"].items()) or "none"
    kinds = ", ".join(f"{k} {v}" for k, v in summary["by_kind"].items())
    return (
        f"## Cross-references (`{config}` config)\n\n"
        f"`{GRAPH_CONFIG}/{GRAPH_FILE}`: one row per reference a passage makes to another rule, found in the "
        "passage text by `rirag.xref` and resolved to passage ids of this corpus. Fields: `source_id`, "
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


def local_config_name(graph_bytes: bytes) -> str:
    """The datasets config of a written graph folder: ``xref-`` and the first 12 hex digits of its
    ``references.jsonl``'s SHA-256. ``datasets`` caches a local folder by its name (always ``xref``) and config, not
    by its path, so graphs of two corpora under one config name would share a cache entry and
    ``load_dataset("other/xref")`` would return the first one's rows; a content-named config never does."""
    return f"{GRAPH_CONFIG}-{hashlib.sha256(graph_bytes).hexdigest()[:12]}"


def write_graph(rows: list[dict], summary: dict, out: str | os.PathLike) -> Path:
    """Write the graph folder atomically: ``references.jsonl``, ``summary.json`` and a ``README.md`` whose
    front matter declares its datasets config (:func:`local_config_name`), so ``load_dataset(out)`` loads it."""
    out = Path(out)
    data = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows).encode("utf-8")
    with atomic_dir(out) as tmp:
        (tmp / GRAPH_FILE).write_bytes(data)
        (tmp / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        config = local_config_name(data)
        front = (f"---\nconfigs:\n- config_name: {config}\n  data_files:\n  - split: train\n"
                 f"    path: {GRAPH_FILE}\n---\n\n")
        (tmp / "README.md").write_text(front + card_section(summary, config), encoding="utf-8")
    return out


# --------------------------------------------------------------------------------------------------
# Reading it back: the resolved references of a passage
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """One resolved reference of a passage: its surface, its character span in the passage and its targets."""

    surface: str
    start: int
    end: int
    targets: tuple[str, ...]


class ReferenceGraph:
    """The resolved references of a corpus's passages, by passage id, loaded on first use: from ``graph`` (a
    ``references.jsonl`` written by ``rirag data xref``; default ``ROOT/xref/references.jsonl`` when present), else
    resolved on the fly, passage by passage as asked, over the corpus at ``root`` (or the given resolver
    ``passages``).

    Resolved on the fly with ``corpus`` (the corpus's passages by id, each with its ``document_id``, as
    :func:`rirag.data.obliqa.load_obliqa` gives them) over a folder whose files are named by document id, only the
    documents that the asked passages and their references lead to are read: the links of ten passages of a
    million-passage corpus take a fraction of a second instead of a minute. Without it the whole corpus is read at
    the first passage."""

    def __init__(self, root: str | Path | None = None, graph: str | Path | None = None,
                 passages: Sequence[Passage] | None = None, aliases: Mapping[str, str] | None = None,
                 corpus: Mapping | None = None):
        self.root = Path(root) if root is not None else None
        if graph is None and self.root is not None:
            default = self.root / GRAPH_CONFIG / GRAPH_FILE
            graph = default if default.is_file() else None
        self.graph = Path(graph) if graph is not None else None
        if self.graph is None and self.root is None and passages is None:
            raise ValueError("a reference graph needs a corpus folder, a graph file or resolver passages")
        self._passages = list(passages) if passages is not None else None
        self._aliases = dict(aliases or {})
        self._corpus = corpus
        self._links: dict[str, list[Link]] | None = None
        self._resolver: Resolver | None = None
        self._by_id: dict[str, Passage] = {}
        self._by_document = False
        self._cache: dict[str, list[Link]] = {}
        self._reverse: dict[str, list[tuple[str, Link]]] | None = None

    @property
    def source(self) -> str:
        """Where the references come from (for a log line or a card)."""
        return str(self.graph) if self.graph is not None else "resolved on the fly"

    def _load_graph(self) -> dict[str, list[Link]]:
        links: dict[str, list[Link]] = {}
        with open(self.graph, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                try:
                    row = json.loads(line)
                    if row.get("resolved") and row.get("targets"):
                        links.setdefault(row["source_id"], []).append(
                            Link(row["surface"], int(row["start"]), int(row["end"]), tuple(row["targets"])))
                except (ValueError, TypeError, KeyError, AttributeError) as err:
                    raise DataError(f"{self.graph}: line {lineno} is not a reference row ({type(err).__name__}: "
                                    f"{err}); write the graph again with `rirag data xref`") from None
        logger.info("cross-references of %d passages read from %s", len(links), self.graph)
        return links

    def _build_resolver(self, whole: bool = False) -> None:
        documents, kept, path = None, None, None
        if not whole and self._passages is None and self._corpus is not None:
            path = names_path(self.root, self._corpus)
            kept = load_names(path)
            names = kept[0] if kept else document_names(self.root)
            documents = xref_documents(self.root, names)
        if documents is not None:
            titles, self._aliases, read_document = documents

            def read(doc_id: str) -> list[Passage]:
                passages = read_document(doc_id)
                self._by_id.update((p.id, p) for p in passages)
                return passages

            self._resolver = Resolver((), self._aliases, titles=titles, read=read, tables=kept[1] if kept else None)
            self._by_document = True
            if kept is None:
                save_names(path, *names, self._resolver.name_tables())
            return
        if self._passages is None:
            self._passages, self._aliases = xref_passages(self.root)
        self._resolver = Resolver(self._passages, self._aliases)
        self._by_id = {p.id: p for p in self._passages}
        self._by_document = False

    def _resolve(self, pid: str) -> list[Link]:
        if self._resolver is None:
            self._build_resolver()
        assert self._resolver is not None
        try:
            if self._by_document:
                record = self._corpus.get(pid) if self._corpus is not None else None
                doc = getattr(record, "document_id", None)
                if doc is None or str(doc) not in self._resolver.docs:
                    return []
                self._resolver.docs[str(doc)]  # reads the passage's document
            p = self._by_id.get(pid)
            if p is None:
                return []
            refs = self._resolver.references(p)
        except ValueError as err:  # a document file that holds another document's passages
            logger.warning("%s: %s; reading the whole corpus to resolve references", self.root, err)
            self._by_id, self._cache = {}, {}
            self._build_resolver(whole=True)
            return self._resolve(pid)
        return [Link(r.surface, r.start, r.end, r.targets) for r in refs if r.resolved]

    def referrers(self, pid: str) -> list[tuple[str, Link]]:
        """The passages that refer to ``pid``, each ``(source id, its link)``: from the written graph file (all of
        them); resolved on the fly, only those among the passages resolved so far (a graph file is what makes the
        reverse direction complete)."""
        if self._reverse is None or self.graph is None:
            reverse: dict[str, list[tuple[str, Link]]] = {}
            if self.graph is not None and self._links is None:
                self._links = self._load_graph()
            for source, links in (self._links if self.graph is not None else self._cache).items():
                for link in links:
                    for target in link.targets:
                        reverse.setdefault(target, []).append((source, link))
            if self.graph is None:
                return reverse.get(pid, [])
            self._reverse = reverse
        return self._reverse.get(pid, [])

    def links(self, pid: str) -> list[Link]:
        """The resolved references of passage ``pid`` (none when it refers to nothing or is not in the corpus)."""
        if self.graph is not None:
            if self._links is None:
                self._links = self._load_graph()
            return self._links.get(pid, [])
        if pid not in self._cache:
            self._cache[pid] = self._resolve(pid)
        return self._cache[pid]
