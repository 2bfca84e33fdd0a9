"""The card of each manifest entry: template context, measured results for the model-index,
usage snippets, repo ids in place of local paths."""

from __future__ import annotations

import logging
import re
from dataclasses import asdict
from pathlib import Path

from rirag.hub.card_data import (
    WORDS,
    CardData,
    card_type,
    load_card_data,
)
from rirag.hub.card_kinds import card_kind, hub_id
from rirag.hub.cards import (
    SEED_PAPERS_BIBTEX,
    CardError,
    collect_results,
    eval_results,
    model_index,
    render_card,
    results_table,
)
from rirag.hub.load import code_blocks
from rirag.hub.manifest import Entry, Manifest, read_config
from rirag.io import WEIGHTS_FINGERPRINT, weights_fingerprint
from rirag.models import looks_local

logger = logging.getLogger(__name__)


def recorded_command(entry: Entry, root: Path) -> str | None:
    """The command an artifact records about itself (``command_from``: a JSON file, ``{source}`` expanded)."""
    if not entry.command_from:
        return None
    path = root / entry.command_from.format(source=entry.source or "")
    if not path.exists():
        return None
    data = read_config(path)
    command = data.get("command")
    return str(command) if command else None


def _publish_values(entry: Entry, manifest: Manifest, saved: CardData | None) -> dict:
    """The card's fields before publishing adds its own: the saved card data (the artifact's record) with the
    manifest's words over it (:data:`rirag.hub.card_data.WORDS`); without card data, the manifest's defaults and
    context."""
    words = {k: v for k, v in {**manifest.defaults, **entry.context}.items() if k not in LICENSE_KEYS}
    if saved is None:
        return words
    values = asdict(saved)
    values.update({k: v for k, v in words.items() if k in WORDS})
    return values


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
    kind = card_kind(cls)
    extra = kind.context(entry, manifest, folder, root) if kind.context and saved is None else {}
    recorded = extra.pop("recorded_command", None)  # (read only for kinds whose producer saves no card data yet)
    values["settings"] = dict(values.get("settings") or {}) | extra.pop("settings", {})
    values.update(extra)
    card = cls.from_dict(values, where=f"{entry.name}: card context")
    card.datasets = [hub_id(manifest, x) for x in card.datasets or []]
    if card.base_model:
        card.base_model = hub_id(manifest, card.base_model)
        given = {**manifest.defaults, **entry.context}.get("base_model")
        if given and looks_local(card.base_model):  # an unpublished start model (the entailment-tuned encoder a
            card.base_model = hub_id(manifest, given)  # contrastive run began from): the manifest's base model
    if kind.publish:  # the kind's own ids and publish-time facts
        kind.publish(card, entry, manifest, folder, saved)
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


def card_metadata(text: str) -> dict:
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
    meta = card_metadata(text)
    configs = []
    for config in meta.get("configs") or []:
        files = config.get("data_files")
        split = files[0].get("split", "train") if isinstance(files, list) and files and isinstance(files[0], dict) \
            else "train"
        configs.append({"name": config.get("config_name", "default"), "split": split})
    if [c["name"] for c in configs] == ["default"]:  # one config: the snippet loads it whole, every split
        configs = []
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

    meta = card_metadata(text)
    sources = meta.get("source_datasets")
    if not isinstance(sources, list) or not any(isinstance(x, str) and looks_local(x) for x in sources):
        return text
    given = [hub_id(manifest, d) for d in {**manifest.defaults, **entry.context}.get("datasets") or []]
    hub = [x for x in sources if isinstance(x, str) and not looks_local(x)]
    hub += [d for d in given if not looks_local(d) and d not in hub and d != manifest.repo_id(entry)]
    card = DatasetCard(text, ignore_metadata_errors=True)
    card.data.source_datasets = hub or None
    return card.content


#: Context keys written into a card's front matter by :func:`with_license_name`, never card data fields.
LICENSE_KEYS = ("license_name", "license_link")


def with_license_name(text: str, entry: Entry, manifest: Manifest) -> str:
    """A card whose licence is ``other`` names it (``license_name``, and ``license_link`` when known): from the
    card's own front matter, else the entry's context; a CardError when neither names it."""
    meta = card_metadata(text)
    if meta.get("license") != "other" or meta.get("license_name"):
        return text
    words = {**manifest.defaults, **entry.context}
    if not words.get("license_name"):
        raise CardError(f"{entry.name}: `license: other` needs a license_name (and license_link if known) in the "
                        "entry's context")
    lines = "".join(f"\n{key}: {words[key]}" for key in LICENSE_KEYS if words.get(key))
    return re.sub(r"^(license: other)$", lambda m: m.group(1) + lines, text, count=1, flags=re.M)


def with_sdk_version(text: str, entry: Entry, manifest: Manifest) -> str:
    """A Space card pinning the manifest's ``space_sdk_version`` (the Gradio the Hub installs for it): the line
    after ``sdk:`` in its front matter, replacing any pin it had."""
    if not manifest.space_sdk_version:
        raise CardError(f"{entry.name}: the manifest names no space_sdk_version (the Gradio its Spaces pin)")
    head, sep, body = text[3:].partition("\n---")
    if not text.startswith("---") or not re.search(r"^sdk:", head, re.M):
        raise CardError(f"{entry.name}: the Space card has no front matter with an `sdk:` line")
    head = re.sub(r"^sdk_version:.*\n?", "", head, flags=re.M)
    head = re.sub(r"^(sdk:.*)$", lambda m: f"{m.group(1)}\nsdk_version: {manifest.space_sdk_version}", head,
                  count=1, flags=re.M)
    return "---" + head + sep + body


def with_citation(text: str) -> str:
    """``text`` ending with the seed papers' BibTeX (added when it lacks them)."""
    if SEED_PAPERS_BIBTEX.splitlines()[0] in text:
        return text
    return text.rstrip("\n") + "\n\n" + render_card("_citation.md.j2")

