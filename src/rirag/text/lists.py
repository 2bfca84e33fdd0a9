"""The lists of answer units (:mod:`rirag.text.units`): a list unit's lead-in and top-level items as spans of its
passage (:func:`list_items`: a nested sub-list stays with its item), and a list unit quoting only some of its items
(:func:`focus_items`), an elision mark where items are left out."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from rirag.text.lines import LIST_LABEL, is_item, normalise
from rirag.text.units import ELISION, Unit


def _label(line: str) -> tuple[tuple, str]:
    """A list item's label as (its form: bracket, closing mark, kind; its token): "(a)" -> (("(", ")", "alpha",
    False), "a"); "1.2" -> (("", "", "digit", 1), "1.2"); "•" -> (("", "", "bullet", "•"), "•")."""
    label = LIST_LABEL.match(line).group(0).strip()
    token = label.strip("().").strip()
    closing = label[-1] if label[-1] in ".)" and len(label) > 1 else ""
    opening = "(" if label.startswith("(") else ""
    if any(c.isdigit() for c in token):
        return (opening, closing, "digit", token.count(".")), token
    if any(c.isalpha() for c in token):
        return (opening, closing, "alpha", token.isupper()), token.lower()
    return (opening, closing, "bullet", token), token


_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _roman(token: str) -> int | None:
    """A roman numeral's value ("iv" -> 4), or None."""
    if not token or any(c not in _ROMAN for c in token):
        return None
    values = [_ROMAN[c] for c in token]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def _top_level(form: tuple, token: str, first: str, previous: str) -> bool:
    """Whether an item labelled ``form``/``token`` is a top-level item of a list whose first item's label has
    ``form`` and token ``first``, its last top-level item token ``previous``. Another form is a nested sub-item;
    of letters and roman numerals (one kind to the units' label kinds), a list opened by "(i)" counts in roman
    numerals, one opened by a letter in letters, where "(i)", "(v)", "(x)" or "(ii)" is a nested item unless it is
    the next letter ("(h)", then "(i)")."""
    if form[2] != "alpha":
        return True
    if first == "i":
        value, before = _roman(token), _roman(previous)
        return value is not None and before is not None and value == before + 1
    successor = chr(ord(previous[-1]) + 1) if len(previous) == 1 else ""
    return token == successor or not re.fullmatch(r"[ivx]+", token)


def list_items(unit: Unit, passage: str) -> tuple[tuple[int, int], list[tuple[int, int]]] | None:
    """A list unit's lead-in and top-level items as spans of ``passage``: ``((lead start, lead end), [(item start,
    item end), ...])``. An item runs from its label to the line before the next top-level item, so a nested
    sub-list ("(i)", "(ii)" under "(a)") and the lines that go on after it (a wrapped line, the clause that closes
    the list) stay with it. ``None`` when the unit is not a list with a lead-in, or its offsets do not point at its
    text."""
    if not unit.is_list or unit.is_table or unit.spans or unit.clipped or is_item(unit.text) or \
            normalise(passage[unit.start:unit.end]) != unit.text:
        return None
    items: list[list[int]] = []
    first = previous = ""
    form = None
    at = passage.rfind("\n", 0, unit.start) + 1
    for line in passage[at:unit.end].split("\n"):
        start, at = at, at + len(line) + 1
        if start <= unit.start or not line.strip():
            continue
        end = start + len(line.rstrip())
        if is_item(line):
            label_form, token = _label(line)
            if form is None:
                form, first = label_form, token
            if label_form == form and (not items or _top_level(form, token, first, previous)):
                items.append([start + len(line) - len(line.lstrip()), min(end, unit.end)])
                previous = token
                continue
        if items:
            items[-1][1] = min(end, unit.end)
    if not items:
        return None
    lead_end = unit.start + len(passage[unit.start:items[0][0]].rstrip())
    if not passage[unit.start:lead_end].strip():
        return None
    return (unit.start, lead_end), [(a, b) for a, b in items]


def focus_items(unit: Unit, passage: str, keep: Sequence[int]) -> Unit:
    """``unit`` (a list with a lead-in: :func:`list_items`) quoting its lead-in and only the top-level items
    ``keep`` (0-based, in passage order), an :data:`ELISION` mark where items are left out (before the first
    kept item, between kept items, after the last one when the list goes on, then closed by a full stop: "(b)
    …; […]."): "The records required under Rule 17.1.6 must be: […] (d) if requested by the Regulator, …". Each
    quoted piece is a verbatim span of ``passage`` (:attr:`Unit.spans`). The unit itself when it has no items to
    focus on, or ``keep`` keeps them all (or none)."""
    parts = list_items(unit, passage)
    keep = sorted(set(keep))
    if parts is None or not keep or len(keep) == len(parts[1]) or keep[0] < 0 or keep[-1] >= len(parts[1]):
        return unit
    lead, items = parts
    spans = [list(lead)]
    taken = -1  # the last item quoted (-1: the lead-in)
    for i in keep:
        if i == taken + 1:
            spans[-1][1] = items[i][1]  # adjacent to what is quoted already: one span
        else:
            spans.append(list(items[i]))
        taken = i
    pieces = [normalise(passage[a:b]) for a, b in spans]
    text = f" {ELISION} ".join(pieces) + (f" {ELISION}." if keep[-1] < len(items) - 1 else "")
    return replace(unit, text=text, end=spans[-1][1], spans=tuple((a, b) for a, b in spans))
