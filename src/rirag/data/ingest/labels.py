"""The PassageID of each passage (its rule number, qualified where it repeats) and the cutting of long passages into
parts between units, for every reader's documents."""

from __future__ import annotations

import re
from collections import Counter

from rirag.constants import INGEST_MAX_PASSAGE_WORDS, INGEST_PART_WORDS, INGEST_TERM_MAX_WORDS
from rirag.data.ingest.raw import BARE_NUMBER, HEADING_REF, RawDocument, RawPassage


def label_passages(doc: RawDocument) -> None:
    """Give each passage a PassageID unique in its document, from its rule number (qualified by its heading's
    reference where the number repeats or is a bare paragraph number: "Article 277 2.") and never from its position
    alone, unless it has no number at all ("Article 72", then "Article 72 #2")."""
    def ref(p: RawPassage) -> str:
        for h in reversed(p.headings[1:] or p.headings):
            m = HEADING_REF.match(h)
            if m:
                return m.group(1)
        return p.headings[-1] if len(p.headings) > 1 else ""

    raw = Counter(p.rule for p in doc.passages if p.rule)
    used: Counter = Counter()
    for p in doc.passages:
        if p.rule and raw[p.rule] == 1 and not (BARE_NUMBER.match(p.rule) and ref(p)):
            label = p.rule
        elif p.rule:
            label = " ".join(x for x in (ref(p), p.rule) if x)
        else:
            label = ref(p) or "text"
        used[label] += 1
        p.label = label if used[label] == 1 else f"{label} #{used[label]}"
    # a qualified label may still collide with a plain one: number the later ones
    final: Counter = Counter()
    for p in doc.passages:
        final[p.label] += 1
        if final[p.label] > 1:
            p.label = f"{p.label} #{final[p.label]}"


#: A line that continues the unit before it when a long passage is cut: a lettered or roman item ("(a)", "(iv)").
SUB_ITEM = re.compile(r"^\(?[a-z]{1,4}\)\s")


def _units(lines: list[str]) -> list[list[str]]:
    """Lines grouped into units never cut apart: an item with its lettered sub-items, a short term line (a
    definition's term, a row of a heading) with the line after it."""
    units: list[list[str]] = []
    joins_next = False
    for line in lines:
        if units and (joins_next or SUB_ITEM.match(line)):
            units[-1].append(line)
        else:
            units.append([line])
        joins_next = len(line.split()) <= INGEST_TERM_MAX_WORDS and not line.rstrip().endswith((".", ";", ":"))
    return units


def split_long(p: RawPassage, limit: int = INGEST_MAX_PASSAGE_WORDS,
               size: int = INGEST_PART_WORDS) -> list[RawPassage]:
    """A passage over ``limit`` words as parts of about ``size`` words, cut between units (:func:`_units`; a line
    is never cut): "1.2", "1.2 (part 2)", ..."""
    if len(p.text.split()) <= limit or len(p.lines) < 2:
        return [p]
    parts: list[list[str]] = [[]]
    count = 0
    for unit in _units(p.lines):
        n = sum(len(line.split()) for line in unit)
        if parts[-1] and count + n > size:
            parts.append([])
            count = 0
        parts[-1].extend(unit)
        count += n
    return [RawPassage(p.rule, p.headings, lines, p.label if i == 0 else f"{p.label} (part {i + 1})")
            for i, lines in enumerate(parts)]
