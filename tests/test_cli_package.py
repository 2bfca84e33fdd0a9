"""The command-line code is one package, rirag/cli/: the library parses no arguments and picks no exit status."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rirag"
LIBRARY = sorted(p for p in SRC.rglob("*.py") if SRC / "cli" not in p.parents)
#: A literal exit status where the library should raise a typed error for the command to map (a function may still
#: return the number 1 or 2 as a value; the statuses of the command are 2, 3 and 130).
LITERAL_EXIT = re.compile(r"\breturn (?:2|3|130)\s*$|\bexit\(\d+\)|SystemExit\(\d+\)", re.MULTILINE)


def test_no_argparse_outside_the_cli_package():
    assert LIBRARY, SRC
    assert [str(p.relative_to(SRC)) for p in LIBRARY if "argparse" in p.read_text(encoding="utf-8")] == []


def test_no_literal_exit_status_outside_the_cli_package():
    hits = [f"{p.relative_to(SRC)}: {m.group(0).strip()}" for p in LIBRARY
            for m in LITERAL_EXIT.finditer(p.read_text(encoding="utf-8"))]
    assert hits == []


def test_the_exit_codes_are_one_table():
    from rirag.cli import exit_codes

    codes = {name: value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}
    assert codes == {"EXIT_OK": 0, "EXIT_USAGE": 2, "EXIT_GENERATION_ERROR": 3, "EXIT_INTERRUPTED": 130}
    assert len(set(codes.values())) == len(codes)
