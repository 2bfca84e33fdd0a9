"""The codebase's shape: no function in src/ longer than 80 lines (split one along its own steps instead)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
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


def test_no_function_in_src_is_over_80_lines():
    assert long_functions() == []


def test_the_walk_does_find_long_functions():
    """The check above could fail: at a lower limit it reports functions."""
    assert long_functions(limit=20)
