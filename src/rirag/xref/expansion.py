"""Expansion of a retriever's run by the cross-reference graph of its corpus.

:class:`XrefExpansion` is any retriever whose run is expanded by the graph (:class:`rirag.xref.graph.ReferenceGraph`),
the retriever option ``xref_expand=N`` (:func:`rirag.retrieval.registry.build_retriever`; off unless given): each of
the top ``N`` passages of a question's run adds the targets of its references that resolve to at most
``xref_max_targets`` passages (a reference to a whole chapter adds nothing), scored ``xref_weight`` times the citing
passage's score, kept if higher than the target's own score. A negative score is lowered by ``1 − xref_weight`` of its
size instead, so a target never ranks above the passage citing it. Off by default: on the PRA (ukfin) and ObliQA-MP
questions it brings no clear gain over BM25 (``benchmarks/xref_expansion.py``, docs/results.md).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from rirag.constants import RUN_DEPTH, XREF_MAX_TARGETS, XREF_WEIGHT
from rirag.data.runs import Retriever, Run, ranked
from rirag.errors import DataError
from rirag.xref.graph import GRAPH_CONFIG, GRAPH_FILE, ReferenceGraph

logger = logging.getLogger(__name__)


def corpus_graph(root: str | Path | None, option: str = "xref_expand",
                 graph_file: str | Path | None = None) -> ReferenceGraph:
    """The reference graph of the corpus folder ``root`` for :class:`XrefExpansion`: its ``xref/references.jsonl``
    when ``rirag data xref`` wrote it, else resolved on the fly from its passages. Without a folder, or in a folder
    with neither, a :class:`DataError` saying so (naming the retriever ``option`` that needs it). ``graph_file``: a
    ``references.jsonl`` written elsewhere (``rirag data xref --out``), read in place of the folder's."""
    if root is None:
        raise DataError(f"retriever option {option}: no corpus folder was given to read its cross-reference graph "
                        "from (DIR/xref/references.jsonl, written by `rirag data xref --data DIR`)")
    root = Path(root)
    graph = ReferenceGraph(root, graph=graph_file)
    if graph.graph is None and not (root / "documents").is_dir():
        raise DataError(f"retriever option {option}: {root} has no cross-reference graph "
                        f"({root / GRAPH_CONFIG / GRAPH_FILE}) and no documents/ to resolve "
                        f"one from: run `rirag data xref --data {root}`")
    logger.info("cross-reference expansion: references %s", graph.source if graph.graph is not None
                else f"resolved on the fly over {root} (`rirag data xref --data {root}` writes them once)")
    return graph


class XrefExpansion:
    """``base``'s run expanded by cross-references (see the module): each of a question's top ``top`` passages adds
    the targets of its references resolving to at most ``max_targets`` passages, scored ``weight`` times its score,
    kept if higher. ``corpus``, when given, bounds the targets (a graph of another corpus adds nothing unknown)."""

    def __init__(self, base: Retriever, graph: ReferenceGraph, top: int, weight: float = XREF_WEIGHT,
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
