"""A focused answer (:class:`FocusedAnswer`): the kept units, every unit's score, the answerability, and what
following cross-references added (:class:`Followed`, :class:`Added`: :mod:`rirag.generation.focused.follow`); its
draft (:class:`~rirag.generation.base.Draft`) and its text."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rirag.generation.base import Draft, DraftPart
from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.render import render
from rirag.text.missing_parts import is_stated


@dataclass(frozen=True)
class Followed:
    """A reference the answer followed: the citing passage's and the followed passage's citation numbers
    (1-based), the reference as written and the followed passage's id."""

    source: int
    reference: str
    target: int
    target_id: str

    def as_dict(self) -> dict:
        return {"source": self.source, "reference": self.reference, "target": self.target,
                "target_id": self.target_id}

    def __str__(self) -> str:
        return f"[{self.source}] {self.reference} -> [{self.target}]"


@dataclass(frozen=True)
class Added:
    """A passage of the corpus outside the given ones that the answer cites through a followed reference."""

    id: str
    text: str
    document_id: int | None = None
    passage_id: str | None = None
    marks: tuple[tuple[int, int], ...] = ()  # its footnote marks and list items (rirag.data.passage_store.Passage)
    items: tuple[tuple[int, int], ...] = ()


@dataclass
class FocusedAnswer:
    """A focused answer: the kept units (most relevant first), every unit's score and the answerability; its
    :attr:`draft`, and the :attr:`text` written from it."""

    question: str
    kept: list[ScoredUnit]
    scored: list[ScoredUnit]
    answerability: float
    addressed: bool
    #: The parts the question asks for that no given or cited passage states (:mod:`rirag.text.missing_parts`;
    #: ``say_missing``), each said in one sentence after the cited content.
    missing: list = field(default_factory=list)
    #: The cross-references followed and the passages added for them (:mod:`rirag.generation.focused.follow`).
    followed: list[Followed] = field(default_factory=list)
    added: list[Added] = field(default_factory=list)
    #: The line opening a quoted rule's first unit, by the rule's 0-based passage number: how it connects to a rule
    #: quoted before it (:mod:`rirag.generation.focused.connect`).
    leads: dict[int, str] = field(default_factory=dict)

    @property
    def draft(self) -> Draft:
        """The answer as the answerer interface returns it."""
        parts, opened = [], set()
        for s in self.kept:
            first = s.unit.passage not in opened
            opened.add(s.unit.passage)
            parts.append(part(s, self.leads.get(s.unit.passage, "") if first else ""))
        return Draft(parts, self.addressed, self.answerability, list(self.missing),
                     followed=list(self.followed), added=list(self.added))

    @property
    def text(self) -> str:
        """The answer text: :attr:`draft` written out by :func:`rirag.generation.render.render` (the pipeline writes
        the drafts :meth:`rirag.generation.focused.answerer.FocusedAnswerer.draft` returns itself; nothing is
        rendered unless asked)."""
        return render(self.draft)


def part(s: ScoredUnit, lead: str = "") -> DraftPart:
    """A kept unit as a draft part: its text and offsets in its passage, citing its passage and its twins' (and,
    inline, the passages its followed references lead to); ``lead``: the line written before it."""
    return DraftPart(s.unit.text, tuple(n - 1 for n in s.numbers), s.unit.passage, s.unit.start, s.unit.end,
                     inline=s.inline, clipped=s.unit.clipped, lead=lead)


def unsaid_where_cited(answer: FocusedAnswer) -> FocusedAnswer:
    """``answer`` without the missing parts that a unit it quotes or a passage it cites states (a passage added by a
    followed reference is outside the given ones the part was first checked against): a missing-part sentence never
    denies what a cited rule states."""
    if not answer.missing:
        return answer
    cited = [*(s.unit.text for s in answer.kept), *(a.text for a in answer.added)]
    kept = [p for p in answer.missing if not is_stated(p, cited)]
    return answer if len(kept) == len(answer.missing) else replace(answer, missing=kept)
