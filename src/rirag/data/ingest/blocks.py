"""Passages from a document's blocks in reading order, for the readers of laid-out files (PDF, Word): each reader
says what a block is (a heading and its level, a paragraph, a list item and its depth, a table row, a footnote, with
the footnote marks in its text) and :class:`Assembler` makes the passages the HTML reader makes of the same rulebook.

- A paragraph that opens with a rule number ("6.8.3", "313-1", "4A", "10a": :data:`~rirag.data.ingest.raw.RULE_NUMBER`)
  starts a passage of that rule, the number taken out of its text (``Rule`` keeps it); a paragraph that is only a
  rule number gives its number to the paragraph after it.
- Once a document has numbered rules, a paragraph without a number belongs to the rule before it, unless it is short,
  without a closing stop and not a caption ("Table 1: ..."), and either set apart by its type (bold) and not followed
  by a table row, or plain, without a footnote mark and followed by a numbered rule: an in-text heading, the last
  step of the heading path of the rules after it (the next one replaces it).
  A document without rule numbers has a passage a paragraph.
- A heading that carries a number ("1 Scope", "Annex A") is a step of the heading path (inside the one before it at
  its level when it is an article, section or chapter in a numbered chapter, "Article 277" in "3 Counterparty Credit
  Risk", or its number extends that one's, "2.1" in "2"); once a document has numbered
  headings, an unnumbered one at or below their level is an in-text heading (a caption among a rule's lines: text).
- List items and table rows join the passage before them (one line each; an item's depth and label kept as
  ``ListItems``, a row's cells joined by `` | ``); footnotes are passages of their own ("footnote 3"), and a mark in the
  text whose footnote the document has points at it (``FootnoteMarks``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from rirag.constants import INGEST_SUBHEADING_MAX_WORDS
from rirag.data.ingest.raw import HEADING_REF, RULE_NUMBER, Dropped, RawDocument, RawPassage, item_label
from rirag.errors import DataError

HEADING, PARAGRAPH, ITEM, ROW, FOOTNOTE = "heading", "paragraph", "item", "row", "footnote"
#: What a row's cells are joined with (the HTML reader's table rows).
CELL_SEPARATOR = " | "


@dataclass
class Block:
    kind: str  # HEADING, PARAGRAPH, ITEM, ROW or FOOTNOTE
    text: str
    level: int = 0  # a heading's level (0: the document's title, 1: its top sections), a list item's depth (1..)
    marks: list[tuple[int, int]] = field(default_factory=list)  # footnote marks: text[start:end] is the mark
    note: str = ""  # a footnote's own mark ("3")
    strong: bool = False  # set apart by its type (bold): one short line of it may head the rules after it


def footnote_anchor(mark: str) -> str:
    """The id a footnote is known by in its document (what a mark's ``target`` names): the HTML reader's form."""
    return f"footnote-{mark}"


def split_rule(text: str) -> tuple[str, str]:
    """A paragraph's leading rule number and the rest of its text (``("", text)`` without one)."""
    m = RULE_NUMBER.match(text)
    if m is None:  # a number alone: what the pattern matches with a word after it
        m = RULE_NUMBER.match(f"{text} x")
        if m is None or m.group(1) != text:
            return "", text
        return ("", text) if text.startswith("(") else (text, "")
    if m.group(1).startswith("("):
        return "", text
    return m.group(1), text[m.end():]


def document_passages(doc: RawDocument, blocks: Iterable[Block], dropped: Dropped,
                      path: Path) -> Iterator[tuple[RawDocument, RawPassage]]:
    """The passages ``blocks`` make of ``doc``, the one document of the file ``path``, once all are read (footnote
    marks point at footnotes that may come after them); a file that gives none is refused naming it."""
    assembler = Assembler(doc, dropped)
    for block in blocks:
        assembler.add(block)
    passages = assembler.finish()
    if not passages:
        raise DataError(f"{path}: no text" + (" beside its title" if doc.title != doc.key else ""))
    doc.passages = []
    for p in passages:
        yield doc, p


class Assembler:
    """The passages of one document as its blocks come (:meth:`add`); :meth:`finish` gives them, footnote marks
    pointed at the footnotes the document has."""

    def __init__(self, doc: RawDocument, dropped: Dropped) -> None:
        self.doc, self.dropped = doc, dropped
        self.heads: list[tuple[int, str]] = []  # the heading path below the title: (level, text), outermost first
        self.subheading = ""
        self.current: RawPassage | None = None
        self.numbered = False  # the document has numbered rules
        self.pending_rule = ""  # a paragraph that is only a rule number: the next paragraph's
        self.notes: dict[str, str] = {}  # footnote mark -> its text
        self.section_level = 0  # the highest level of a numbered heading ("1 Scope", "Annex A"): 0 before one
        self.candidate: tuple[Block, str] | None = None  # a short line that heads the rules after it, if one comes

    def path(self) -> tuple[str, ...]:
        heads = (self.doc.title,) + tuple(text for _, text in self.heads)
        return heads + ((self.subheading,) if self.subheading else ())

    def add(self, block: Block) -> None:
        text = " ".join(block.text.split())
        if not text:
            return
        if self.candidate is not None:
            self._settle(block, text)
        if block.kind == HEADING:
            self._heading(block.level, text)
        elif block.kind == FOOTNOTE:
            if self.notes.get(block.note) == text:  # the same footnote printed again (under each rule citing it)
                self.dropped.add("duplicate", f"{self.doc.source}: footnote {block.note}")
                return
            self.notes[block.note] = text
            note = RawPassage(f"footnote {block.note}", self.path(), [text], structured=True,
                              anchor=footnote_anchor(block.note))
            note.marks = []
            self.doc.passages.append(note)
        elif block.kind in (ITEM, ROW):
            self._join(block, text)
        else:
            self._paragraph(block, text)

    def _heading(self, level: int, text: str) -> None:
        if self.pending_rule:  # a number printed apart from its heading ("1", then "Introduction")
            text, self.pending_rule = f"{self.pending_rule} {text}", ""
        if not self.doc.passages and not self.heads and self.doc.title == self.doc.key:
            self.doc.title = text  # the first heading, before any text: the document's title
            return
        level = max(level, 1)
        if split_rule(text)[0] or HEADING_REF.match(text):
            self.section_level = min(self.section_level or level, level)
        elif self.section_level and level >= self.section_level:  # unnumbered, at or below the numbered ones
            if self.current is not None and not _in_text_heading(text):
                self._line(Block(PARAGRAPH, text), text)  # a caption ("Table D ...") inside its rule
            else:
                self.subheading, self.current = text, None
            return
        while self.heads and (self.heads[-1][0] > level
                              or self.heads[-1][0] == level and not _nests(self.heads[-1][1], text)):
            self.heads.pop()
        self.heads.append((level, text))
        self.subheading, self.current, self.pending_rule = "", None, ""

    def _new(self, rule: str, block: Block, text: str, shift: int = 0) -> None:
        self.current = RawPassage(rule, self.path(), [], structured=True)
        self.doc.passages.append(self.current)
        self._line(block, text, shift)

    def _line(self, block: Block, text: str, shift: int = 0, level: int = 0) -> None:
        """``text`` as the current passage's next line, its marks moved by ``shift`` characters (text taken from
        its start)."""
        p = self.current
        n = len(p.lines)
        p.lines.append(text)
        p.marks.extend((n, a - shift, b - shift, text[a - shift:b - shift]) for a, b in block.marks if a >= shift)
        if level:
            p.items.append((n, level, item_label(text)))

    def _join(self, block: Block, text: str) -> None:
        level = block.level if block.kind == ITEM else 0
        if self.current is None:
            self.current = RawPassage(self.pending_rule, self.path(), [], structured=True)
            self.doc.passages.append(self.current)
            self.pending_rule = ""
        self._line(block, text, level=max(level, 1) if block.kind == ITEM else 0)

    def _paragraph(self, block: Block, text: str) -> None:
        rule, rest = split_rule(text)
        if rule and not rest.strip():
            self.pending_rule, self.numbered = rule, True
            return
        if rule:
            self.numbered = True
            self._new(rule, block, rest, shift=len(text) - len(rest))
            self.pending_rule = ""
            return
        if self.pending_rule:
            self._new(self.pending_rule, block, text)
            self.pending_rule = ""
            return
        plain = not block.strong and not block.marks and text[:1].isupper() and not text.endswith(")")
        if self.numbered and (block.strong or plain) and _in_text_heading(text):
            self.candidate = (block, text)  # a heading if what comes next says so (:meth:`_settle`)
            return
        if self.numbered and self.current is not None:
            self._line(block, text)
            return
        self._new("", block, text)

    def _settle(self, block: Block, text: str) -> None:
        """The short line before ``block``: an in-text heading if ``block`` is not a table row (a bold line) or is a
        numbered rule or a heading (a plain one), else a line of the text (a table's title)."""
        line, self.candidate = self.candidate, None
        if line[0].strong:
            heads = block.kind != ROW
        else:
            heads = block.kind == HEADING or block.kind == PARAGRAPH and bool(split_rule(text)[0])
        if heads:
            self.subheading, self.current = line[1], None
        elif self.current is not None:
            self._line(line[0], line[1])
        else:
            self._new("", line[0], line[1])

    def finish(self) -> list[RawPassage]:
        """The document's passages, each footnote mark pointed at its footnote ("" when the document has none of
        that mark)."""
        if self.candidate is not None:
            self._settle(Block(PARAGRAPH, ""), "")
        for p in self.doc.passages:
            p.marks = [(n, a, b, footnote_anchor(mark) if mark in self.notes else "") for n, a, b, mark in p.marks]
        return self.doc.passages


def _number(text: str) -> tuple[str, str]:
    """A heading's kind of number ("article", "" for a bare one) and the number ("277", "3D24"); ("", "") without."""
    m = HEADING_REF.match(text)
    if m:
        kind, _, number = m.group(1).partition(" ")
        return kind.lower(), number.strip()
    return "", split_rule(text)[0].rstrip(".")


#: Named headings that divide a numbered chapter (an annex or appendix follows the chapters instead).
PARTS = frozenset({"article", "rule", "regulation", "section", "chapter"})


def _nests(outer: str, inner: str) -> bool:
    """Whether heading ``inner``, at the level of ``outer``, is a step inside it: an article, section or chapter in a
    numbered chapter ("Article 277" in "3 Counterparty Credit Risk"; an article after a section is the section's
    sibling, as the PRA Rulebook's pages nest them), or a number that extends the outer one's ("2.1" in "2")."""
    (outer_kind, outer_n), (inner_kind, inner_n) = _number(outer), _number(inner)
    if not outer_n or not inner_n:
        return False
    if inner_kind in PARTS and not outer_kind:
        return True
    return inner_kind == outer_kind and inner_n.startswith(outer_n + ".")


#: A caption's first word ("Table 1: ...", "Figure A ..."): a title of what follows in the rule, never a heading.
CAPTIONS = frozenset({"table", "figure", "diagram", "chart", "graph", "box", "exhibit", "illustration"})


def _in_text_heading(text: str) -> bool:
    """Short, without a closing stop, not a caption: a heading in the text (when its type sets it apart)."""
    return (len(text.split()) <= INGEST_SUBHEADING_MAX_WORDS and not text.endswith((".", ";", ":", ","))
            and text.split(" ", 1)[0].lower() not in CAPTIONS and not text.startswith("["))  # "[Note: ...]": text
