"""Answer units: the pieces of a regulatory passage an answer may quote, with the rule's structure kept.

A unit is a sentence, or a list lead-in together with all of its items (and a lower-case clause that closes the
list, "…; or (b) …;\\nit may make an order …"); never a bare item and never a heading. Each unit keeps its character
offsets in the passage, so an answer built from units can be traced back to the rule it quotes.

Rules (documented, deterministic):

* the passage's leading heading lines are dropped (:func:`passage_body`); a later line
  that looks like a heading (short, no closing punctuation, no deontic cue, not followed by a list item or a
  lower-case continuation) is dropped too;
* a line that starts with a list label (``(a)``, ``(iv)``, ``(2)``, ``a)``, ``ii.``, ``1.2``, ``•``) is an item;
  consecutive items belong to the last prose sentence before them (their lead-in). A passage's first line that is
  labelled and has no lead-in is a numbered paragraph: its label is dropped and the rest is prose;
* prose is split into sentences with Punkt (as RePASs); a "sentence" that starts in lower case or has fewer than
  :data:`MIN_UNIT_WORDS` words is glued to the previous one (Punkt cuts at abbreviations such as "U.A.E."); a
  block's first sentence that is an in-line title ("Change of Participating Jurisdictions during current reporting
  period. A Reporting Financial Institution may …": at most :data:`TITLE_MAX_WORDS` words and no finite-verb
  cue) is glued to the sentence it titles;
* a unit longer than :data:`MAX_SPLIT_CHARS` characters is not split by Punkt (length guard): it is kept whole;
* a passage of headings only, or of fewer than :data:`MIN_UNIT_WORDS` words, has no unit;
* a table (the lines between ``/Table Start`` and ``/Table End``, cells separated by tabs) gives one unit per row,
  carrying its column headers ("Header 1: cell; Header 2: cell."), so a row can be quoted and cited alone
  (:func:`rirag.text.tables.table_rows`). Its offsets span the row's lines; its text is not a verbatim slice of
  the passage.

The lines themselves (list labels, normalisation) are read by :mod:`rirag.text.lines`, tables by
:mod:`rirag.text.tables`; a list unit's items by :mod:`rirag.text.lists`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from rirag.text.citations import CITATION_PATTERN
from rirag.text.lines import CLOSING, HEADING_MAX_WORDS, LIST_LABEL, is_item, locate, normalise
from rirag.text.sentences import punkt_split
from rirag.text.tables import CELL_SYMBOLS, take_tables

#: The sentence that opens an answer whose retrieved passages do not address the question (then the closest
#: provisions follow, cited).
NOT_ADDRESSED = "The retrieved provisions do not directly address this question; the closest ones are cited below."
#: A unit has at least this many words (shorter pieces are glued to their neighbour or dropped as headings).
MIN_UNIT_WORDS = 4
#: Prose longer than this (characters) is not given to the sentence splitter: it stays one unit.
MAX_SPLIT_CHARS = 20_000
#: Abbreviations Punkt cuts after ("AAOIFI GSIFI No. (3)"): a piece after one of them is glued back.
_ABBREVIATION_END = re.compile(r"\b(?:No|Nos|Art|para|paras|p|pp|Ref|Vol|cf|e\.g|i\.e)\.$", re.IGNORECASE)
#: Deontic cues: a sentence with one states (or forbids) something; the untrained stand-in for the obligation
#: classifier, and never part of a heading.
DEONTIC_CUE = re.compile(r"\b(must|shall|required|may not|should)\b", re.IGNORECASE)
#: An in-line title ("Title. Body" on one line) has at most this many words, and none of these verb cues.
TITLE_MAX_WORDS = HEADING_MAX_WORDS
_VERB_CUE = re.compile(r"\b(?:is|are|was|were|be|been|has|have|had|may|might|can|could|will|would|must|shall|should|"
                       r"does|do|did|means|includes|applies|requires|refers|sets|needs)\b", re.IGNORECASE)
#: The list labels the leading-heading rule knows (a label before a heading is part of the heading).
_HEADING_LIST_LABEL = re.compile(r"^\s*(\(?[a-z]{1,3}\)|\(?[ivxlc]+\)|\(?\d+(\.\d+)*\)|[•\-–])\s", re.IGNORECASE)
_LINE_END_PUNCTUATION = re.compile(r"[.:;,!?—–-]\s*$")

Splitter = Callable[[str], Sequence[str]]


@dataclass(frozen=True)
class Unit:
    """One answer unit of one passage: ``text`` (whitespace-normalised), ``passage`` (0-based position in the
    passage list), ``index`` (order within the passage), ``start``/``end`` (character offsets of the unit's text in
    the passage: ``passage[start:end]`` is ``text`` up to whitespace and a dropped paragraph label) and ``is_list``
    (a lead-in with its items)."""

    text: str
    passage: int
    index: int
    start: int
    end: int
    is_list: bool = False
    #: A table row with its column headers (:func:`rirag.text.tables.table_rows`).
    is_table: bool = False
    #: A table row's label (its first cell, "Chapter 9: Marketing of Domestic Funds ..."); empty otherwise.
    label: str = ""
    #: The unit was cut to a word limit (:func:`clip_unit`); its quote ends with :data:`ELISION`.
    clipped: bool = False
    #: A list unit focused on some of its items (:func:`rirag.text.lists.focus_items`): the passage spans it
    #: quotes, in order (the lead-in and the kept items, adjacent ones merged); ``text`` is their texts joined by
    #: :data:`ELISION` (and ends with it and a full stop when the list's last items are left out, so that the quote
    #: ends its sentence), ``start``/``end`` run from the lead-in's start to the last kept item's end. Empty: the
    #: unit quotes ``start``-``end`` whole.
    spans: tuple[tuple[int, int], ...] = ()

    @property
    def words(self) -> int:
        """The words the unit quotes (a focused list's elision marks are not words)."""
        return len(self.text.split()) - (self.text.count(ELISION) if self.spans else 0)

    @property
    def quoted(self) -> tuple[tuple[int, int], ...]:
        """The passage spans the unit's text quotes: :attr:`spans`, or the unit's whole span."""
        return self.spans or ((self.start, self.end),)

    def quotes(self, start: int, end: int) -> bool:
        """Whether the passage's characters ``start``-``end`` lie inside the quoted text (for a focused list, inside
        the lead-in or a kept item, not in an item left out)."""
        return any(a <= start and end <= b for a, b in self.quoted)

    def chars_before(self, passage: str, at: int) -> int:
        """How many non-space characters of :attr:`text` come before the passage offset ``at`` (inside a quoted
        span): those of the spans before it, each followed by its elision mark, and of its own span up to ``at``."""
        count = 0
        for a, b in self.quoted:
            if a <= at <= b:
                return count + len("".join(passage[a:at].split()))
            count += len("".join(passage[a:b].split())) + len(ELISION)
        return count


def _is_heading(line: str, following: str) -> bool:
    text = LIST_LABEL.sub("", line, count=1).strip()
    return bool(text) and len(text.split()) <= HEADING_MAX_WORDS and not CLOSING.search(text) \
        and not DEONTIC_CUE.search(text) and not is_item(following) and not following.lstrip()[:1].islower()


def is_caps_heading(line: str) -> bool:
    """A line set in capitals (at most :data:`HEADING_MAX_WORDS` words) is a heading even when it ends with a
    question mark: "HOW DOES RULE 7.2.1 INTERACT WITH OTHER DISCLOSURE OBLIGATIONS?" titles the guidance below it."""
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 6 and all(c.isupper() for c in letters) and len(line.split()) <= HEADING_MAX_WORDS


def passage_body(passage: str) -> str:
    """``passage`` without its leading heading lines: a heading line is short (:data:`HEADING_MAX_WORDS` words at
    most), has no closing punctuation, no deontic cue, and is followed by a line that is not a list item (a line
    followed by "(a) …" introduces a list) and does not go on in lower case (a hard-wrapped sentence), or is set in
    capitals (:func:`is_caps_heading`). List labels such as "q)" before a heading are part of the heading. A
    passage that is all heading is returned whole."""
    lines = passage.split("\n")
    while len(lines) > 1:
        first = _HEADING_LIST_LABEL.sub("", lines[0], count=1).strip()
        following = next((line for line in lines[1:] if line.strip()), "")
        prose = (len(first.split()) > HEADING_MAX_WORDS or _LINE_END_PUNCTUATION.search(first)
                 or DEONTIC_CUE.search(first) or _HEADING_LIST_LABEL.match(following)
                 or following.lstrip()[:1].islower())  # a hard-wrapped sentence goes on in lower case
        if first and prose and not is_caps_heading(first):
            break
        lines = lines[1:]
    body = "\n".join(lines)
    return body if body.strip() else passage  # a passage that is all heading stays whole


def _default_splitter() -> Splitter:
    return punkt_split


def is_inline_title(sentence: str) -> bool:
    """Whether a sentence is an in-line title: at most :data:`TITLE_MAX_WORDS` words, and no deontic or finite-verb
    cue ("Change of Participating Jurisdictions during current reporting period.", "Principle 6 Compliance.")."""
    return 0 < len(sentence.split()) <= TITLE_MAX_WORDS and not DEONTIC_CUE.search(sentence) \
        and not _VERB_CUE.search(sentence)


def leading_title(text: str, split: Splitter | None = None) -> str:
    """The in-line title a unit starts with (its first sentence, when that is an in-line title and more follows:
    "Adjustment to the current valuation of less liquid positions for regulatory capital purposes."), else ""."""
    sentences = [s.strip() for s in (split or _default_splitter())(text) if s.strip()]
    return sentences[0] if len(sentences) > 1 and is_inline_title(sentences[0]) else ""


def without_title(unit: Unit, passage: str, title: str) -> Unit:
    """``unit`` without its leading ``title``, its offsets pointing at the rest of its text in ``passage``; the unit
    itself when the rest would be too short to stand alone or cannot be found in the passage."""
    rest = unit.text[len(title):].strip() if unit.text.startswith(title) else ""
    found = locate(passage, rest, unit.start) if len(rest.split()) >= MIN_UNIT_WORDS else None
    return replace(unit, text=rest, start=found[0], end=found[1]) if found else unit


#: Where a clipped unit may end: after a list item's or a sentence's closing punctuation, before the next one.
_CUT_POINT = re.compile(r"(?<=[.;:])\s+(?=\S)")
#: List labels a word cut may end on: "(a)", "b)", "(iv)", "(2)" (one or more, at the end).
_TRAILING_LABEL = re.compile(r"(?:\s+\(?(?:[a-z]{1,3}|[ivxlc]+|\d+(?:\.\d+)*)\))+$", re.IGNORECASE)
#: What a clipped quote ends with, so that nobody reads a cut list as the whole rule.
ELISION = "[…]"

#: A sentence that opens by pointing back at the one before it ("This includes ...", "These systems and controls
#: ...", "However, ...", "Therefore, ..."): quoted alone, what it points at is lost. Not "It": mostly a dummy
#: subject ("It would normally be appropriate to ...").
_BACK_REFERENCE = re.compile(
    r"^\W*(?:(?:This|These|Such|That|Those)\b(?!\s+(?:(?:[A-Z][\w-]*\s+){0,3}(?:Part|Chapter|Rule|Section|Regulation|"
    r"Appendix|Annex|Schedule|Guidance|Rulebook|Module|Code|Direction|Instrument|Act|Order|Document|SS|SoP)s?\b|"
    r"(?:statement of policy|supervisory statement|appendix|annex|chapter|section|part|document)\b))|"
    r"(?:However|Therefore|Accordingly|Consequently|Furthermore|Further|Moreover|Otherwise|Similarly|Likewise|"
    r"In addition|In particular),|(?:In this case|In such (?:a )?cases?|For this purpose|For these purposes|"
    r"To this end)\b)")


def opens_with_back_reference(text: str) -> bool:
    """Whether ``text`` opens by pointing back at what precedes it (:data:`_BACK_REFERENCE`). "This Part applies
    ..." / "These Rules ..." name a document, not the sentence before, and do not count."""
    return bool(_BACK_REFERENCE.match(text or ""))


def clip_unit(unit: Unit, passage: str, max_words: int, lead_in_alone: bool = True) -> Unit:
    """``unit`` cut to at most ``max_words`` words (:attr:`Unit.clipped`): its text up to the last item or sentence
    end that fits (a verbatim prefix, offsets pointing at it in ``passage``), else its first ``max_words`` words.
    A unit within the limit comes back as it is. ``lead_in_alone`` off: a cut that would leave a list's lead-in
    without any item (ending on its colon) takes the first ``max_words`` words instead, less a bare list label they
    would end on ("... include: (a)"); where no more than the lead-in fits, the cut still ends on its colon."""
    if unit.words <= max_words:
        return unit
    words_before = 0
    cut = None
    for match in _CUT_POINT.finditer(unit.text):
        if not lead_in_alone and unit.text[:match.start()].rstrip().endswith(":"):
            continue
        words_before = len(unit.text[:match.start()].split())
        if words_before > max_words:
            break
        if words_before >= MIN_UNIT_WORDS:
            cut = match.start()
    text = unit.text[:cut] if cut is not None else " ".join(unit.text.split()[:max_words])
    if cut is None and not lead_in_alone:
        text = _TRAILING_LABEL.sub("", text)
    found = locate(passage, text, unit.start)
    start, end = found if found else (unit.start, unit.start + len(text))
    return replace(unit, text=text, start=start, end=end, clipped=True)


def _sentences(text: str, split: Splitter) -> list[str]:
    """Punkt sentences of a prose line, fragments glued back (see the module's rules)."""
    if len(text) > MAX_SPLIT_CHARS:
        return [text]
    out: list[str] = []
    for s in (s.strip() for s in split(text)):
        if not s:
            continue
        if out and (s[:1].islower() or len(s.split()) < MIN_UNIT_WORDS or len(out[-1].split()) < MIN_UNIT_WORDS
                    or _ABBREVIATION_END.search(out[-1])):
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    if len(out) > 1 and is_inline_title(out[0]):
        out[:2] = [f"{out[0]} {out[1]}"]
    return out


def _label_kind(line: str) -> str:
    """``digit``, ``bullet`` or ``alpha`` (letters and roman numerals): the kind of a line's list label."""
    label = LIST_LABEL.match(line).group(0)
    return "digit" if any(c.isdigit() for c in label) else ("alpha" if any(c.isalpha() for c in label) else "bullet")


def _last_line(block: dict) -> str:
    return (block["lines"] if block["kind"] == "prose" else block["items"])[-1][1]


def split_units(passage: str, passage_index: int = 0, split: Splitter | None = None) -> list[Unit]:
    """The answer units of one passage, in passage order (see the module's rules)."""
    split = split or _default_splitter()
    body = passage_body(passage)
    offset = len(passage) - len(body) if passage.endswith(body) else 0
    # lines with their offsets; empty lines dropped
    lines: list[tuple[int, str]] = []
    at = offset
    for line in body.split("\n"):
        if line.strip():
            lines.append((at, line))
        at += len(line) + 1
    lines, tables = take_tables(lines)
    if not lines and tables:
        return _number(passage_index, [], tables)
    if len(lines) == 1 and not is_item(lines[0][1]) and _is_heading(lines[0][1], ""):
        return []  # a passage that is one heading line ("Additional disclosure in a Prospectus of ...")
    units = _block_units(_blocks(lines), split)
    located = []
    cursor = offset
    for text, start, end, is_list in units:
        if len(text.split()) < MIN_UNIT_WORDS:
            continue
        found = locate(passage, text, max(cursor, start))
        if found:
            start, end = found
            cursor = end
        located.append((text, start, end, is_list))
    return _number(passage_index, located, tables)  # headings only (or < MIN_UNIT_WORDS words): no unit


def _blocks(lines: list[tuple[int, str]]) -> list[dict]:
    """A passage's lines (with their offsets) as blocks: ``{"kind": "prose", "lines": [...], "strip_label": ...}``
    or ``{"kind": "list", "lead": a prose block or None, "items": [...]}`` (see the module's rules)."""
    blocks: list[dict] = []
    for i, (start, line) in enumerate(lines):
        following = lines[i + 1][1] if i + 1 < len(lines) else ""
        item = is_item(line)
        if item and not blocks and i == 0 and LIST_LABEL.sub("", line, count=1).strip()[:1].isupper():
            blocks.append({"kind": "prose", "lines": [(start, line)], "strip_label": True})
        elif not item and i > 0 and _is_heading(line, following):
            continue
        elif item:
            _add_item(blocks, start, line)
        elif blocks and blocks[-1]["kind"] == "list" and line.lstrip()[:1].islower():
            blocks[-1]["items"].append((start, line))  # the clause that closes the list
        elif blocks and blocks[-1]["kind"] == "prose" and line.lstrip()[:1].islower():
            blocks[-1]["lines"].append((start, line))  # a hard-wrapped sentence
        else:
            blocks.append({"kind": "prose", "lines": [(start, line)], "strip_label": False})
    return blocks


def _add_item(blocks: list[dict], start: int, line: str) -> None:
    """Add the list item ``line`` to ``blocks``: a numbered paragraph, the next item of a list, or a list's first
    item (the prose before it its lead-in, if any)."""
    rest = LIST_LABEL.sub("", line, count=1).strip()
    previous = _last_line(blocks[-1]) if blocks else ""
    # "(2) Where the Regulator ..." after a full sentence is a numbered paragraph, not an item
    paragraph = rest[:1].isupper() and previous.rstrip().endswith((".", "!", "?")) and (
        blocks[-1]["kind"] == "prose" or _label_kind(line) != _label_kind(blocks[-1]["items"][0][1]))
    if paragraph:
        blocks.append({"kind": "prose", "lines": [(start, line)], "strip_label": True})
    elif blocks and blocks[-1]["kind"] == "list":
        blocks[-1]["items"].append((start, line))
    elif blocks:  # the prose before is the lead-in
        blocks[-1] = {"kind": "list", "lead": blocks[-1], "items": [(start, line)]}
    else:  # items with no lead-in at all: keep them together as one unit
        blocks.append({"kind": "list", "lead": None, "items": [(start, line)]})


def _prose_units(block: dict, split: Splitter) -> list[tuple[str, int, int]]:
    """A prose block's sentences, each with the block's offsets."""
    start = block["lines"][0][0]
    end = block["lines"][-1][0] + len(block["lines"][-1][1])
    text = normalise(" ".join(line for _, line in block["lines"]))
    if block.get("strip_label"):
        text = LIST_LABEL.sub("", text, count=1).strip()
    return [(s, start, end) for s in _sentences(text, split)]


def _block_units(blocks: list[dict], split: Splitter) -> list[tuple[str, int, int, bool]]:
    """The units of the blocks, (text, start, end, is_list): each sentence of prose; a list with the last sentence
    of its lead-in (the earlier ones are units of their own)."""
    units: list[tuple[str, int, int, bool]] = []
    for block in blocks:
        if block["kind"] == "prose":
            units.extend((s, a, b, False) for s, a, b in _prose_units(block, split))
            continue
        items_text = " ".join(normalise(line) for _, line in block["items"])
        end = block["items"][-1][0] + len(block["items"][-1][1])
        lead = _prose_units(block["lead"], split) if block["lead"] else []
        if lead:  # earlier sentences of the lead-in line are units of their own; the last one leads the list
            units.extend((s, a, b, False) for s, a, b in lead[:-1])
            units.append((f"{lead[-1][0]} {items_text}", lead[-1][1], end, True))
        else:
            units.append((items_text, block["items"][0][0], end, True))
    return units


def _number(passage_index: int, located: list[tuple[str, int, int, bool]],
            tables: list[tuple[str, int, int, str]]) -> list[Unit]:
    """Prose and list units and table rows, in passage order, numbered."""
    rows = [(text, start, end, False, True, label) for text, start, end, label in tables
            if len(text.split()) >= MIN_UNIT_WORDS]
    merged = sorted([(*u, False, "") for u in located] + rows, key=lambda u: u[1])
    return [Unit(text, passage_index, i, start, end, is_list, is_table, label)
            for i, (text, start, end, is_list, is_table, label) in enumerate(merged)]


#: The reference a row label starts with ("Chapter 9", "APP 7", "Rule 6.2").
_LABEL_REFERENCE = re.compile(r"^\W*([A-Z][A-Za-z]*\s+\d+(?:\.\d+)*[A-Za-z]?)\b")


def names_row(question: str, unit: Unit) -> bool:
    """Whether ``question`` names the table row ``unit`` by its label's reference ("which rules in Chapter 9 ..."
    names the row "Chapter 9: Marketing ..."; not "Chapter 9A" nor "Chapter 9.5")."""
    match = _LABEL_REFERENCE.match(unit.label) if unit.is_table else None
    if not match:
        return False
    reference = r"\s+".join(re.escape(w) for w in match.group(1).split())
    question = question.translate(CELL_SYMBOLS)  # "Chapter \u200e9": ObliQA questions keep the left-to-right mark
    return bool(re.search(rf"\b{reference}(?![\w.]*\d|[A-Za-z])", question, re.IGNORECASE))


#: An answer unit "ends inside a list" when it stops on a lead-in or between items.
_ENDS_INSIDE_LIST = re.compile(r"(?:[:;,—–]|\b(?:and|or))\s*$", re.IGNORECASE)
_MARKER_GROUP = re.compile(rf"(?:\s*{CITATION_PATTERN.pattern})+")


def answer_units(answer: str) -> list[str]:
    """An answer's units as written: the text up to and including each citation marker group (and the punctuation
    that closes it); text after the last marker is one more unit. Markers are removed from the returned texts. A
    marker inside a sentence (an inline marker after a followed reference, "subject to Rule 9.5.2 [3], ...") ends a
    unit too: the piece before it ends on the reference, the piece after it opens with what follows the reference."""
    pieces, at = [], 0
    for m in _MARKER_GROUP.finditer(answer or ""):
        end = m.end()
        while end < len(answer) and answer[end] in ".!?\"')":
            end += 1
        pieces.append(answer[at:m.start()] + answer[m.end():end])
        at = end
    pieces.append((answer or "")[at:])
    return [normalise(p) for p in pieces if p.strip()]


#: A unit that is only a bracketed source note: "[Note: Art. 109 of the CRD]", "[Note 1: This rule corresponds to
#: ...]", "[Note Art 79(d) of the CRD]" (the PRA Rulebook has about 930 note lines, 19 of them a whole passage): a
#: pointer to the law a rule implements, not a rule.
_SOURCE_NOTE = re.compile(r"^\[\s*notes?\b(?:\s+\d+)?\s*:?[^\[\]]*\]\.?$", re.IGNORECASE)
#: The first and the last sentences of a note of several sentences, split apart ("[Note: Rule 1.3 corresponds to
#: ... CRR." / "The second subparagraph ... contains transitional provisions]"; 5 and 4 such units in the PRA
#: Rulebook, none in ObliQA).
_NOTE_OPENING = re.compile(r"^\[\s*notes?\b[^\[\]]*$", re.IGNORECASE)
_NOTE_CLOSING = re.compile(r"^[^\[\]]*\]\.?$")


def is_source_note(text: str) -> bool:
    """Whether a unit is only a bracketed source note (:data:`_SOURCE_NOTE`), or the opening or closing sentence of
    one split into sentences."""
    text = normalise(text)
    return bool(_SOURCE_NOTE.match(text) or _NOTE_OPENING.match(text) or _NOTE_CLOSING.match(text))


def is_broken_unit(text: str) -> bool:
    """A unit that starts with a bare list label, or ends inside a list (on a lead-in colon, or on a separator
    such as "; or" that says more items follow)."""
    text = normalise(text)
    return bool(LIST_LABEL.match(text) or _ENDS_INSIDE_LIST.search(text.rstrip(". ")))
