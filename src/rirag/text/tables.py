"""The tables of ObliQA passages (the lines between ``/Table Start`` and ``/Table End``, cells separated by tabs) as
answer units: one per row, carrying its column headers ("Header 1: cell; Header 2: cell."), so a row can be quoted
and cited alone (:func:`table_rows`; :func:`take_tables` separates a passage's tables from its prose)."""

from __future__ import annotations

import re

from rirag.text.lines import CLOSING, HEADING_MAX_WORDS, normalise

#: The markers around a table in ObliQA passages.
TABLE_START, TABLE_END = "Table Start", "Table End"
#: Symbols of table cells, written plainly (a Wingdings tick in ADGM tables; the left-to-right mark).
CELL_SYMBOLS = str.maketrans({"\uf0fc": "✓", "\u200e": None})
#: A line that opens a table row by its label ("Chapter 9: …", "APP 1: …").
_ROW_LABEL = re.compile(r"^\W*[A-Z][A-Za-z]*\s+\d+[A-Za-z]?\s*:")


def take_tables(lines: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[tuple[str, int, int, str]]]:
    """(the lines outside tables, the row units of the tables: (text, start, end, label)). A sentence between the
    start marker and the first tabbed line (an introduction) stays with the prose."""
    other: list[tuple[int, str]] = []
    rows: list[tuple[str, int, int, str]] = []
    table: list[tuple[int, str]] | None = None
    for start, line in lines:
        if table is None and TABLE_START in line:
            table = []
        elif table is not None and TABLE_END in line:
            rows.extend(table_rows(table, other))
            table = None
        elif table is not None:
            table.append((start, line))
        else:
            other.append((start, line))
    if table:
        rows.extend(table_rows(table, other))
    return sorted(other), rows


def table_rows(lines: list[tuple[int, str]],
               prose: list[tuple[int, str]] | None = None) -> list[tuple[str, int, int, str]]:
    """The rows of one table (its lines with their offsets, markers excluded) as units ``(text, start, end, label)``
    (the label: the row's first cell): each
    row "Header 1: cell; Header 2: cell." (empty cells left out). The header is the first row; a row is complete
    at one cell per column (the most tabs on a line, plus one); a line goes on the current row unless the row is
    complete and the line has a tab, or the line opens with a row label ("Chapter 9:", the first row's first
    word). A first row with a cell longer than a heading is a row: the table has no header. Sentences before the
    first tabbed line go to ``prose``."""
    lines = [(start, line.translate(CELL_SYMBOLS)) for start, line in lines]
    first_tab = next((i for i, (_, line) in enumerate(lines) if "\t" in line), None)
    if first_tab is None:
        (prose if prose is not None else []).extend(lines)
        return []
    head = 0
    while head < first_tab and CLOSING.search(lines[head][1].strip()):  # an introduction, not a header
        head += 1
    if prose is not None:
        prose.extend(lines[:head])
    columns = 1 + max(line.count("\t") for _, line in lines)
    groups: list[list[tuple[int, str]]] = []
    anchor = None
    for start, line in lines[head:]:
        current = groups[-1] if groups else None
        complete = current is not None and sum(x.count("\t") for _, x in current) >= columns - 1
        label = _ROW_LABEL.match(line) or (anchor and line.strip().split()[:1] == [anchor])
        if current is None or (complete and "\t" in line) or (len(groups) > 1 and label):
            groups.append([(start, line)])
            if len(groups) == 2:
                anchor = next(iter(line.strip().split()), None)
                anchor = anchor if anchor and anchor.isalpha() else None
        else:
            current.append((start, line))
    header = _cells(groups[0], columns)
    if any(len(h.split()) > HEADING_MAX_WORDS for h in header):  # a first row of prose: the table has no header
        header, groups = [""] * columns, [[], *groups]
    out = []
    for group in groups[1:]:
        cells = _cells(group, columns)
        parts = [f"{h}: {c}" if h else c for h, c in zip(header + [""] * columns, cells) if c]
        text = normalise("; ".join(parts)).rstrip(".;:, ")
        if text:
            out.append((f"{text}.", group[0][0], group[-1][0] + len(group[-1][1]), cells[0] if cells else ""))
    return out


def _cells(group: list[tuple[int, str]], columns: int) -> list[str]:
    """A row's cells: its lines joined, split at tabs; too few cells: the first cell's lines are split into cells
    (a label on its own line, then the first column's value); too many: the rest joins the last cell."""
    cells = "\n".join(line for _, line in group).split("\t")
    while len(cells) < columns and "\n" in cells[0].strip():
        label, rest = cells[0].strip().split("\n", 1)
        cells[:1] = [label, rest]
    if len(cells) > columns:
        cells[columns - 1:] = [" ".join(cells[columns - 1:])]
    return [normalise(c) for c in cells]
