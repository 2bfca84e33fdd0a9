"""The publishing manifest (``hub_push/manifest.yaml``): its entries, loaded and checked."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rirag.hub.cards import (
    CardError,
    read_results,
)

#: Manifest kinds and the Hub repo type each is pushed as.
REPO_TYPES = {"dataset": "dataset", "model": "model", "adapter": "model", "metric-space": "space",
              "app-space": "space"}
#: Environment variable that overrides the manifest's namespace (a user or organisation on the Hub).
NAMESPACE_ENV = "RIRAG_HUB_NAMESPACE"


#: All a builder-only entry's upload folder may hold: its card (how to build the data) and the Hub's attributes file.
BUILDER_ONLY_FILES = frozenset({"README.md", ".gitattributes"})


def builder_only_extras(folder: Path) -> list[str]:
    """The files of an upload folder a builder-only entry may not publish (relative paths, sorted)."""
    return sorted(p.relative_to(folder).as_posix() for p in Path(folder).rglob("*")
                  if p.is_file() and p.relative_to(folder).as_posix() not in BUILDER_ONLY_FILES)


class ManifestError(ValueError):
    """A manifest that cannot be used (unknown kind, missing field, duplicate name)."""


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
    vendor: dict = field(default_factory=dict)  # {"src/rirag": "rirag"}: library code a Space imports; a file too
    space_variables: dict = field(default_factory=dict)  # a Space's variables at creation (entry names -> repo ids)
    results_artifact: str | None = None  # whose result rows fill the card (default: source), e.g. a merged
    #                                      model's card takes the rows of the adapter it was merged from
    builder_only: bool = False  # upload the card alone, no file of the source: the source's terms do not allow
    #                             redistributing its text; the card says how to build it (the numbers from the source)

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
    #: The Gradio version every Space card pins (``sdk_version``): the one the load check starts the Spaces with.
    space_sdk_version: str = ""

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
        if not isinstance(item.get("builder_only", False), bool):
            raise ManifestError(f"{where}: builder_only must be true or false, not {item['builder_only']!r}")
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
                    defaults=raw.get("defaults") or {}, space_sdk_version=str(raw.get("space_sdk_version") or ""))


# --------------------------------------------------------------------------------------------------
# Pushing
# --------------------------------------------------------------------------------------------------


#: The manifest a trainer's own push reads its Hub ids from (relative to the repository root a recipe runs in).
PROJECT_MANIFEST = "hub_push/manifest.yaml"


def read_config(path: Path) -> dict:
    data = read_results(path)
    if not isinstance(data, dict):
        raise CardError(f"{path}: expected a JSON object")
    return data
