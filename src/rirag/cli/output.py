"""What the command prints besides answers: plain Markdown tables (the benchmarks and docs use the same)."""

from __future__ import annotations


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain Markdown table; floats with 4 decimals, as the benchmarks store them (docs/results.md prints
    the same)."""
    def cell(v):
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 passage``, ``2 passages``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
