"""scripts/demo.py (what `make demo` runs): its printed sections are numbered 1, 2, 3, ... with no gap, in the order
the docstring's steps describe them."""

from __future__ import annotations

import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "demo.py"


def test_the_demo_sections_are_numbered_without_gaps():
    source = SCRIPT.read_text(encoding="utf-8")
    printed = [int(n) for n in re.findall(r'out\(f?"(?:\\n)*# (\d+)\. ', source)]
    assert printed == list(range(1, len(printed) + 1)) and len(printed) >= 4, printed
    doc = source.split('"""')[1]
    steps = [int(n) for n in re.findall(r"\((\d+)\) ", doc)]
    assert steps == printed, (steps, printed)
