"""Every name a script (scripts/, train/, benchmarks/) imports from rirag exists there: a script is run by hand or by
`make`, not by the tests, so a name moved inside the package (PASSAGE_GENERATORS from generation.base to
generation.registry) broke `make demo` with no test failing."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def rirag_imports(path: Path) -> list[tuple[str, str, int]]:
    """(module, name, line) of each ``from rirag... import name`` in ``path``, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(node.module, alias.name, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            and node.module.split(".")[0] == "rirag" for alias in node.names]


def missing(imports: list[tuple[str, str, int]]) -> list[str]:
    out = []
    for module, name, line in imports:
        mod = importlib.import_module(module)
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ModuleNotFoundError:
                out.append(f"{module}.{name} (line {line})")
    return out


SCRIPTS = sorted(p for d in ("scripts", "train", "benchmarks") for p in (ROOT / d).glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_rirag_name_a_script_imports_exists(script):
    assert missing(rirag_imports(script)) == []


def test_the_check_finds_a_name_that_moved(tmp_path):
    script = tmp_path / "demo.py"
    script.write_text("from rirag.generation.base import DEFAULT_GENERATOR, PASSAGE_GENERATORS\n", encoding="utf-8")
    assert missing(rirag_imports(script)) == ["rirag.generation.base.PASSAGE_GENERATORS (line 1)"]
