"""The rulebook as tools: search, a passage with its references, following references, a cited answer; and the
corpus's card and ingest report. Plain Python over one :class:`~rirag.generation.session.AnsweringSession` (the
session ``rirag ask`` answers with), so that the MCP server (:mod:`rirag.serve.server`) only declares them.

Every argument is checked here and a bad one is one :class:`~rirag.errors.DataError` line (the server answers it
as a tool error): an unknown or path-like id, ``k`` outside 1 to :data:`~rirag.constants.SERVE_MAX_K` (and the
corpus size), a query past :data:`~rirag.generation.pipeline.MAX_QUESTION_CHARS`, an unknown document.

A retriever that must embed the corpus first (dense, hybrid) is prepared in a background thread at start
(:meth:`RulebookTools.prepare`, its progress in the log); until it is ready, ``search`` and ``answer`` use BM25 and
say so in their ``retriever`` field.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from dataclasses import replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Mapping

from rirag.constants import (
    SERVE_MAX_DEPTH,
    SERVE_MAX_FOLLOWED,
    SERVE_MAX_ID_CHARS,
    SERVE_MAX_K,
)
from rirag.data.obliqa import PASSAGE_FIELDS, records_in
from rirag.errors import DataError
from rirag.generation.pipeline import MAX_QUESTION_CHARS
from rirag.generation.session import AnsweringSession
from rirag.onnx_inference import cpu_cores, share_cores
from rirag.retrieval.registry import build_retriever, retriever_spec

logger = logging.getLogger(__name__)

#: Characters of a passage's text in a search result (``get_passage`` gives it whole).
SNIPPET_CHARS = 300
#: Document files whose rule labels and headings are kept in memory (``get_passage``, ``search``).
_DOCUMENTS_KEPT = 256
INGEST_REPORT_FILE = "ingest_report.json"
CARD_FILE = "README.md"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def check_text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{what} must be a non-empty string")
    if len(value) > MAX_QUESTION_CHARS:
        raise DataError(f"{what} is {len(value):,} characters; at most {MAX_QUESTION_CHARS:,}")
    return value


def check_int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(f"{what} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise DataError(f"{what} must be between {low} and {high}, got {value}")
    return value


class RulebookTools:
    """The tools over one opened session (its corpus, retriever and generator); thread-safe for concurrent calls.
    ``bm25_until_ready``: a retriever other than BM25 answers only once :meth:`prepare` has built its index, BM25
    before (else it is built at the first call that needs it). ``calls_at_once``: the searches and answers that
    compute at a time (default: one per core, :func:`~rirag.onnx_inference.cpu_cores`), the others waiting their turn;
    the process's model calls then share the cores (:func:`~rirag.onnx_inference.share_cores`: one thread each on
    two cores, not spinning)."""

    def __init__(self, session: AnsweringSession, bm25_until_ready: bool = True, calls_at_once: int | None = None):
        # calls that compute (a search, an answer) run this many at a time, the others wait their turn: more threads
        # than cores only thrash (the encoders' own threads, the interpreter's lock); each model call gets its share of
        # the cores, set before the session opens (a model loads with it)
        self.calls_at_once = calls_at_once or cpu_cores()
        self._compute = threading.BoundedSemaphore(self.calls_at_once)
        share_cores(self.calls_at_once)
        self.session = session.open()
        self.corpus: Mapping = session.corpus
        self.root: Path | None = Path(session.root) if session.root is not None else None
        self._graph = None
        self._received: dict[str, list[str]] | None = None
        self._lock = threading.Lock()
        self._sessions: dict[tuple[int, int], AnsweringSession] = {}
        spec = session.options.retriever
        self._ready = threading.Event()
        self._fallback = None
        if bm25_until_ready and spec is not None and spec.name != "bm25":
            self._fallback = build_retriever(self.corpus, retriever_spec("bm25", None, []), root=self.root)
        else:
            self._ready.set()
        self._document = lru_cache(maxsize=_DOCUMENTS_KEPT)(self._read_document)

    # -- start ---------------------------------------------------------------------------------------------------
    def prepare(self, background: bool = True) -> threading.Thread | None:
        """Build the retriever's index now (a dense one embeds the corpus, its bar in the log); in a thread when
        ``background``, BM25 answering meanwhile. The answerer's models load now, in this thread (concurrent calls
        then share them: each call's state is its own)."""
        warm = getattr(self.session.generator, "warm", None)
        if callable(warm):
            warm()
        if self._ready.is_set():
            _ = self.session.retriever
            return None

        def run():
            name = self.session.options.retriever.name
            logger.info("preparing the %s index; BM25 answers until it is ready", name)
            try:
                self.session.retriever.search({"warm-up": "warm up"}, k=1)
            except Exception as err:  # noqa: BLE001 - the server keeps answering with BM25, saying why
                logger.error("the %s index could not be prepared (%s); answering with BM25", name, _one_line(err))
                return
            self._ready.set()
            logger.info("the %s index is ready", name)

        if not background:
            run()
            return None
        thread = threading.Thread(target=run, name="rirag-prepare-index", daemon=True)
        thread.start()
        return thread

    def _retriever(self) -> tuple[Any, str]:
        spec = self.session.options.retriever
        if self._ready.is_set():
            return self.session.retriever, spec.name
        return self._fallback, f"bm25 (the {spec.name} index is being prepared)"

    # -- passages ------------------------------------------------------------------------------------------------
    def _read_document(self, document_id: int) -> dict[str, dict]:
        path = self.root / "documents" / f"{int(document_id)}.json" if self.root is not None else None
        if path is None or not path.is_file():
            return {}
        return {str(r["ID"]): r for r in records_in(path, PASSAGE_FIELDS)}

    def _check_id(self, pid: Any) -> str:
        if not isinstance(pid, str) or not pid.strip():
            raise DataError("id must be a non-empty passage id (the 'id' of a search result)")
        if len(pid) > SERVE_MAX_ID_CHARS or any(c in pid for c in "/\\\x00") or ".." in pid:
            raise DataError(f"not a passage id: {_one_line(pid[:60])!r} (a passage id, never a path)")
        if pid not in self.corpus:
            raise DataError(f"unknown passage id {pid!r}: use the 'id' of a search result")
        return pid

    def describe(self, pid: str) -> dict[str, Any]:
        """A passage's id, document, rule label and headings path."""
        p = self.corpus[pid]
        rec = self._document(p.document_id).get(pid, {})
        return {"id": pid, "document_id": p.document_id, "document": self.session.title(p.document_id),
                "rule": str(rec.get("Rule") or p.passage_id), "headings": list(rec.get("Headings") or [])}

    @cached_property
    def documents(self) -> list[int]:
        """The corpus's document ids, in order."""
        return sorted({self.corpus[pid].document_id for pid in self.corpus})

    @property
    def graph(self):
        """The corpus's cross-reference graph (``DATA/xref`` when ``rirag data xref`` wrote it, else resolved on the
        fly); None without a corpus folder."""
        with self._lock:
            if self._graph is None and self.root is not None:
                from rirag.xref.graph import ReferenceGraph

                self._graph = ReferenceGraph(self.root, corpus=self.corpus)
            return self._graph

    def references_made(self, pid: str) -> list[dict[str, Any]]:
        graph = self.graph
        if graph is None:
            return []
        return [{"surface": link.surface, "targets": [t for t in link.targets if t in self.corpus]}
                for link in graph.links(pid)]

    def references_received(self, pid: str) -> list[str] | None:
        """The passages that refer to ``pid`` (from the written graph; None when the corpus has none written: resolving
        every passage's references on the fly is a whole-corpus job)."""
        graph = self.graph
        if graph is None or graph.graph is None:
            return None
        with self._lock:
            if self._received is None:
                received: dict[str, list[str]] = {}
                for source in self.corpus:
                    for link in graph.links(source):
                        for target in link.targets:
                            if target != source and source not in received.setdefault(target, []):
                                received[target].append(source)
                self._received = received
        return list(self._received.get(pid, []))

    # -- the tools -----------------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, documents: list[int] | None = None) -> dict[str, Any]:
        query = check_text(query, "query")
        k = check_int(k, "k", 1, min(SERVE_MAX_K, len(self.corpus)))
        wanted = None
        if documents is not None:
            if not isinstance(documents, list) or not documents:
                raise DataError("documents must be a non-empty list of document ids (integers)")
            wanted = {check_int(d, "a document id", 0, 10**9) for d in documents}
            unknown = sorted(wanted - set(self.documents))
            if unknown:
                raise DataError(f"unknown document ids {unknown[:10]}: see the corpus card for the documents")
        retriever, used = self._retriever()
        depth = k if wanted is None else len(self.corpus)
        with self._compute:
            ranked = retriever.search({"query": query}, k=depth).get("query", {})
        hits = []
        for pid, score in sorted(ranked.items(), key=lambda kv: -kv[1]):
            if wanted is not None and self.corpus[pid].document_id not in wanted:
                continue
            text = self.corpus[pid].text
            hits.append({**self.describe(pid), "score": round(float(score), 4),
                         "text": text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + " …"})
            if len(hits) == k:
                break
        return {"retriever": used, "results": hits}

    def get_passage(self, id: str) -> dict[str, Any]:  # noqa: A002 - the tool's argument, as agents see it
        pid = self._check_id(id)
        received = self.references_received(pid)
        return {**self.describe(pid), "text": self.corpus[pid].text, "references_made": self.references_made(pid),
                "references_received": received,
                "note": None if received is not None else "references received need the corpus's graph: run "
                                                          "`rirag data xref` on the corpus folder"}

    def follow_references(self, id: str, depth: int = 1) -> dict[str, Any]:  # noqa: A002
        start = self._check_id(id)
        depth = check_int(depth, "depth", 1, SERVE_MAX_DEPTH)
        seen, found, queue = {start}, [], deque([(start, 0)])
        while queue and len(found) < SERVE_MAX_FOLLOWED:
            pid, hops = queue.popleft()
            if hops == depth:
                continue
            for ref in self.references_made(pid):
                for target in ref["targets"]:
                    if target in seen or len(found) >= SERVE_MAX_FOLLOWED:
                        continue
                    seen.add(target)
                    found.append({**self.describe(target), "depth": hops + 1, "from": pid,
                                  "reference": ref["surface"], "text": self.corpus[target].text})
                    queue.append((target, hops + 1))
        return {"id": start, "followed": found, "truncated": len(found) >= SERVE_MAX_FOLLOWED}

    def _session(self, k: int, retriever) -> AnsweringSession:
        key = (k, id(retriever))
        with self._lock:
            if key not in self._sessions:
                s = self.session
                self._sessions[key] = AnsweringSession(
                    replace(s.options, k=k), corpus=self.corpus, root=self.root, title=s.title, retriever=retriever,
                    generator=s.generator).open()
            return self._sessions[key]

    def answer(self, question: str, k: int | None = None) -> dict[str, Any]:
        question = check_text(question, "question")
        k = self.session.options.k if k is None else check_int(k, "k", 1, min(SERVE_MAX_K, len(self.corpus)))
        retriever, used = self._retriever()
        session = self._session(k, retriever)
        with self._compute:
            answer = session.ask(question, question_id="mcp")
        numbers = answer.shown_ids()  # as rirag ask shows them: the cited passages 1, 2, 3, never skipping
        sources = [{"n": numbers[p.id], **self.describe(p.id), "score": round(float(p.score), 4), "text": p.text}
                   for p in answer.cited if p.id in self.corpus]
        return {"answer": answer.shown_text(), "sources": sources, "warnings": list(answer.warnings), "retriever": used}

    # -- resources -----------------------------------------------------------------------------------------------
    def corpus_card(self) -> str:
        """The corpus folder's ``README.md`` when it has one, else a short card made from what the corpus holds."""
        if self.root is not None and (self.root / CARD_FILE).is_file():
            return (self.root / CARD_FILE).read_text(encoding="utf-8")
        titles, docs = dict(self.session.titles), self.documents
        lines = [f"# {self.root.name if self.root is not None else 'corpus'}", "",
                 f"{len(self.corpus):,} passages in {len(docs):,} documents.", "", "| document id | title |",
                 "|---|---|"]
        lines += [f"| {d} | {titles.get(d, f'Document {d}')} |" for d in docs]
        graph = self.graph
        if graph is not None and graph.graph is not None and (graph.graph.parent / "summary.json").is_file():
            summary = json.loads((graph.graph.parent / "summary.json").read_text(encoding="utf-8"))
            lines += ["", "Cross-references (`rirag data xref`):", "", "```json", json.dumps(summary, indent=1),
                      "```"]
        return "\n".join(lines) + "\n"

    def ingest_report(self) -> str:
        """``ingest_report.json`` of the corpus folder (what ``rirag data ingest`` read, kept and dropped)."""
        path = self.root / INGEST_REPORT_FILE if self.root is not None else None
        if path is None or not path.is_file():
            raise DataError("this corpus has no ingest report (only a corpus written by `rirag data ingest` has one)")
        return path.read_text(encoding="utf-8")
