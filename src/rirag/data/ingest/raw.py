"""The raw records every reader of :mod:`rirag.data.ingest` yields (documents, passages, what was dropped and why),
the text patterns they share (rule numbers, heading references) and the decoding of a source file's bytes."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rirag.errors import DataError


@dataclass
class RawPassage:
    rule: str  # the number as printed ("" when none)
    headings: tuple[str, ...]
    lines: list[str]
    label: str = ""  # PassageID, set when the document's passages are numbered
    given_id: str | None = None  # the id a record gave it (JSONL/CSV ``id``), else a UUID5 is made

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class RawDocument:
    key: str  # stable document key (source file stem less any capture-date suffix)
    title: str
    source: str  # file name (and record range) it came from
    passages: list[RawPassage] = field(default_factory=list)
    labelled: bool = False  # the reader numbered its passages itself (records: their ids are checked on the labels)


@dataclass
class Dropped:
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, where: str, n: int = 1) -> None:
        self.counts[reason] += n
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(where)


def document_key(stem: str) -> str:
    """The file stem less a trailing capture-date-and-hash suffix ("_21-01-2026__4611300738")."""
    return re.sub(r"_\d{2}-\d{2}-\d{4}(?:__[0-9a-f]+)?$", "", stem)


def read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from err


#: A leading rule or paragraph number in text (plain text, never markup): "1.2", "1.2.3A", "12.", "(3)".
RULE_NUMBER = re.compile(r"^(\d+(?:\.\d+)*[A-Z]?\.?|\(\w{1,4}\))\s+(?=\S)")
#: The short reference of a heading, used to qualify a rule number that repeats in a document ("Article 277a").
HEADING_REF = re.compile(r"^((?:Article|Section|Chapter|Part|Annex|Schedule|Regulation|Rule|Appendix)\s+[\w.]+)",
                         re.IGNORECASE)
#: A paragraph number that means something only inside its article or section: "2.", "3", "(4)", "(b)".
BARE_NUMBER = re.compile(r"^\(?[0-9A-Za-z]{1,4}\)?\.?$")
