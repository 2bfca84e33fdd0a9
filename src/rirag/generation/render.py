"""Writing an answer out of a :class:`~rirag.generation.base.Draft`: the one place that numbers citations, writes
the answer text and refuses closed-book for the answerers that compose from the passages.

* a part cites passage index ``i`` as ``[i + 1]``, before its closing full stop; a part citing several passages
  (the same rule in two rulebooks) gets adjacent markers, ``... [2][4].``
  (:func:`rirag.text.citations.with_citation`);
* a part cut to the word limit (:func:`rirag.text.units.clip_unit`) ends with :data:`rirag.text.units.ELISION`, its
  marker and a full stop (``... […] [1].``), so that it closes its sentence; a list focused on some of its items
  (:func:`rirag.text.lists.focus_items`) carries its elision marks in its text, and is written as it is;
* a part quoting a reference the answer followed (:mod:`rirag.generation.focused.follow`) also cites the followed
  passage inline, right after the reference: ``... subject to Rule 9.5.2 [3], ... [1].`` (:func:`placed`);
* each part of the question not covered adds one sentence after the cited content
  (:func:`rirag.text.missing_parts.statement`);
* a draft whose passages do not address the question opens with :data:`rirag.text.units.NOT_ADDRESSED`; one that
  quotes nothing either is :data:`rirag.text.citations.NO_ANSWER`;
* a part quoting a passage that carries its structure (an ingested page's footnote marks and list levels) shows
  no footnote mark, and a nested list's items each on a line of its own, indented by level (:func:`structured`);
* a part that opens with a connecting line (:attr:`DraftPart.lead`: how its rule connects to one quoted before it,
  :mod:`rirag.generation.focused.connect`) has that line on a line of its own before its quote;
* a language model's answer is kept as it wrote it (its markers number the passages as its prompt did).
"""

from __future__ import annotations

from typing import Sequence

from rirag.generation.base import Draft, DraftPart
from rirag.generation.prompts import GROUNDED_STRATEGIES
from rirag.text.citations import NO_ANSWER, placed_citation
from rirag.text.marks import INDENT, edited, item_breaks, quoted_marks
from rirag.text.missing_parts import statement
from rirag.text.units import ELISION, NOT_ADDRESSED


def numbers(part: DraftPart) -> tuple[int, ...]:
    """The citation numbers of a part (1-based, in the passages' retrieval order)."""
    return tuple(i + 1 for i in part.cited)


def render(draft: Draft) -> str:
    """The answer text of ``draft`` (see the module)."""
    return written(draft)[0]


def written(draft: Draft, passages: Sequence | None = None) -> tuple[str, list[tuple[int, int]] | None]:
    """The answer text of ``draft`` and, for a draft written from its parts, where its markers went: ``(offset in the
    text, citation number)`` for every marker, in text order: a part's inline markers (:func:`placed`), then the
    numbers it cites (``None`` for a language model's answer, whose markers are its own). ``passages``: the
    passages the parts' indices number, where they carry their structure (:func:`structured`)."""
    if draft.written is not None:
        return draft.written, None
    if not draft.parts and not draft.missing:
        return ("" if draft.addressed else NO_ANSWER), []
    text, markers = "", []
    at = 0 if draft.addressed else len(NOT_ADDRESSED) + 1
    for i, p in enumerate(draft.parts):
        piece, offsets = structured(*placed(p), p, passages)
        if p.lead:  # a connecting line, on a line of its own before the quote (the separator: a line break)
            piece, offsets = f"{p.lead}\n{piece}", [(offset + len(p.lead) + 1, n) for offset, n in offsets]
        markers.extend((at + offset, n) for offset, n in offsets)
        text += ("" if i == 0 else "\n" if p.lead else " ") + piece
        at += len(piece) + 1
    body = " ".join([text, *(statement(m) for m in draft.missing)])
    return (body if draft.addressed else f"{NOT_ADDRESSED} {body}".strip()), markers


def placed(part: DraftPart) -> tuple[str, list[tuple[int, int]]]:
    """A part's text with its markers, and where each went (offset in that text, citation number), in text order.

    Its own numbers go before its closing full stop (:func:`rirag.text.citations.placed_citation`); each inline
    marker (:attr:`DraftPart.inline`: a followed cross-reference) goes right after its reference, a space before it
    (several at one place are adjacent): "... subject to Rule 9.5.2 [3], ... [1].". An inline marker whose offset does
    not fall inside the text before the closing marker (nor right after a non-space character) is not written."""
    own = numbers(part)
    piece, offset = placed_citation(f"{part.text} {ELISION}." if part.clipped else part.text, own)
    head = offset - 1  # piece[:head] is the part's (normalised) text before its own marker
    inline = sorted(dict.fromkeys((len(" ".join(part.text[:at].split())), i + 1) for at, i in part.inline
                                  if 0 < at <= len(part.text) and not part.text[at - 1].isspace()))
    inline = [(at, n) for at, n in inline if at <= head]
    out, offsets, last = "", [], None
    for at, n in inline:
        out += piece[last or 0:at] + ("" if at == last else " ")
        offsets.append((len(out), n))
        out += f"[{n}]"
        last = at
    shift = len(out) - (last or 0)
    out += piece[last or 0:]
    for n in own:  # adjacent markers, [2][4]
        offsets.append((offset + shift, n))
        offset += len(f"[{n}]")
    return out, offsets


def structured(piece: str, offsets: list[tuple[int, int]], part: DraftPart, passages: Sequence | None
               ) -> tuple[str, list[tuple[int, int]]]:
    """A part written (:func:`placed`: its text with its markers, and where they went) as the structure of the
    passage it quotes says (its ``marks`` and ``items``: an ingested page's, :class:`rirag.data.passage_store.Passage`):
    no footnote mark (:func:`rirag.text.marks.quoted_marks`), and the items of a nested list each on a line of its
    own, indented by its level (:func:`rirag.text.marks.item_breaks`). A part of a passage without structure is as
    it was."""
    source = passages[part.passage] if passages is not None and part.passage is not None \
        and part.passage < len(passages) else None
    marks, items = getattr(source, "marks", ()), getattr(source, "items", ())
    if not marks and not items:
        return piece, offsets
    span = (part.start, part.end) if part.start is not None and part.end is not None else None
    edits = [(a, b, "") for a, b in quoted_marks(piece, source.text, marks, span)]
    edits += [(at, at + 1, "\n" + INDENT * depth) for at, depth in item_breaks(piece, source.text, items, span)
              if not any(a <= at < b for a, b, _ in edits)]
    text, moved = edited(piece, edits, [at for at, _ in offsets])
    return text, [(at, n) for at, (_, n) in zip(moved, offsets)]


def check_strategy(name: str, needs_passages: bool, strategy: str) -> None:
    """Refuse a strategy that gives no passage to an answerer that composes from the passages (ValueError)."""
    if needs_passages and strategy not in GROUNDED_STRATEGIES:
        raise ValueError(f"--generator {name} composes answers from the passages; --strategy {strategy} gives it "
                         "none (closed-book needs a language model)")
