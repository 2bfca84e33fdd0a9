"""Cross-references: the records, a passage as the resolver reads it and a reference found in it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """The minimal record the resolver needs."""

    id: str
    document_id: str
    document_title: str
    number: str
    text: str
    chapter: str | None = None  # a heading-level chapter number, where the number does not carry it
    #: Its footnote marks as its source's structure gives them: (start, end, target: the footnote's id in its page);
    #: None where the source carries no structure (the marks are then read from the text).
    marks: tuple[tuple[int, int, str], ...] | None = None
    anchor: str = ""  # a footnote's id in its page ("footnote-16"): what a mark's target names


@dataclass(frozen=True)
class Reference:
    source_id: str
    start: int
    end: int
    surface: str
    kind: str
    target_document: str | None  # document id; None when external or not known
    target_number: str  # the number as read: "9.5.2(1)", "9", "(2)", "6.1.1-6.1.4"
    targets: tuple[str, ...] = ()
    reason: str | None = None  # why it is unresolved

    @property
    def resolved(self) -> bool:
        return bool(self.targets)

    def as_dict(self) -> dict:
        return {
            "source_id": self.source_id,
            "start": self.start,
            "end": self.end,
            "surface": self.surface,
            "kind": self.kind,
            "target_document": self.target_document,
            "target_number": self.target_number,
            "targets": list(self.targets),
            "resolved": self.resolved,
            "reason": self.reason,
        }
