"""Publish rirag's artifacts to the Hugging Face Hub: assemble exact upload folders from a manifest, then push.

``hub_push/push.py`` is the command line; trainers' ``--push_to_hub`` goes through
:func:`~rirag.hub.push.push_trained` (the Trainer's own pushes held by :func:`~rirag.hub.push.hold_trainer_push`),
which uses :func:`~rirag.hub.push.push_folder` too.

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
upload folder, if any, is removed). :mod:`rirag.hub.load` then loads each upload folder as its card's usage
snippet says.

Pushing needs a token and the Hub: :func:`~rirag.hub.push.check_hub_access` checks both before anything is assembled,
and every failure to reach the Hub is a :class:`~rirag.hub.push.HubAccessError` with a one-line message.
"""

from __future__ import annotations

import fnmatch
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from rirag.hub.card_data import (
    CARD_DATA_FILE,
    CARD_FILE,
    ClassifierCard,
)
from rirag.hub.cards import (
    CardError,
    check_card,
    with_install,
)
from rirag.hub.entry_cards import (
    card_metadata,
    complete_model_card,
    publish_card,
    with_citation,
    with_hub_sources,
    with_license_name,
    with_repo_ids,
    with_sdk_version,
    with_usage,
)
from rirag.hub.eval_results import write_eval_results
from rirag.hub.manifest import Entry, Manifest, ManifestError, builder_only_extras, read_config
from rirag.hub.vendor import has_vendored_block, write_vendored
from rirag.io import atomic_dir, atomic_write_text
from rirag.models import looks_local
from rirag.retrieval.learned_fusion import CONFIG_FILE

logger = logging.getLogger(__name__)
#: Never uploaded: trainer checkpoints and states, caches, logs, temporary files.
EXCLUDE = ("checkpoint-*", "runs", "logs", "optimizer.pt", "scheduler.pt", "rng_state*.pth", "trainer_state.json",
           "training_args.bin", "__pycache__", "*.pyc", ".cache", "cache-*.arrow", "*.lock", ".*.tmp", ".*.old",
           ".ipynb_checkpoints", ".DS_Store", ".git", ".gitattributes", ".pytest_cache",
           CARD_DATA_FILE)  # the card data is rendered into README.md; its local paths mean nothing on the Hub
#: Stored with Git LFS on the Hub (by extension); any other file above LFS_MIN_BYTES is added by name.
LFS_EXTENSIONS = ("arrow", "bin", "gguf", "h5", "joblib", "model", "msgpack", "npy", "npz", "onnx", "ot", "parquet",
                  "pkl", "png", "pt", "pth", "safetensors", "tflite", "zip", "gz")
LFS_MIN_BYTES = 10 * 1024 * 1024


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
            config = read_config(path)
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
    config = read_config(path)
    encoders = config.get("encoders")
    if not isinstance(encoders, list) or not any(isinstance(e, str) and looks_local(e) for e in encoders):
        return
    hub = [manifest.hub_id_of(e) or e for e in encoders]
    local = [e for e in hub if looks_local(e)]
    if local:
        raise CardError(f"{entry.name}: {path.name} names encoder(s) {local} that no manifest entry publishes")
    config["encoders"] = hub
    atomic_write_text(path, json.dumps(config, indent=2) + "\n")



def check_builder_only(folder: Path, entry: Entry) -> None:
    """A builder-only upload folder holds its card and nothing else (no data, no vendored code): a CardError
    naming what else is there."""
    extra = builder_only_extras(folder)
    if extra:
        raise CardError(f"{entry.name}: builder-only, yet its upload folder holds {', '.join(extra[:5])}"
                        f"{' ...' if len(extra) > 5 else ''}")


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
    load: str = ""  # what loading the upload folder as its card says gave (rirag.hub.load): ok ..., failed ..., ...
    paths: tuple[str, ...] = ()  # the upload folder's files as assembled (relative, sorted): all the push uploads

    def as_dict(self) -> dict:
        return {"name": self.name, "repo": self.repo_id, "kind": self.kind, "status": self.status,
                "files": self.files, "bytes": self.bytes, "card": self.card, "results": self.results,
                "load": self.load}


def check_license_link(text: str, entry: Entry, folder: Path) -> None:
    """A ``license_link`` that is not a URL names a file of the upload folder (the Hub links it from the repo)."""
    link = str(card_metadata(text).get("license_link") or "")
    if link and "://" not in link and not (folder / link).is_file():
        raise CardError(f"{entry.name}: license_link {link!r} is neither a URL nor a file of the upload (add it "
                        f"with the entry's vendor: {{FILE: {link}}})")


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
        if entry.builder_only and keep_card:
            raise CardError(f"{entry.name}: a builder-only entry needs a card template (its source's card may "
                            "describe the data it is not allowed to carry)")
        files = [] if entry.builder_only else upload_files(source, EXCLUDE + tuple(entry.exclude))
        if not entry.builder_only and not [f for f in files if f.as_posix() != CARD_FILE]:
            row.detail = f"{entry.source}: nothing to upload yet (only checkpoints, caches or a card)"
            raise _Missing(row)
        for rel in files:
            if rel.as_posix() == CARD_FILE and not keep_card:
                continue
            _copy(source / rel, tmp / rel)
        with_hub_base_model(tmp, entry, manifest)
        for src, dst in entry.vendor.items():  # library code a Space imports (not on PyPI), a licence file
            if (root / src).is_file():
                _copy(root / src, tmp / dst)
                continue
            for rel in upload_files(root / src):
                _copy(root / src / rel, tmp / dst / rel)
        if entry.kind == "metric-space" and has_vendored_block(tmp):  # the scorer beside the script, from src/
            write_vendored(tmp)
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
        if (tmp / CARD_FILE).exists():
            text = with_install((tmp / CARD_FILE).read_text(encoding="utf-8"))  # every card says how to install
            text = with_license_name(text, entry, manifest)
            check_license_link(text, entry, tmp)
            if entry.repo_type == "model":  # the same measured numbers where the Hub now reads them too
                write_eval_results(tmp, text, manifest.repo_id(entry))
            atomic_write_text(tmp / CARD_FILE, with_sdk_version(text, entry, manifest)
                              if entry.repo_type == "space" else text)
        attributes = gitattributes(tmp)
        if attributes:
            atomic_write_text(tmp / ".gitattributes", attributes)
        if entry.builder_only:
            check_builder_only(tmp, entry)
    files = [p for p in out.rglob("*") if p.is_file()]
    card = check_card(out / CARD_FILE, entry.repo_type)
    row.status, row.files, row.bytes = "assembled", len(files), sum(p.stat().st_size for p in files)
    row.paths = tuple(sorted(p.relative_to(out).as_posix() for p in files))
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
