"""The codebase's shape: no function in src/ or train/ longer than 80 lines (split one along its own steps instead:
a trainer's main along its ``# Load datasets`` / ``# Model`` / ``# Training loop`` / ``# Save and push`` banners)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
CHECKED = (SRC, ROOT / "train")
MAX_LINES = 80


def long_functions(root: Path = SRC, limit: int = MAX_LINES) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root)}: {node.name} ({lines} lines)")
    return found


@pytest.mark.parametrize("root", CHECKED, ids=lambda p: p.name)
def test_no_function_is_over_80_lines(root):
    assert long_functions(root) == []


@pytest.mark.parametrize("root", CHECKED, ids=lambda p: p.name)
def test_the_walk_does_find_long_functions(root):
    """The check above could fail: at a lower limit it reports functions."""
    assert long_functions(root, limit=20)
