"""The PassageID of each passage (its rule number, qualified where it repeats) and the cutting of long passages into
parts between units, for every reader's documents."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from rirag.constants import INGEST_MAX_PASSAGE_WORDS, INGEST_PART_WORDS, INGEST_TERM_MAX_WORDS
from rirag.data.ingest.raw import BARE_NUMBER, HEADING_REF, RawDocument, RawPassage
from rirag.errors import DataError


def _ref(p: RawPassage) -> str:
    for h in reversed(p.headings[1:] or p.headings):
        m = HEADING_REF.match(h)
        if m:
            return m.group(1)
    return p.headings[-1] if len(p.headings) > 1 else ""


def _h(text: str) -> int:
    """An 8-byte digest of a label or rule number: what the counts below keep of it (never a copy of the text)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _repeats(keys: Iterable[int]) -> set[int]:
    counts: Counter = Counter(keys)
    return {k for k, n in counts.items() if n > 1}


def _pre_label(p: RawPassage, repeated_rules: set[int]) -> str:
    """A passage's label before repeats are numbered: its rule number, qualified by its heading's reference where
    the number repeats or is a bare paragraph number ("Article 277 2."), else that reference, else "text"."""
    if p.rule and _h(p.rule) not in repeated_rules and not (BARE_NUMBER.match(p.rule) and _ref(p)):
        return p.rule
    if p.rule:
        return " ".join(x for x in (_ref(p), p.rule) if x)
    return _ref(p) or "text"


@dataclass
class LabelPlan:
    """What labelling a document needs to know of all its passages before the first, as 8-byte digests (so a
    document of any size costs a digest a passage at most, and only while this is counted)."""

    repeated_rules: set[int]  # rule numbers used twice or more
    repeated: set[int]  # labels before numbering used twice or more
    numbered_like: dict[int, int]  # a label before numbering that ends like a repeat's number ("x #2"): its place


def label_plan(passages: Callable[[], Iterable[RawPassage]]) -> LabelPlan:
    """The :class:`LabelPlan` of a document whose passages ``passages()`` gives, in order, each time it is called
    (it is read twice)."""
    rules = _repeats(_h(p.rule) for p in passages() if p.rule)
    counts: Counter = Counter()
    like: dict[int, int] = {}
    for i, p in enumerate(passages()):
        pre = _pre_label(p, rules)
        key = _h(pre)
        counts[key] += 1
        if " #" in pre and key not in like:
            like[key] = i
    repeated = {k for k, n in counts.items() if n > 1}
    del counts
    return LabelPlan(rules, repeated, like)


def labelled(passages: Iterable[RawPassage], plan: LabelPlan) -> Iterator[RawPassage]:
    """Each passage with a PassageID unique in its document (``plan``: :func:`label_plan` of the same passages):
    its label before numbering (:func:`_pre_label`), a repeat numbered ("Article 72", then "Article 72 #2"), and a
    number that meets another passage's label numbered again. One pass, in order; only repeats are counted."""
    used: Counter = Counter()  # a repeated label before numbering -> how many so far
    renamed: Counter = Counter()  # "label #n" given by that numbering -> how many so far
    numbered: set[int] = set()  # the labels given that are not a passage's own

    def seen(key: int, i: int) -> bool:
        """Whether a passage up to the i-th has ``key`` as its label before numbering."""
        if key in plan.repeated:
            return used[key] > 0
        return plan.numbered_like.get(key, i + 1) <= i

    for i, p in enumerate(passages):
        pre = _pre_label(p, plan.repeated_rules)
        key = _h(pre)
        if key in plan.repeated:
            used[key] += 1
        count = used[key] if key in plan.repeated else 1
        if count > 1:
            label = f"{pre} #{count}"
            renamed[_h(label)] += 1
            n = renamed[_h(label)] + (1 if seen(_h(label), i) else 0)  # numbered to it so far, or first named it
        else:
            label, n = pre, 1 + renamed[key]
        p.label = label if n == 1 else f"{label} #{n}"
        if p.label is pre:
            clash = key in numbered
        else:
            final = _h(p.label)
            clash = final in numbered or seen(final, i)
            numbered.add(final)
        if clash:  # only a rule number that itself ends in " #N" can meet the numbering of repeats
            raise DataError(f"two passages of one document would both be {p.label!r} (a rule number that ends "
                            "in ' #N' meets the numbering of repeated ones)")
        yield p


def label_passages(doc: RawDocument) -> None:
    """:func:`labelled` over a document held whole."""
    for _ in labelled(doc.passages, label_plan(lambda: doc.passages)):
        pass


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
    bounds = [0]  # the first line of each part
    count = at = 0
    for unit in _units(p.lines):
        n = sum(len(line.split()) for line in unit)
        if at > bounds[-1] and count + n > size:
            bounds.append(at)
            count = 0
        at += len(unit)
        count += n
    bounds.append(len(p.lines))
    return [p.part(a, b, p.label if i == 0 else f"{p.label} (part {i + 1})")
            for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
