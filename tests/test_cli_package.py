"""The command-line code is one package, rirag/cli/: the library parses no arguments and picks no exit status; every
exit status of the project is in one table, rirag/exit_codes.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rirag"
REPO = SRC.parents[1]
TABLE = SRC / "exit_codes.py"
LIBRARY = sorted(p for p in SRC.rglob("*.py") if SRC / "cli" not in p.parents and p != TABLE)
#: A literal exit status where the library should raise a typed error for the command to map (a function may still
#: return the number 1 or 2 as a value; the statuses of the command are 2, 3 and 130).
LITERAL_EXIT = re.compile(r"\breturn (?:2|3|130)\s*$|\bexit\(\d+\)|SystemExit\(\d+\)", re.MULTILINE)
#: A number returned as it is, or one of two (``return 1 if failed else 0``).
BARE_RETURN = re.compile(r"\breturn (?:\d+|\d+ if .* else \d+)\s*$", re.MULTILINE)
#: The code that does pick an exit status: the command, the trainers' runner, the batch scripts.
EXIT_PICKERS = [*sorted((SRC / "cli").glob("*.py")), SRC / "training" / "runner.py", REPO / "scripts" / "models.py",
                REPO / "hub_push" / "push.py"]


def _exit_constants(path: Path) -> dict[str, object]:
    """``EXIT_* = <literal>`` assignments at a module's top."""
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.startswith("EXIT_"):
                    found[target.id] = node.value.value
    return found


def test_no_argparse_outside_the_cli_package():
    assert LIBRARY, SRC
    assert [str(p.relative_to(SRC)) for p in LIBRARY if "argparse" in p.read_text(encoding="utf-8")] == []


def test_no_literal_exit_status_outside_the_cli_package():
    hits = [f"{p.relative_to(SRC)}: {m.group(0).strip()}" for p in LIBRARY
            for m in LITERAL_EXIT.finditer(p.read_text(encoding="utf-8"))]
    assert hits == []


def test_the_exit_codes_are_one_table():
    from rirag import exit_codes

    codes = {name: value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}
    assert codes == {"EXIT_OK": 0, "EXIT_SOME_FAILED": 1, "EXIT_USAGE": 2, "EXIT_GENERATION_ERROR": 3,
                     "EXIT_INTERRUPTED": 130, "EXIT_TERMINATED": 143}
    assert len(set(codes.values())) == len(codes)
    assert _exit_constants(TABLE) == codes  # the table's own literals


def test_no_other_module_defines_an_exit_status():
    """Only the table assigns an ``EXIT_*`` number; every other module imports the names from it."""
    others = [p for p in sorted(SRC.rglob("*.py")) if p != TABLE]
    assert {str(p.relative_to(SRC)): _exit_constants(p) for p in others if _exit_constants(p)} == {}


def test_the_code_that_exits_returns_names_from_the_table():
    """The command, the trainers' runner and the batch scripts return ``EXIT_*`` names, not numbers."""
    hits = [f"{p.relative_to(REPO)}: {m.group(0).strip()}" for p in EXIT_PICKERS
            for m in BARE_RETURN.finditer(p.read_text(encoding="utf-8"))]
    assert hits == []


def test_the_guards_can_fail(tmp_path):
    """The checks above could fail: a module with its own exit number and a bare ``return 2`` is reported."""
    module = tmp_path / "m.py"
    module.write_text("EXIT_REFUSED = 2\n\n\ndef run():\n    return 2\n")
    assert _exit_constants(module) == {"EXIT_REFUSED": 2}
    assert LITERAL_EXIT.search(module.read_text())
    assert BARE_RETURN.search("    return 1 if broken else 0\n") and BARE_RETURN.search(module.read_text())
