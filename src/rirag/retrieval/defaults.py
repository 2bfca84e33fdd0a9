"""The default retriever of ``rirag ask`` / ``answer`` / ``submit`` and the demo, read from the CV evidence.

:func:`default_retriever` reads the document-grouped cross-validation table (``benchmarks/retrieval_cv.py`` writes
``benchmarks/results/retrieval_cv.json``) and returns the best row, by pooled Recall@10 then MAP@10, that is a CLI
retriever needing no trained artifact (rows are mapped to retriever specs by :func:`cv_row_spec`; a row that is no
CLI retriever, needs a trained model, or lacks what its spec needs, such as a tuned α, is skipped). Where the file is
missing (an installed wheel), unreadable or has no such row, the default is :data:`FALLBACK_RETRIEVER`.
``$RIRAG_CV_RESULTS`` names another results file (the tests point it away from the committed table).

The CV row labels live here (:data:`CV_ROWS`), and the benchmark writes them, so the two cannot drift apart.

What the commands run without ``--retriever`` is :func:`default_spec`: the learned fusion where ``make models`` built
its ranker (:func:`trained_ranker`), else that CV row; either with cross-reference selection where the corpus has
its graph.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from rirag.constants import HYBRID_ALPHA, LEARNED_FUSION_RANKER, OFFLINE_ENCODER, XREF_SELECT_DEFAULT
from rirag.errors import DataError, UsageError
from rirag.io import read_json
from rirag.retrieval.registry import RetrieverSpec

logger = logging.getLogger(__name__)

#: Environment variable naming the CV results file read by :func:`default_retriever`.
CV_RESULTS_ENV_VAR = "RIRAG_CV_RESULTS"
#: Environment variable naming the trained learned-fusion ranker folder the default uses (:func:`trained_ranker`).
RANKER_ENV_VAR = "RIRAG_RANKER"
#: The committed CV table of a checkout (absent from an installed wheel).
CV_RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "retrieval_cv.json"
#: The default when the CV table is missing or has no usable row: RIRAG rank fusion of BM25 passages with document
#: BM25 (no model to load; leakage-free validation R@10 0.812 vs BM25 0.808, benchmarks/results/retrieval.json).
FALLBACK_RETRIEVER = "rank-fusion"

#: CV row key (``benchmarks/retrieval_cv.py --rows``) -> the row's label in the results file.
CV_ROWS: dict[str, str] = {
    "bm25": "bm25",
    "zero-shot": "zero-shot",
    "hybrid": f"hybrid (zero-shot, α={HYBRID_ALPHA})",
    "rrf": "RRF (zero-shot + BM25)",
    "hybrid-tuned": "hybrid (zero-shot, α tuned on the other folds)",
    "rank-fusion": "rank-fusion (BM25 + document BM25)",
    "learned-fusion": "learned fusion (BM25, zero-shot, document BM25, lexical; trained on the other folds)",
}


def _tuned_hybrid(row: Mapping[str, Any], model: str) -> RetrieverSpec | None:
    alpha = row.get("alpha")  # the α the fold rule picks on every kept question; absent in older tables
    return None if alpha is None else RetrieverSpec("hybrid", model, {"alpha": float(alpha)})


#: CV row label -> (row, zero-shot model) -> spec (None: not usable). Rows not here (learned fusion: a trained
#: ranker) are never a default.
_ROW_SPECS: dict[str, Callable[[Mapping[str, Any], str], RetrieverSpec | None]] = {
    CV_ROWS["bm25"]: lambda row, model: RetrieverSpec("bm25"),
    CV_ROWS["zero-shot"]: lambda row, model: RetrieverSpec("dense", model),
    CV_ROWS["hybrid"]: lambda row, model: RetrieverSpec("hybrid", model, {"alpha": HYBRID_ALPHA}),
    CV_ROWS["rrf"]: lambda row, model: RetrieverSpec("rrf", model),
    CV_ROWS["hybrid-tuned"]: _tuned_hybrid,
    CV_ROWS["rank-fusion"]: lambda row, model: RetrieverSpec("rank-fusion"),
}


def cv_row_spec(row: Mapping[str, Any], model: str = OFFLINE_ENCODER) -> RetrieverSpec | None:
    """The CLI retriever a CV row measured (``model``: the table's zero-shot encoder), or None where the row is no
    CLI retriever without a trained artifact, or lacks what its spec needs."""
    make = _ROW_SPECS.get(str(row.get("row")))
    return make(row, model) if make else None


def best_cv_spec(table: Mapping[str, Any]) -> RetrieverSpec | None:
    """The spec of the table's best usable row: highest pooled Recall@10, ties by MAP@10 (then the first listed)."""
    model = table.get("model") or OFFLINE_ENCODER
    usable = []
    for row in table.get("rows") or []:
        spec = cv_row_spec(row, model) if isinstance(row, Mapping) else None
        if spec is not None and isinstance(row.get("recall@10"), (int, float)):
            usable.append(((float(row["recall@10"]), float(row.get("map@10") or 0.0)), row["row"], spec))
    if not usable:
        return None
    best = max(usable, key=lambda u: u[0])
    logger.debug("default retriever: CV row %r (R@10 %.4f, MAP@10 %.4f)", best[1], *best[0])
    return best[2]


def default_retriever(path: str | Path | None = None) -> RetrieverSpec:
    """The default retriever spec: the best CV row needing no trained artifact, read from ``path`` (default
    ``$RIRAG_CV_RESULTS``, else :data:`CV_RESULTS`); :data:`FALLBACK_RETRIEVER` where that gives none."""
    path = Path(path or os.environ.get(CV_RESULTS_ENV_VAR) or CV_RESULTS)
    if not path.is_file():
        logger.debug("no CV table at %s: default retriever %s", path, FALLBACK_RETRIEVER)
        return RetrieverSpec(FALLBACK_RETRIEVER)
    try:
        table = read_json(path)
    except DataError as err:
        logger.warning("CV table %s unreadable (%s): default retriever %s", path, err, FALLBACK_RETRIEVER)
        return RetrieverSpec(FALLBACK_RETRIEVER)
    spec = best_cv_spec(table) if isinstance(table, Mapping) else None
    return spec or RetrieverSpec(FALLBACK_RETRIEVER)


def trained_ranker(folder: str | Path | None = None) -> tuple[str | None, str]:
    """``(folder, why)``: the trained learned-fusion ranker the default uses (``folder``, else ``$RIRAG_RANKER``,
    else :data:`~rirag.constants.LEARNED_FUSION_RANKER`, what ``make models`` builds; a folder, or the Hub id of a
    published ranker: :func:`~rirag.retrieval.learned_fusion.ranker_folder`) with every encoder it was trained with
    at hand, or ``(None, why not)``. Cheap: reads the ranker's config, loads nothing."""
    from rirag.models import model_available
    from rirag.retrieval.learned_fusion import RANKER_FILE, load_ranker_config, ranker_folder

    folder = str(folder or os.environ.get(RANKER_ENV_VAR) or LEARNED_FUSION_RANKER)
    try:
        local = ranker_folder(folder)  # a Hub id (published ranker): its files, downloaded once or from the cache
    except DataError as err:
        return None, str(err)
    if not (local / RANKER_FILE).is_file():
        return None, f"no trained ranker in {folder}; `make models` builds it"
    try:
        encoders = load_ranker_config(folder)["encoders"]
        for encoder in encoders:
            model_available(str(encoder), f"encoder of the ranker in {folder}")
    except (DataError, UsageError) as err:
        return None, f"the trained ranker in {folder} cannot run ({err})"
    return folder, f"the trained ranker in {folder} (the strongest row measured, benchmarks/results/transfer.json)"


def default_spec(path: str | Path | None = None, model: str | None = None) -> tuple[RetrieverSpec, str]:
    """The retriever the commands, the demo and ``rirag serve`` run without ``--retriever``, and why: the learned
    fusion where a trained ranker is at hand (:func:`trained_ranker`) and no dense ``model`` is asked for, else
    :func:`default_retriever`; either with cross-reference selection (:data:`~rirag.constants.XREF_SELECT_DEFAULT`:
    on where the corpus folder has its reference graph; :mod:`rirag.retrieval.xref_selection`)."""
    ranker, why = trained_ranker()
    if ranker is not None and model:  # the ranker runs its own encoders: a model asked for means the CV row's
        ranker, why = None, f"--model {model} given (the trained ranker runs its own encoders)"
    if ranker is not None:
        return RetrieverSpec("learned-fusion", None, {"ranker": ranker, "xref_select": XREF_SELECT_DEFAULT}), why
    spec = default_retriever(path)
    return (RetrieverSpec(spec.name, spec.model, {**spec.options, "xref_select": XREF_SELECT_DEFAULT}),
            f"{why}: the best CV row needing no trained artifact")


def with_default_retriever(model: str | None, options: Iterable[tuple[str, Any]]) -> tuple[str, str | None, list]:
    """``(retriever, model, options)`` for a command given no ``--retriever``: the default spec, with the command's
    own ``--model`` and ``--option`` values taking precedence. Logs which retriever it chose and why."""
    spec, why = default_spec(model=model)
    own = list(options)
    if any(k == "xref_expand" for k, _ in own):  # the user's own way of following references replaces selection
        spec.options.pop("xref_select", None)
    settings = {**spec.options, **dict(own)}
    logger.info("retriever: %s%s%s (%s; --retriever to change)", spec.name,
                f" ({model or spec.model})" if model or spec.model else "",
                "".join(f" {k}={v}" for k, v in settings.items()), why)
    return spec.name, model or spec.model, list(settings.items())
