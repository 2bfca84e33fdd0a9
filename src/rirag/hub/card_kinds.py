"""Hub card kinds: what publishing adds to each typed card (:mod:`rirag.hub.card_data`), declared once, in
:data:`HUB_CARD_KINDS`. A kind may read extra context from its artifact's own files (for producers that save no card
data yet) and rewrites its own ids (entry names, local paths) as the Hub ids they are published under, with any
other fact only publishing knows. A new Hub artifact adds its card class (rirag.hub.card_data, which registers it),
its template, and a row here when it needs either."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rirag.constants import INGEST_REPORT_FILE
from rirag.hub.card_data import (
    CardData,
    ClassifierCard,
    DemoSpaceCard,
    LearnedFusionCard,
    NLIDatasetCard,
    RAFTAdapterCard,
    RulebookCorpusCard,
    XrefGraphCard,
    config_dtype,
    weights_dtype,
)
from rirag.hub.cards import CardError
from rirag.hub.manifest import Entry, Manifest, read_config
from rirag.retrieval.learned_fusion import CONFIG_FILE

logger = logging.getLogger(__name__)


def hub_id(manifest: Manifest, name: str) -> str:
    """A manifest entry's name, an artifact path or a local model name as the Hub id it is published under."""
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}
    return ids.get(name) or manifest.hub_id_of(name) or name


def encoder_refs(manifest: Manifest, paths: list[str]) -> list[dict]:
    """A learned-fusion ranker's encoders as its card lists them: the path it was trained with, its Hub repo."""
    refs = []
    for path in paths:
        hub = manifest.hub_id_of(path)
        refs.append({"path": path, "repo": hub, "hub_or_path": hub or path})
    return refs


def _learned_fusion_context(entry: Entry, manifest: Manifest, folder: Path, root: Path) -> dict:
    path = folder / CONFIG_FILE
    if not path.exists():
        return {}
    config = read_config(path)
    encoders = encoder_refs(manifest, config.get("encoders", []))
    settings = {"train split": config.get("train_split"), "training questions": config.get("train_questions"),
                "candidate depth": config.get("candidate_depth"),
                "candidate recall (training)": config.get("candidate_recall"),
                "boosting rounds": config.get("num_boost_round"),
                "question memory depth": config.get("memory_depth") or "off",
                "top features by gain": ", ".join(n for n, _ in config.get("top_features_by_gain", [])[:5]),
                "train seconds": config.get("train_seconds")}
    return {"encoders": encoders, "feature_version": config.get("feature_version"),
            "memory": bool(config.get("memory_depth")),
            "settings": {k: v for k, v in settings.items() if v is not None},
            "recorded_command": config.get("command")}


def _nli_dataset_context(entry: Entry, manifest: Manifest, folder: Path, root: Path) -> dict:
    """Rows per split and source of a saved NLI DatasetDict (``dataset_builders/nli.py``)."""
    from collections import Counter

    from datasets import load_from_disk

    ds = load_from_disk(str(folder))
    counts = {split: dict(sorted(Counter(part["source"]).items())) for split, part in ds.items()}
    sources = sorted({s for c in counts.values() for s in c})
    return {"splits": list(ds), "data_files": [{"split": split, "path": f"{split}/*.arrow"} for split in ds],
            "statistics": [{"source": s, **{split: counts[split].get(s, 0) for split in ds}}
                                                for s in sources]}


def _demo_context(entry: Entry, manifest: Manifest, folder: Path, root: Path) -> dict:
    """The demo's configuration variables, read from its backend module (one source of truth)."""
    import importlib.util

    path = folder / "backend.py"
    if not path.exists():
        return {"variables": []}
    spec = importlib.util.spec_from_file_location("rirag_demo_backend", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the module runs
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
    return {"variables": [{"name": n, "default": d, "help": h} for n, d, h in module.ENV_VARIABLES]}


#: The build report fields a corpus card shows: counts only (the report's dropped examples quote the source text).
REPORT_FIELDS = ("source", "kind", "documents", "passages", "dropped", "length_words")


def _rulebook_corpus_context(entry: Entry, manifest: Manifest, folder: Path, root: Path) -> dict:
    """The build report of a corpus folder written by ``rirag data ingest`` (its counts, never its examples)."""
    path = folder / INGEST_REPORT_FILE
    if not path.is_file():
        raise CardError(f"{entry.name}: {path} not found: {entry.source} is not a folder `rirag data ingest` wrote")
    report = read_config(path)
    return {"report": {k: report[k] for k in REPORT_FIELDS if k in report},
            "builder_only": entry.builder_only}


#: The columns of a resolver quality row (benchmarks/results/xref.json) a graph card shows.
XREF_QUALITY_FIELDS = ("set", "labelled_references", "labelled_in_corpus", "detection_precision",
                       "detection_recall", "resolution_precision", "resolution_recall")


def _xref_context(entry: Entry, manifest: Manifest, folder: Path, root: Path) -> dict:
    """A cross-reference graph (``xref/`` in the entry's source, as ``rirag data xref`` writes it): its counts, the
    card section that says what a row is and how references resolve, and the resolver's measured quality on this
    corpus (the rows of the manifest's ``quality.file`` in the results folder whose ``corpus`` is
    ``quality.corpus``)."""
    from rirag.xref import graph as xref_graph

    path = folder / xref_graph.GRAPH_CONFIG / xref_graph.SUMMARY_FILE
    if not path.is_file():
        raise CardError(f"{entry.name}: {path} not found: write the graph with `rirag data xref --out "
                        f"{entry.source}/{xref_graph.GRAPH_CONFIG}`")
    summary = read_config(path)
    wanted = dict({**manifest.defaults, **entry.context}.get("quality") or {})
    results = root / manifest.results_dir / str(wanted.get("file", "xref.json"))
    quality = {"corpus": wanted.get("corpus"), "rows": []}
    if results.is_file():
        data = read_config(results)
        quality.update({k: data.get(k) for k in ("command", "labels", "guidelines")})
        quality["rows"] = [{k: row.get(k) for k in XREF_QUALITY_FIELDS} for row in data.get("rows", [])
                           if row.get("corpus") == wanted.get("corpus")]
    if not quality["rows"]:
        quality["why"] = f"no row for corpus {wanted.get('corpus')!r} in {results.relative_to(root)}"
        logger.warning("%s: %s", entry.name, quality["why"])
    return {"summary": summary, "section": xref_graph.card_section(summary), "quality": quality,
            "config": xref_graph.GRAPH_CONFIG, "data_file": f"{xref_graph.GRAPH_CONFIG}/{xref_graph.GRAPH_FILE}",
            "builder_only": entry.builder_only}




def _classifier_publish(card: ClassifierCard, entry: Entry, manifest: Manifest, folder: Path,
                        saved: CardData | None) -> None:
    """The metric Space this manifest publishes (its repo id), and the dtype of the weights published."""
    metric = next((e for e in manifest.entries if e.kind == "metric-space"), None)
    if metric is not None:
        card.metric_repo = manifest.repo_id(metric)
    card.weights_dtype, card.config_dtype = weights_dtype(folder), config_dtype(folder)


def _demo_publish(card: DemoSpaceCard, entry: Entry, manifest: Manifest, folder: Path, saved: CardData | None) -> None:
    """The models the Space runs: those its variables name (entries or Hub ids), else the context's; and the variables
    themselves, which the card's local run sets as the Space has them."""
    named = [v for v in entry.space_variables.values() if "/" in str(v) or v in {e.name for e in manifest.entries}]
    card.models = list(dict.fromkeys(hub_id(manifest, x) for x in named or card.models or []))
    card.space_env = [{"name": k, "value": hub_id(manifest, str(v))} for k, v in entry.space_variables.items()]


def _learned_fusion_publish(card: LearnedFusionCard, entry: Entry, manifest: Manifest, folder: Path,
                            saved: CardData | None) -> None:
    """The encoders a trainer recorded by path, with the repos they are published under."""
    if saved is not None:
        card.encoders = encoder_refs(manifest, [e["path"] for e in card.encoders])


def _raft_publish(card: RAFTAdapterCard, entry: Entry, manifest: Manifest, folder: Path,
                  saved: CardData | None) -> None:
    """The adapter a merged model was merged from, and the RAFT data, as Hub ids."""
    card.adapter = hub_id(manifest, card.adapter) if card.adapter else card.adapter
    if card.raft_data.get("dataset"):
        card.raft_data = {**card.raft_data, "dataset": hub_id(manifest, card.raft_data["dataset"])}


@dataclass(frozen=True)
class CardKind:
    """What publishing does for one card kind beyond the fields every card shares (its datasets and base model as
    Hub ids, its repo id and name, its measured model-index, its command)."""

    #: Extra card context from the artifact's own files (and the results folder), when it saved no card data.
    context: Callable[[Entry, Manifest, Path, Path], dict] | None = None
    #: Rewrites the kind's own ids (and sets what only publishing knows) on the card, in place.
    publish: Callable[[CardData, Entry, Manifest, Path, CardData | None], None] | None = None


#: Every card kind that publishing treats apart, with what it does; a kind not listed needs nothing of its own.
HUB_CARD_KINDS: dict[type[CardData], CardKind] = {
    ClassifierCard: CardKind(publish=_classifier_publish),
    LearnedFusionCard: CardKind(context=_learned_fusion_context, publish=_learned_fusion_publish),
    RAFTAdapterCard: CardKind(publish=_raft_publish),
    NLIDatasetCard: CardKind(context=_nli_dataset_context),
    RulebookCorpusCard: CardKind(context=_rulebook_corpus_context),
    XrefGraphCard: CardKind(context=_xref_context),
    DemoSpaceCard: CardKind(context=_demo_context, publish=_demo_publish),
}


def card_kind(cls: type[CardData]) -> CardKind:
    return HUB_CARD_KINDS.get(cls, CardKind())
