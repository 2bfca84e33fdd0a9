"""Every Sphinx-style reference in the docstrings of src/rirag resolves: ``:mod:`` / ``:func:`` / ``:class:`` /
``:data:`` / ``:attr:`` / ``:meth:`` / ``:exc:`` targets, and bare ``rirag.x.y`` names in backticks. A dotted
``rirag`` path imports its longest module prefix and reads the rest as attributes; any other name (``FEATURES``,
``.prompts``, ``RePASsScorer.score``) resolves from the module the docstring is in (a leading dot: from its
package)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROLE = re.compile(r":(?:mod|func|class|data|attr|meth|exc|obj|const):`~?(\.?[A-Za-z_][\w.]*)`")
BARE = re.compile(r"(?<![\w.])(rirag(?:\.[A-Za-z_]\w*)+)")
BACKTICKED = re.compile(r"``([^`]+)``|(?<!`)`([^`]+)`(?!`)")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstrings(node: ast.AST, cls: str | None = None):
    """(line, text, enclosing class) of the module's docstring and of every class and function docstring in it."""
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(node, ast.ClassDef):
            cls = node.name if cls is None else f"{cls}.{node.name}"
        text = ast.get_docstring(node, clean=False)
        if text:
            yield getattr(node, "lineno", 1), text, cls
    for child in ast.iter_child_nodes(node):
        yield from docstrings(child, cls)


def references(text: str) -> list[str]:
    """The role targets and the backticked ``rirag.`` names of one docstring."""
    found = ROLE.findall(text)
    for double, single in BACKTICKED.findall(ROLE.sub("", text)):
        found += BARE.findall(double or single)
    return found


def _attr(obj, names: list[str]):
    for name in names:
        if hasattr(obj, name):
            obj = getattr(obj, name)
        elif dataclasses.is_dataclass(obj) and name in {f.name for f in dataclasses.fields(obj)}:
            obj = None  # a field without a class-level default
        else:
            raise AttributeError(name)
    return obj


def resolve(target: str, module: str, cls: str | None = None) -> None:
    """Import/getattr ``target`` as seen from ``module`` (and from class ``cls`` of it, for a docstring inside a
    class); raises when it does not resolve."""
    here = importlib.import_module(module)
    if target.startswith("."):
        package = module if Path(here.__file__).name == "__init__.py" else module.rpartition(".")[0]
        target = f"{package}{target}"
    parts = target.split(".")
    if parts[0] == "rirag":
        _resolve_dotted(parts)
        return
    if cls is not None:
        try:
            _attr(_attr(here, cls.split(".")), parts)
            return
        except AttributeError:
            pass
    if hasattr(here, parts[0]):
        _attr(here, parts)
        return
    try:  # another library's name (:mod:`filelock`, :class:`datasets.Dataset`)
        _resolve_dotted(parts)
    except (ImportError, AttributeError):
        raise AttributeError(f"{target} (not a name of {module}{f'.{cls}' if cls else ''})") from None


def _resolve_dotted(parts: list[str]) -> None:
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        _attr(obj, parts[cut:])
        return
    raise ImportError(".".join(parts))


def all_references():
    for path in sorted(SRC.rglob("*.py")):
        module = module_name(path)
        for line, text, cls in docstrings(ast.parse(path.read_text(encoding="utf-8"))):
            for target in references(text):
                yield module, line, target, cls


def unresolved() -> list[str]:
    bad = []
    for module, line, target, cls in all_references():
        try:
            resolve(target, module, cls)
        except (ImportError, AttributeError) as err:
            bad.append(f"{module} (docstring at line {line}): {target} ({type(err).__name__}: {err})")
    return bad


def test_every_docstring_reference_resolves():
    assert unresolved() == []


def test_the_references_are_found():
    """The walk sees the references it should check (so an empty list of failures means something)."""
    found = {(m, t) for m, _, t, _ in all_references()}
    assert ("rirag.generation.render", "rirag.text.citations.with_citation") in found  # a :func: target
    assert len(found) > 100


@pytest.mark.parametrize("target", ["rirag.text.citations.no_such_name", "rirag.no_such_module", "NoSuchName",
                                    ".no_such_module"])
def test_a_broken_reference_is_reported(target):
    with pytest.raises((ImportError, AttributeError)):
        resolve(target, "rirag.generation.render")


def test_roles_and_bare_names_are_read():
    text = "See :func:`~rirag.generation.render.render`, :data:`FEATURES` and ``rirag.scoring.core`` (`rirag.io`)."
    assert references(text) == ["rirag.generation.render.render", "FEATURES", "rirag.scoring.core", "rirag.io"]
