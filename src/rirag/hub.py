"""Publish rirag's artifacts to the Hugging Face Hub: assemble exact upload folders from a manifest, then push.

``hub_push/push.py`` is the command line; trainers' ``--push_to_hub`` goes through :func:`push_trained` (the
Trainer's own pushes held by :func:`hold_trainer_push`), which uses :func:`push_folder` too.

A manifest (``hub_push/manifest.yaml``) lists entries::

    - name: encoder-et-ct-leakage-free          # --only selects by name
      kind: model                               # dataset | model | adapter | metric-space | app-space
      source: artifacts/contrastive_tuning/minilm-et-ct-train   # the artifact's folder
      repo: minilm-et-ct-obliqa-leakage-free    # the repo name under the manifest's namespace
      card: sentence_transformer.md.j2          # a template in model_cards/, or `source` (keep the folder's README)
      results: [retrieval.json]                 # benchmarks/results files whose rows for `source`, measured on
                                                # the weights there (weights_sha256), fill model-index
      context: {...}                            # the card's words: description, base_model, limits, ...

For each entry :func:`assemble` writes ``OUT/<repo>/`` (weights, tokenizer, configs, the card, ``.gitattributes``;
never checkpoints, optimizer states or caches) atomically, so re-running gives the same folder. Every file is a
copy: editing an upload folder never edits the artifact or the repository's tracked files. A card kept from its
source gets a usage snippet when it has none (``model_cards/_usage.md.j2``), and its quoted source paths become repo
ids. No published config names a local path: an adapter's base model and a ranker's encoders become Hub ids
(:func:`with_hub_base_model`). A source that does not exist gives a ``missing`` row, not an error (and its stale
upload folder, if any, is removed). :mod:`rirag.hub_load` then loads each upload folder as its card's usage
snippet says.

Pushing needs a token and the Hub: :func:`check_hub_access` checks both before anything is assembled, and every
failure to reach the Hub is a :class:`HubAccessError` with a one-line message.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from rirag.card_data import (
    CARD_DATA_FILE,
    CARD_FILE,
    WORDS,
    CardData,
    ClassifierCard,
    DemoSpaceCard,
    LearnedFusionCard,
    RAFTAdapterCard,
    card_type,
    load_card_data,
)
from rirag.cards import (
    SEED_PAPERS_BIBTEX,
    CardError,
    check_card,
    collect_results,
    eval_results,
    model_index,
    read_results,
    render_card,
    results_table,
)
from rirag.hub_load import code_blocks
from rirag.io import WEIGHTS_FINGERPRINT, atomic_dir, atomic_write_text, weights_fingerprint
from rirag.retrieval.learned_fusion import CONFIG_FILE
from rirag.validation import looks_local

logger = logging.getLogger(__name__)

#: Manifest kinds and the Hub repo type each is pushed as.
REPO_TYPES = {"dataset": "dataset", "model": "model", "adapter": "model", "metric-space": "space",
              "app-space": "space"}
#: Environment variable that overrides the manifest's namespace (a user or organisation on the Hub).
NAMESPACE_ENV = "RIRAG_HUB_NAMESPACE"
#: Never uploaded: trainer checkpoints and states, caches, logs, temporary files.
EXCLUDE = ("checkpoint-*", "runs", "logs", "optimizer.pt", "scheduler.pt", "rng_state*.pth", "trainer_state.json",
           "training_args.bin", "__pycache__", "*.pyc", ".cache", "cache-*.arrow", "*.lock", ".*.tmp", ".*.old",
           ".ipynb_checkpoints", ".DS_Store", ".git", ".gitattributes", ".pytest_cache",
           CARD_DATA_FILE)  # the card data is rendered into README.md; its local paths mean nothing on the Hub
#: Stored with Git LFS on the Hub (by extension); any other file above LFS_MIN_BYTES is added by name.
LFS_EXTENSIONS = ("arrow", "bin", "gguf", "h5", "joblib", "model", "msgpack", "npy", "npz", "onnx", "ot", "parquet",
                  "pkl", "png", "pt", "pth", "safetensors", "tflite", "zip", "gz")
LFS_MIN_BYTES = 10 * 1024 * 1024


class ManifestError(ValueError):
    """A manifest that cannot be used (unknown kind, missing field, duplicate name)."""


class HubAccessError(OSError):
    """The Hub cannot be used from here: no network, offline mode, or a server error. The message is one line."""


class HubTokenError(HubAccessError, PermissionError):
    """No Hugging Face token, or one the Hub rejects."""


NO_TOKEN = "no Hugging Face token: set HF_TOKEN or run `hf auth login`"


@dataclass
class Entry:
    name: str
    kind: str
    repo: str
    source: str = ""
    card: str = "source"
    results: list[str] = field(default_factory=list)
    context: dict = field(default_factory=dict)
    command_from: str | None = None
    exclude: list[str] = field(default_factory=list)
    vendor: dict = field(default_factory=dict)  # {"src/rirag": "rirag"}: library code a Space imports
    space_variables: dict = field(default_factory=dict)  # a Space's variables at creation (entry names -> repo ids)
    results_artifact: str | None = None  # whose result rows fill the card (default: source), e.g. a merged
    #                                      model's card takes the rows of the adapter it was merged from

    @property
    def repo_type(self) -> str:
        return REPO_TYPES[self.kind]


@dataclass
class Manifest:
    namespace: str
    entries: list[Entry]
    private: bool = False
    create_pr: bool = False
    out_dir: str = "artifacts/hub"
    results_dir: str = "benchmarks/results"
    aliases: dict = field(default_factory=dict)  # local model names -> Hub ids (e.g. the wheel-shipped MiniLM)
    defaults: dict = field(default_factory=dict)  # card context shared by every entry

    def repo_id(self, entry: Entry) -> str:
        return f"{self.namespace}/{entry.repo}"

    def hub_id_of(self, path_or_name: str) -> str | None:
        """The Hub id an artifact path or a local model name is published under, if any."""
        if path_or_name in self.aliases:
            return self.aliases[path_or_name]
        for entry in self.entries:
            if entry.source and Path(entry.source).as_posix().rstrip("/") == Path(path_or_name).as_posix().rstrip("/"):
                return self.repo_id(entry)
        return None


def load_manifest(path: str | Path, namespace: str | None = None) -> Manifest:
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ManifestError(f"manifest not found: {path}") from err
    except yaml.YAMLError as err:
        raise ManifestError(f"{path}: malformed YAML ({err})") from err
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        raise ManifestError(f"{path}: expected a mapping with a list 'entries'")
    known = set(Entry.__dataclass_fields__)
    entries, names = [], set()
    for i, item in enumerate(raw["entries"]):
        where = f"{path}: entry {i} ({item.get('name', '?') if isinstance(item, dict) else '?'})"
        if not isinstance(item, dict):
            raise ManifestError(f"{where}: expected a mapping")
        for key in ("name", "kind", "repo"):
            if not item.get(key):
                raise ManifestError(f"{where}: missing field {key!r}")
        unknown = set(item) - known
        if unknown:
            raise ManifestError(f"{where}: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        if item["kind"] not in REPO_TYPES:
            raise ManifestError(f"{where}: unknown kind {item['kind']!r}; choose from {sorted(REPO_TYPES)}")
        if not item.get("source"):
            raise ManifestError(f"{where}: missing field 'source' (the artifact's folder)")
        if item["name"] in names:
            raise ManifestError(f"{where}: duplicate name {item['name']!r}")
        names.add(item["name"])
        entries.append(Entry(**item))
    ns = namespace or os.environ.get(NAMESPACE_ENV) or raw.get("namespace")
    if not ns:
        raise ManifestError(f"{path}: no namespace (set 'namespace', ${NAMESPACE_ENV} or --namespace)")
    return Manifest(namespace=ns, entries=entries, private=bool(raw.get("private", False)),
                    create_pr=bool(raw.get("create_pr", False)), out_dir=raw.get("out_dir", "artifacts/hub"),
                    results_dir=raw.get("results_dir", "benchmarks/results"), aliases=raw.get("aliases") or {},
                    defaults=raw.get("defaults") or {})


# --------------------------------------------------------------------------------------------------
# Assembling an upload folder
# --------------------------------------------------------------------------------------------------


def _excluded(rel: Path, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in patterns)


def upload_files(source: Path, exclude: tuple[str, ...] = EXCLUDE) -> list[Path]:
    """Files of ``source`` (relative paths, sorted) that belong in an upload: no checkpoint, state or cache."""
    files = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if path.is_file() and not _excluded(rel, exclude):
            files.append(rel)
    return files


def _copy(src: Path, dst: Path) -> None:
    """A real copy, never a hard link: an upload folder is edited (cards, tests, people) without touching its source."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    shutil.copymode(src, dst)


def gitattributes(folder: Path) -> str | None:
    """LFS rules for the binary and large files of an upload folder (None when there are none)."""
    lines = []
    exts = sorted({p.suffix.lstrip(".") for p in folder.rglob("*")
                   if p.is_file() and p.suffix.lstrip(".") in LFS_EXTENSIONS})
    lines += [f"*.{ext} filter=lfs diff=lfs merge=lfs -text" for ext in exts]
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix.lstrip(".") not in LFS_EXTENSIONS and p.stat().st_size >= LFS_MIN_BYTES:
            lines.append(f"{p.relative_to(folder).as_posix()} filter=lfs diff=lfs merge=lfs -text")
    return "\n".join(lines) + "\n" if lines else None


#: Configs whose base-model field a Hub user's library follows (``AutoPeftModel`` loads the adapter's base from it).
BASE_MODEL_FIELDS = {"adapter_config.json": "base_model_name_or_path"}


def with_hub_base_model(folder: Path, entry: Entry, manifest: Manifest) -> None:
    """Name the Hub id, never a local path, as the base model of every config in an upload folder
    (``adapter_config.json``'s ``base_model_name_or_path``: the local folder the trainer loaded) and as a
    learned-fusion ranker's encoders. The id is the manifest's alias for that path (or the entry publishing it), else
    the entry's ``base_model``; a local path with neither is a CardError."""
    import json

    given = {**manifest.defaults, **entry.context}.get("base_model")
    for name, key in BASE_MODEL_FIELDS.items():
        for path in sorted(folder.rglob(name)):
            config = _read_json(path)
            base = config.get(key)
            if not isinstance(base, str) or not base or not looks_local(base):
                continue
            hub = manifest.hub_id_of(base) or (given if given and not looks_local(given) else None)
            if hub is None:
                raise CardError(f"{entry.name}: {path.relative_to(folder)} names the local base model {base!r}, "
                                "which the manifest maps to no Hub id (add it to `aliases`)")
            config[key] = hub
            atomic_write_text(path, json.dumps(config, indent=2, sort_keys=True) + "\n")
    _with_hub_encoders(folder / CONFIG_FILE, entry, manifest)


def _with_hub_encoders(path: Path, entry: Entry, manifest: Manifest) -> None:
    """A learned-fusion ranker's ``encoders`` as the Hub ids they are published under, so that the downloaded ranker
    finds them (``rirag retrieve --option ranker=DIR`` without ``encoders``); an unpublished local one is an error."""
    import json

    if not path.is_file():
        return
    config = _read_json(path)
    encoders = config.get("encoders")
    if not isinstance(encoders, list) or not any(isinstance(e, str) and looks_local(e) for e in encoders):
        return
    hub = [manifest.hub_id_of(e) or e for e in encoders]
    local = [e for e in hub if looks_local(e)]
    if local:
        raise CardError(f"{entry.name}: {path.name} names encoder(s) {local} that no manifest entry publishes")
    config["encoders"] = hub
    atomic_write_text(path, json.dumps(config, indent=2) + "\n")


def _read_json(path: Path) -> dict:
    data = read_results(path)
    if not isinstance(data, dict):
        raise CardError(f"{path}: expected a JSON object")
    return data


def recorded_command(entry: Entry, root: Path) -> str | None:
    """The command an artifact records about itself (``command_from``: a JSON file, ``{source}`` expanded)."""
    if not entry.command_from:
        return None
    path = root / entry.command_from.format(source=entry.source or "")
    if not path.exists():
        return None
    data = _read_json(path)
    command = data.get("command")
    return str(command) if command else None


def _encoder_refs(manifest: Manifest, paths: list[str]) -> list[dict]:
    """A learned-fusion ranker's encoders as its card lists them: the path it was trained with, its Hub repo."""
    refs = []
    for path in paths:
        hub = manifest.hub_id_of(path)
        refs.append({"path": path, "repo": hub, "hub_or_path": hub or path})
    return refs


def _learned_fusion_context(entry: Entry, manifest: Manifest, folder: Path) -> dict:
    path = folder / CONFIG_FILE
    if not path.exists():
        return {}
    config = _read_json(path)
    encoders = _encoder_refs(manifest, config.get("encoders", []))
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


def _nli_dataset_context(entry: Entry, manifest: Manifest, folder: Path) -> dict:
    """Rows per split and source of a saved NLI DatasetDict (``dataset_builders/nli.py``)."""
    from collections import Counter

    from datasets import load_from_disk

    ds = load_from_disk(str(folder))
    counts = {split: dict(sorted(Counter(part["source"]).items())) for split, part in ds.items()}
    sources = sorted({s for c in counts.values() for s in c})
    return {"splits": list(ds), "data_files": [{"split": split, "path": f"{split}/*.arrow"} for split in ds],
            "statistics": [{"source": s, **{split: counts[split].get(s, 0) for split in ds}}
                                                for s in sources]}


def _demo_context(entry: Entry, manifest: Manifest, folder: Path) -> dict:
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


#: Extra card context read from an artifact's own files, by template.
CONTEXT_READERS: dict[str, Callable[[Entry, Manifest, Path], dict]] = {
    "learned_fusion.md.j2": _learned_fusion_context,
    "demo_space.md.j2": _demo_context,
    "nli_dataset.md.j2": _nli_dataset_context,
}


def _publish_values(entry: Entry, manifest: Manifest, saved: CardData | None) -> dict:
    """The card's fields before publishing adds its own: the saved card data (the artifact's record) with the
    manifest's words over it (:data:`rirag.card_data.WORDS`); without card data, the manifest's defaults and context."""
    words = {**manifest.defaults, **entry.context}
    if saved is None:
        return words
    values = asdict(saved)
    values.update({k: v for k, v in words.items() if k in WORDS})
    return values


def _hub_id(manifest: Manifest, name: str) -> str:
    """A manifest entry's name, an artifact path or a local model name as the Hub id it is published under."""
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}
    return ids.get(name) or manifest.hub_id_of(name) or name


#: A trainer's record of its own run beside the weights (older trainers wrote it instead of card_data.json).
TRAINING_RESULT_FILE = "training_result.json"


def _publish_results(entry: Entry, manifest: Manifest, root: Path, fingerprint: str | None) -> list | None:
    """The entry's results from its results files, only the numbers measured on the weights being published (their
    recorded fingerprint equals ``fingerprint``); None when the entry lists no results files."""
    if not entry.results:
        return None
    files = [Path(manifest.results_dir) / f for f in entry.results]
    absent = [f.as_posix() for f in files if not (root / f).exists()]
    if absent:
        logger.warning("%s: results file(s) not there yet, left out of the card: %s", entry.name, ", ".join(absent))
    present = [f for f in files if (root / f).exists()]
    artifact = entry.results_artifact or entry.source
    everything = collect_results(artifact, present, root)
    measured = collect_results(artifact, present, root, fingerprint=fingerprint)
    if len(measured) < len(everything):
        logger.warning("%s: %d number(s) of %s for %s were not measured on the weights published here (no or another "
                       "%s), left out of the model-index", entry.name, len(everything) - len(measured),
                       ", ".join(f.name for f in present), artifact, WEIGHTS_FINGERPRINT)
    return measured


def _own_results(entry: Entry, root: Path, fingerprint: str | None) -> list:
    """The numbers the artifact's own training record (``training_result.json`` beside its weights) gives, when
    that record names the fingerprint of those weights."""
    artifact = entry.results_artifact or entry.source
    path = root / artifact / TRAINING_RESULT_FILE
    if not path.is_file():
        return []
    found = collect_results(artifact, [Path(artifact) / TRAINING_RESULT_FILE], root, fingerprint=fingerprint)
    if not found:
        logger.warning("%s: %s records no %s equal to the weights' (%s): not used", entry.name, path,
                       WEIGHTS_FINGERPRINT, fingerprint)
    return found


def _measured_model_index(card: CardData, saved: CardData | None, entry: Entry, manifest: Manifest,
                          root: Path) -> None:
    """The card's results and model-index: numbers measured on exactly the weights published (the committed results
    files' rows with their fingerprint, else the artifact's own card data or training record with it); none
    otherwise, with a log line. Never a number recorded for other weights."""
    fingerprint = weights_fingerprint(root / (entry.results_artifact or entry.source))
    results = _publish_results(entry, manifest, root, fingerprint)
    if results:
        card.results, card.model_index = results_table(results), model_index(entry.repo, results)
        return
    if card.model_index and saved is not None and fingerprint and saved.weights_sha256 == fingerprint:
        card.model_index = [dict(item, name=entry.repo) for item in card.model_index]
        return
    own = _own_results(entry, root, fingerprint)
    if own:
        card.results, card.model_index = results_table(own), model_index(entry.repo, own)
        return
    if card.model_index or card.results or entry.results:
        logger.warning("%s: no number measured on these weights (%s %s): the card has no model-index", entry.name,
                       WEIGHTS_FINGERPRINT, fingerprint)
    card.results, card.model_index = [], []


def publish_card(entry: Entry, manifest: Manifest, folder: Path, root: Path) -> CardData:
    """The typed card an entry's template renders: the artifact's ``card_data.json`` (its trainer's record) when it
    has one, the manifest's words over it, then what only publishing knows: the repo id and name, Hub ids for the
    base model, data sets and models, the metric Space, and the model-index read from the results files."""
    cls = card_type(entry.card)
    saved = load_card_data(folder, cls)
    values = _publish_values(entry, manifest, saved)
    reader = CONTEXT_READERS.get(entry.card)  # kinds whose producer does not save card data yet
    extra = reader(entry, manifest, folder) if reader and saved is None else {}
    recorded = extra.pop("recorded_command", None)
    values["settings"] = dict(values.get("settings") or {}) | extra.pop("settings", {})
    values.update(extra)
    card = cls.from_dict(values, where=f"{entry.name}: card context")
    card.datasets = [_hub_id(manifest, x) for x in card.datasets or []]
    if isinstance(card, DemoSpaceCard):
        card.models = [_hub_id(manifest, x) for x in card.models or []]
    if isinstance(card, LearnedFusionCard) and saved is not None:
        card.encoders = _encoder_refs(manifest, [e["path"] for e in card.encoders])
    if isinstance(card, RAFTAdapterCard):  # the adapter a merged model was merged from, the RAFT data: as Hub ids
        card.adapter = _hub_id(manifest, card.adapter) if card.adapter else card.adapter
        if card.raft_data.get("dataset"):
            card.raft_data = {**card.raft_data, "dataset": _hub_id(manifest, card.raft_data["dataset"])}
    if card.base_model:
        card.base_model = _hub_id(manifest, card.base_model)
        given = {**manifest.defaults, **entry.context}.get("base_model")
        if given and looks_local(card.base_model):  # an unpublished start model (the entailment-tuned encoder a
            card.base_model = _hub_id(manifest, given)  # contrastive run began from): the manifest's base model
    metric = next((e for e in manifest.entries if e.kind == "metric-space"), None)
    if isinstance(card, ClassifierCard) and metric is not None:
        card.metric_repo = manifest.repo_id(metric)
    card.name, card.repo_id = entry.repo, manifest.repo_id(entry)
    _measured_model_index(card, saved, entry, manifest, root)
    if saved is None or saved.command == CardData.command:
        card.command = recorded_command(entry, root) or recorded or values.get("command") or CardData.command
    return card


def complete_model_card(text: str, entry: Entry, manifest: Manifest, root: Path) -> str:
    """A trainer's own card, completed for the Hub: its model-index from the numbers measured on these weights
    (replacing any; none when there are none) and the seed papers' BibTeX when it lacks them."""
    from huggingface_hub import ModelCard

    card = ModelCard(text, ignore_metadata_errors=True)
    base = card.data.base_model
    if isinstance(base, str) and base:  # a trainer records the local path it trained from: the Hub wants an id
        card.data.base_model = manifest.hub_id_of(base) or base
    fingerprint = weights_fingerprint(root / (entry.results_artifact or entry.source))
    results = _publish_results(entry, manifest, root, fingerprint) or _own_results(entry, root, fingerprint)
    if results:
        card.data.eval_results = eval_results(results)
        card.data.model_name = entry.repo
    elif card.data.eval_results:  # the trainer's own numbers cannot be tied to these weights
        logger.warning("%s: no number measured on these weights: the card's model-index is left out", entry.name)
        card.data.eval_results = None
    card.text = with_citation(card.text)
    return card.content


def with_repo_ids(text: str, manifest: Manifest) -> str:
    """A kept card's quoted artifact paths (``"artifacts/nli_judge"``, ``"evaluate_scripts/repass"``) as the repo ids
    they are published under: on the Hub the local paths mean nothing."""
    for entry in manifest.entries:
        source = Path(entry.source).as_posix().rstrip("/")
        for quote in ('"', "'"):
            text = text.replace(f"{quote}{source}{quote}", f"{quote}{manifest.repo_id(entry)}{quote}")
    return text


def _card_metadata(text: str) -> dict:
    import yaml

    if not text.startswith("---"):
        return {}
    head = text.split("\n---", 1)[0][3:]
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def usage_context(text: str, entry: Entry, manifest: Manifest) -> dict:
    """What ``model_cards/_usage.md.j2`` needs: the kind, the repo id, the dataset configs (each with a split), the
    base model of an adapter (as a Hub id)."""
    meta = _card_metadata(text)
    configs = []
    for config in meta.get("configs") or []:
        files = config.get("data_files")
        split = files[0].get("split", "train") if isinstance(files, list) and files and isinstance(files[0], dict) \
            else "train"
        configs.append({"name": config.get("config_name", "default"), "split": split})
    base = meta.get("base_model")
    base = base[0] if isinstance(base, list) and base else base
    library = meta.get("library_name") or ""
    return {"kind": entry.kind, "repo_id": manifest.repo_id(entry), "configs": configs, "library": library,
            "base_model": (manifest.hub_id_of(base) or base) if isinstance(base, str) else None}


def has_usage(text: str, repo_id: str) -> bool:
    """Whether a card has a fenced code block that names ``repo_id`` (its usage snippet)."""
    return any(repo_id in code for _, code in code_blocks(text))


def with_usage(text: str, entry: Entry, manifest: Manifest) -> str:
    """A kept card with a usage snippet (``## Use it``, from ``_usage.md.j2``) when it has none that names its repo."""
    if has_usage(text, manifest.repo_id(entry)):
        return text
    usage = render_card("_usage.md.j2", **usage_context(text, entry, manifest)).strip()
    if not usage:
        return text
    meta_end = text.find("\n---", 3) + len("\n---\n") if text.startswith("---") else 0
    body = text[meta_end:]
    lines = body.splitlines(keepends=True)
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    at = next((i for i, line in enumerate(lines) if i > title and line.startswith("## ")), len(lines))
    before = "".join(lines[:at]).rstrip("\n")  # the title and its introduction, then the usage section
    return text[:meta_end] + before + "\n\n" + usage + "\n" + ("\n" + "".join(lines[at:]) if at < len(lines) else "")


def with_hub_sources(text: str, entry: Entry, manifest: Manifest) -> str:
    """A kept dataset card whose ``source_datasets`` name local folders (the data a builder read) names the Hub data
    sets instead: the entry's (or the manifest's default) ``datasets`` that are Hub ids."""
    from huggingface_hub import DatasetCard

    meta = _card_metadata(text)
    sources = meta.get("source_datasets")
    if not isinstance(sources, list) or not any(isinstance(x, str) and looks_local(x) for x in sources):
        return text
    given = [_hub_id(manifest, d) for d in {**manifest.defaults, **entry.context}.get("datasets") or []]
    hub = [x for x in sources if isinstance(x, str) and not looks_local(x)]
    hub += [d for d in given if not looks_local(d) and d not in hub and d != manifest.repo_id(entry)]
    card = DatasetCard(text, ignore_metadata_errors=True)
    card.data.source_datasets = hub or None
    return card.content


def with_citation(text: str) -> str:
    """``text`` ending with the seed papers' BibTeX (added when it lacks them)."""
    if SEED_PAPERS_BIBTEX.splitlines()[0] in text:
        return text
    return text.rstrip("\n") + "\n\n" + render_card("_citation.md.j2")


@dataclass
class Row:
    """One line of the dry-run table."""

    name: str
    repo_id: str
    kind: str
    status: str  # assembled | missing | error | pushed
    files: int = 0
    bytes: int = 0
    card: str = ""
    results: int = 0
    folder: str = ""
    detail: str = ""
    load: str = ""  # what loading the upload folder as its card says gave (rirag.hub_load): ok ..., failed ..., ...

    def as_dict(self) -> dict:
        return {"name": self.name, "repo": self.repo_id, "kind": self.kind, "status": self.status,
                "files": self.files, "bytes": self.bytes, "card": self.card, "results": self.results,
                "load": self.load}


def assemble(entry: Entry, manifest: Manifest, root: str | Path = ".") -> Row:
    """Write ``OUT/<repo>/`` for one entry (atomically) and check its card; a missing source gives a missing row."""
    root = Path(root)
    row = Row(entry.name, manifest.repo_id(entry), entry.kind, "missing")
    out = root / manifest.out_dir / entry.repo
    with atomic_dir(out) as tmp:
        source = root / entry.source
        if not source.is_dir() or not any(source.iterdir()):
            row.detail = f"{entry.source}: not found"
            raise _Missing(row)
        keep_card = entry.card == "source"
        files = upload_files(source, EXCLUDE + tuple(entry.exclude))
        if not [f for f in files if f.as_posix() != CARD_FILE]:
            row.detail = f"{entry.source}: nothing to upload yet (only checkpoints, caches or a card)"
            raise _Missing(row)
        for rel in files:
            if rel.as_posix() == CARD_FILE and not keep_card:
                continue
            _copy(source / rel, tmp / rel)
        with_hub_base_model(tmp, entry, manifest)
        for src, dst in entry.vendor.items():  # library code a Space imports (not on PyPI)
            for rel in upload_files(root / src):
                _copy(root / src / rel, tmp / dst / rel)
        if not keep_card:
            atomic_write_text(tmp / CARD_FILE, publish_card(entry, manifest, source, root).render())
        elif (tmp / CARD_FILE).exists():  # a card kept from its source, completed for the Hub
            text = (tmp / CARD_FILE).read_text(encoding="utf-8")
            (tmp / CARD_FILE).unlink()
            text = with_usage(with_repo_ids(text, manifest), entry, manifest)
            if entry.repo_type == "model":
                text = complete_model_card(text, entry, manifest, root)
            elif entry.repo_type == "dataset":
                text = with_citation(with_hub_sources(text, entry, manifest))
            atomic_write_text(tmp / CARD_FILE, text)
        attributes = gitattributes(tmp)
        if attributes:
            atomic_write_text(tmp / ".gitattributes", attributes)
    files = [p for p in out.rglob("*") if p.is_file()]
    card = check_card(out / CARD_FILE, entry.repo_type)
    row.status, row.files, row.bytes = "assembled", len(files), sum(p.stat().st_size for p in files)
    row.card, row.results, row.folder = card["status"], card["results"], str(out)
    return row


def _check_metric_default(manifest: Manifest) -> None:
    """The metric's default obligation model is a fixed Hub id (rirag.scoring.constants.HUB_OBLIGATION_MODEL): a
    line when this manifest publishes the classifier elsewhere (another namespace), where that default is not it."""
    from rirag.scoring.constants import HUB_OBLIGATION_MODEL

    classifier = next((e for e in manifest.entries if e.card == ClassifierCard.TEMPLATE), None)
    metric = any(e.kind == "metric-space" for e in manifest.entries)
    if metric and classifier is not None and manifest.repo_id(classifier) != HUB_OBLIGATION_MODEL:
        logger.warning("the RePASs metric defaults to obligation_model=%s, but this manifest publishes the classifier "
                       "as %s: users of this namespace pass obligation_model=%r", HUB_OBLIGATION_MODEL,
                       manifest.repo_id(classifier), manifest.repo_id(classifier))


class _Missing(Exception):
    def __init__(self, row: Row):
        super().__init__(row.detail)
        self.row = row


def assemble_all(manifest: Manifest, root: str | Path = ".", only: list[str] | None = None) -> list[Row]:
    names = {e.name for e in manifest.entries}
    unknown = set(only or []) - names
    if unknown:
        raise ManifestError(f"--only: unknown entr(y/ies) {sorted(unknown)}; known: {', '.join(sorted(names))}")
    _check_metric_default(manifest)
    rows = []
    for entry in manifest.entries:
        if only and entry.name not in only:
            continue
        try:
            rows.append(assemble(entry, manifest, root))
        except _Missing as missing:  # an upload folder from an earlier run no longer matches anything: removed
            shutil.rmtree(Path(root) / manifest.out_dir / entry.repo, ignore_errors=True)
            rows.append(missing.row)
        except Exception as err:  # one bad artifact does not stop the others; its row says what went wrong
            logger.error("%s: %s: %s", entry.name, type(err).__name__, err, exc_info=not isinstance(err, CardError))
            rows.append(Row(entry.name, manifest.repo_id(entry), entry.kind, "error", detail=str(err)))
    return rows


# --------------------------------------------------------------------------------------------------
# Pushing
# --------------------------------------------------------------------------------------------------


#: The manifest a trainer's own push reads its Hub ids from (relative to the repository root a recipe runs in).
PROJECT_MANIFEST = "hub_push/manifest.yaml"


def hold_trainer_push(training_args: object) -> tuple[str, str] | None:
    """Turn a transformers / sentence-transformers Trainer's own Hub pushes off and say what to push instead.

    With ``push_to_hub`` a Trainer pushes every checkpoint and, on ``save_model`` / ``push_to_hub``, writes the
    library's generated README.md over the typed card. A trainer calls this before building its Trainer and, once
    its typed card is saved, :func:`push_trained` with what it returned: ``(output_dir, hub_model_id or the
    folder's name)``, None when no push was asked."""
    if not getattr(training_args, "push_to_hub", False):
        return None
    training_args.push_to_hub = False
    folder = str(training_args.output_dir)
    return folder, getattr(training_args, "hub_model_id", None) or Path(os.path.normpath(folder)).name


def push_trained(target: tuple[str, str] | None, manifest: str | Path = PROJECT_MANIFEST) -> str | None:
    """Push a trainer's saved folder (its typed card included) through :func:`push_folder`, as hub_push would: a
    copy without checkpoints, trainer states or card data (:data:`EXCLUDE`), with LFS rules, and any config naming a
    local base model (``adapter_config.json``) naming the Hub id the project manifest gives it."""
    import tempfile

    if target is None or not is_main_process():
        return None
    folder, repo_id = target
    plan = load_manifest(manifest) if Path(manifest).is_file() else Manifest(namespace="-", entries=[])
    with tempfile.TemporaryDirectory(prefix="rirag-push-") as tmp:
        copy = Path(tmp) / Path(folder).name
        for rel in upload_files(Path(folder)):
            _copy(Path(folder) / rel, copy / rel)
        with_hub_base_model(copy, Entry(name=repo_id, kind="model", repo=repo_id, source=folder), plan)
        attributes = gitattributes(copy)
        if attributes:
            atomic_write_text(copy / ".gitattributes", attributes)
        return push_folder(copy, repo_id)


def is_main_process() -> bool:
    """False on every process but the first under ``accelerate launch`` / torchrun (they set RANK)."""
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0


def hub_token(token: str | None = None) -> str:
    """``token``, else ``HF_TOKEN`` or the one ``hf auth login`` saved; HubTokenError when there is none."""
    from huggingface_hub import get_token

    token = token or get_token()
    if not token:
        raise HubTokenError(NO_TOKEN)
    return token


def access_error(err: BaseException, doing: str) -> HubAccessError | None:
    """The one-line HubAccessError for an exception raised while talking to the Hub; None when it is something else
    (a bug, a bad folder), which is left to propagate."""
    from huggingface_hub import errors

    if isinstance(err, HubAccessError):
        return err
    if isinstance(err, errors.OfflineModeIsEnabled):
        return HubAccessError(f"cannot {doing}: HF_HUB_OFFLINE is set (the Makefile sets it for everything but "
                              "`make publish DRY_RUN=0`); unset it or set HF_HUB_OFFLINE=0")
    if isinstance(err, errors.HfHubHTTPError):
        status = getattr(getattr(err, "response", None), "status_code", None)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if status in (401, 403):
            return HubTokenError(f"cannot {doing}: the Hub refused the token (HTTP {status}); check HF_TOKEN or run "
                                 "`hf auth login` with a token that can write")
        return HubAccessError(f"cannot {doing}: the Hub answered HTTP {status}: {first}")
    transport = tuple(t for t in (getattr(errors, "HTTPError", None),) if isinstance(t, type))
    try:
        import requests

        transport += (requests.RequestException,)
    except ImportError:
        pass
    if isinstance(err, transport + (ConnectionError, TimeoutError)):
        reason = " ".join(str(err).split()) or type(err).__name__
        return HubAccessError(f"cannot {doing}: the Hub cannot be reached ({reason}); check the network "
                              "(and HF_ENDPOINT if set)")
    return None


def check_hub_access(token: str | None = None) -> str:
    """The user name the token belongs to; HubTokenError / HubAccessError (one line) when pushing cannot work."""
    from huggingface_hub import HfApi

    token = hub_token(token)
    try:
        info = HfApi(token=token).whoami()
    except Exception as err:
        mapped = access_error(err, "check the Hugging Face token")
        if mapped is None:
            raise
        raise mapped from err
    return str(info.get("name", "?")) if isinstance(info, dict) else "?"


def push_folder(folder: str | Path, repo_id: str, repo_type: str = "model", *, private: bool | None = None,
                create_pr: bool = False, commit_message: str | None = None, token: str | None = None,
                space_sdk: str | None = None, space_variables: dict | None = None,
                path_in_repo: str | None = None) -> str | None:
    """Create the repo if needed and upload ``folder``; the only place rirag talks to the Hub.

    Returns the commit (or pull-request) URL; None on a non-main process. The token comes from ``token``,
    ``HF_TOKEN`` or ``hf auth login``.
    """
    from huggingface_hub import HfApi

    if not is_main_process():
        logger.info("not the main process: %s is pushed by rank 0", repo_id)
        return None
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"nothing to push: {folder} is not a folder")
    token = hub_token(token)
    api = HfApi(token=token)
    if repo_type == "space" and space_sdk is None:
        space_sdk = "gradio"
    extra = {}
    if repo_type == "space" and space_variables:  # set when the Space is created (an existing one keeps its own)
        extra["space_variables"] = [{"key": k, "value": str(v)} for k, v in space_variables.items()]
    try:
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, space_sdk=space_sdk, **extra)
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type=repo_type,
                                 path_in_repo=path_in_repo, create_pr=create_pr,
                                 commit_message=commit_message or f"rirag: upload {folder.name}")
    except Exception as err:
        mapped = access_error(err, f"push {repo_id}")
        if mapped is None:
            raise
        raise mapped from err
    url = getattr(info, "pr_url", None) or getattr(info, "commit_url", None) or str(info)
    logger.info("pushed %s to %s (%s): %s", folder, repo_id, repo_type, url)
    return url


def push_all(manifest: Manifest, rows: list[Row], *, private: bool | None = None,
             create_pr: bool | None = None) -> list[Row]:
    """Push every assembled row whose card parses and that loads as its card says (when checked); missing or broken
    ones are left as they are. A HubAccessError stops the push and names what was already pushed."""
    entries = {e.name: e for e in manifest.entries}
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}  # a Space variable may name another entry
    for row in rows:
        if row.status != "assembled":
            continue
        if row.card != "ok":
            row.detail = f"not pushed: card {row.card}"
            continue
        if row.load.startswith("failed"):
            row.detail = f"not pushed: it does not load as its card says ({row.load})"
            continue
        entry = entries[row.name]
        variables = {k: ids.get(v, v) for k, v in entry.space_variables.items()}
        try:
            row.detail = push_folder(row.folder, row.repo_id, entry.repo_type, space_variables=variables or None,
                                     private=manifest.private if private is None else private,
                                     create_pr=manifest.create_pr if create_pr is None else create_pr,
                                     commit_message=f"rirag hub_push: {entry.name}") or ""
        except HubAccessError as err:
            done = [r.repo_id for r in rows if r.status == "pushed"]
            raise type(err)(f"{err} (pushed before this: {', '.join(done) if done else 'nothing'})") from err
        row.status = "pushed"
    return rows
