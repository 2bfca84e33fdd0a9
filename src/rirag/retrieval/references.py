"""The cross-reference graph of a corpus, and expansion of a retriever's run by it.

* :func:`xref_passages`: a corpus folder (ObliQA layout, ingested or not) as the resolver's passages and aliases;
* :class:`ReferenceGraph`: the resolved references of the corpus's passages, read from ``DIR/xref/references.jsonl``
  when ``rirag data xref`` wrote it, else resolved on the fly, passage by passage as asked. Following references in
  focused answers (:mod:`rirag.generation.follow`) and the expansion below both read it;
* :class:`XrefExpansion`: any retriever whose run is expanded by the graph, the retriever option ``xref_expand=N``
  (:func:`rirag.retrieval.registry.build_retriever`; off unless given): each of the top ``N`` passages of a
  question's run adds the targets of its references that resolve to at most ``xref_max_targets`` passages (a
  reference to a whole chapter adds nothing), scored ``xref_weight`` times the citing passage's score, kept if
  higher than the target's own score. A negative score is lowered by ``1 − xref_weight`` of its size instead, so a
  target never ranks above the passage citing it. Off by default: on the PRA (ukfin) and ObliQA-MP questions it
  brings no clear gain over BM25 (``benchmarks/xref_expansion.py``, docs/results.md).

This module sits in ``retrieval`` because the graph needs both the corpus reader (``rirag.data``) and the resolver
(``rirag.text``), which import no other rirag package.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from rirag.constants import RUN_DEPTH, XREF_MAX_TARGETS, XREF_WEIGHT
from rirag.data.runs import Run, ranked
from rirag.errors import DataError
from rirag.text import xref, xref_graph, xref_numbers

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Link:
    """One resolved reference of a passage: its surface, its character span in the passage and its targets."""

    surface: str
    start: int
    end: int
    targets: tuple[str, ...]


def xref_passages(root: str | Path) -> tuple[list[xref_numbers.Passage], dict[str, str]]:
    """The corpus at ``root`` (ObliQA layout, ingested or not; question files not needed) as resolver passages, and
    the aliases its document map gives (short codes, other titles). An ingested passage's chapter is read from its
    heading path ("4 Format and Frequency" -> 4)."""
    from rirag.data.obliqa import DOCUMENT_MAP_FILE, PASSAGE_FIELDS, _document_files, _load_titles, _records
    from rirag.io import read_json

    root = Path(root)
    titles = _load_titles(root)
    names = read_json(root / DOCUMENT_MAP_FILE) if (root / DOCUMENT_MAP_FILE).exists() else {}
    aliases = xref_numbers.aliases_from_names({str(k): (v if isinstance(v, list) else [v])[1:] or v
                                               for k, v in names.items()})
    passages = []
    for path in _document_files(root):
        for rec in _records(path, PASSAGE_FIELDS):
            chapter = None
            for heading in (rec.get("Headings") or [])[1:]:
                m = re.match(r"(?:Chapter\s+)?(\d+[A-Z]?)\b(?!\.\d)", str(heading))
                if m:
                    chapter = m.group(1)
                    break
            doc = int(rec["DocumentID"])
            passages.append(xref_numbers.Passage(rec["ID"], str(doc), titles.get(doc, f"Document {doc}"),
                                                 str(rec["PassageID"]), rec["Passage"], chapter=chapter))
    return passages, aliases


class ReferenceGraph:
    """The resolved references of a corpus's passages, by passage id, loaded on first use: from ``graph`` (a
    ``references.jsonl`` written by ``rirag data xref``; default ``ROOT/xref/references.jsonl`` when present), else
    resolved on the fly, passage by passage as asked, over the corpus at ``root`` (or the given resolver
    ``passages``)."""

    def __init__(self, root: str | Path | None = None, graph: str | Path | None = None,
                 passages: Sequence[xref_numbers.Passage] | None = None, aliases: Mapping[str, str] | None = None):
        self.root = Path(root) if root is not None else None
        if graph is None and self.root is not None:
            default = self.root / xref_graph.GRAPH_CONFIG / xref_graph.GRAPH_FILE
            graph = default if default.is_file() else None
        self.graph = Path(graph) if graph is not None else None
        if self.graph is None and self.root is None and passages is None:
            raise ValueError("a reference graph needs a corpus folder, a graph file or resolver passages")
        self._passages = list(passages) if passages is not None else None
        self._aliases = dict(aliases or {})
        self._links: dict[str, list[Link]] | None = None
        self._resolver: xref.Resolver | None = None
        self._by_id: dict[str, xref_numbers.Passage] | None = None
        self._cache: dict[str, list[Link]] = {}

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

    def _resolve(self, pid: str) -> list[Link]:
        if self._resolver is None:
            if self._passages is None:
                self._passages, self._aliases = xref_passages(self.root)
            self._resolver = xref.Resolver(self._passages, self._aliases)
            self._by_id = {p.id: p for p in self._passages}
        p = self._by_id.get(pid)
        if p is None:
            return []
        return [Link(r.surface, r.start, r.end, r.targets) for r in self._resolver.references(p) if r.resolved]

    def links(self, pid: str) -> list[Link]:
        """The resolved references of passage ``pid`` (none when it refers to nothing or is not in the corpus)."""
        if self.graph is not None:
            if self._links is None:
                self._links = self._load_graph()
            return self._links.get(pid, [])
        if pid not in self._cache:
            self._cache[pid] = self._resolve(pid)
        return self._cache[pid]


def corpus_graph(root: str | Path | None) -> ReferenceGraph:
    """The reference graph of the corpus folder ``root`` for :class:`XrefExpansion`: its ``xref/references.jsonl``
    when ``rirag data xref`` wrote it, else resolved on the fly from its passages. Without a folder, or in a folder
    with neither, a :class:`DataError` saying so."""
    if root is None:
        raise DataError("retriever option xref_expand: no corpus folder was given to read its cross-reference graph "
                        "from (DIR/xref/references.jsonl, written by `rirag data xref --data DIR`)")
    root = Path(root)
    graph = ReferenceGraph(root)
    if graph.graph is None and not (root / "documents").is_dir():
        raise DataError(f"retriever option xref_expand: {root} has no cross-reference graph "
                        f"({root / xref_graph.GRAPH_CONFIG / xref_graph.GRAPH_FILE}) and no documents/ to resolve "
                        f"one from: run `rirag data xref --data {root}`")
    logger.info("cross-reference expansion: references %s", graph.source if graph.graph is not None
                else f"resolved on the fly over {root} (`rirag data xref --data {root}` writes them once)")
    return graph


class _Retriever(Protocol):
    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run: ...


class XrefExpansion:
    """``base``'s run expanded by cross-references (see the module): each of a question's top ``top`` passages adds
    the targets of its references resolving to at most ``max_targets`` passages, scored ``weight`` times its score,
    kept if higher. ``corpus``, when given, bounds the targets (a graph of another corpus adds nothing unknown)."""

    def __init__(self, base: _Retriever, graph: ReferenceGraph, top: int, weight: float = XREF_WEIGHT,
                 max_targets: int = XREF_MAX_TARGETS, corpus: Mapping | None = None):
        if top < 1 or not 0.0 < weight <= 1.0 or max_targets < 1:
            raise ValueError(f"xref expansion: top {top} (≥ 1), weight {weight} (in (0, 1]), max_targets "
                             f"{max_targets} (≥ 1)")
        self.base, self.graph, self.corpus = base, graph, corpus
        self.top, self.weight, self.max_targets = top, weight, max_targets

    def target_score(self, score: float) -> float:
        """What a target of a passage scored ``score`` gets: ``weight · score`` (for a negative score, the score
        lowered by ``1 − weight`` of its size), never above ``score``."""
        return score - (1.0 - self.weight) * abs(score)

    def expand(self, run: Mapping[str, Mapping[str, float]]) -> Run:
        """``run`` with the targets added (every passage kept: the run is not cut)."""
        out: Run = {}
        for q, results in run.items():
            new = dict(results)
            for pid, score in ranked(results, self.top):
                given = self.target_score(score)
                for link in self.graph.links(pid):
                    if len(link.targets) > self.max_targets:
                        continue
                    for t in link.targets:
                        if t == pid or (self.corpus is not None and t not in self.corpus):
                            continue
                        if t not in new or new[t] < given:
                            new[t] = given
            out[q] = new
        return out

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        """The base retriever's top ``k``, expanded, cut back to the top ``k``."""
        run = self.base.search(queries, k=k, show_progress=show_progress)
        return {q: dict(ranked(results, k)) for q, results in self.expand(run).items()}
