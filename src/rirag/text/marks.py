"""What a passage's structure says, applied to a quote of it: its footnote marks and its list items' levels.

An ingested page's passage carries its footnote marks as (start, end) offsets into its text and the lines that open
a list item as (offset of the line, nesting level) (``FootnoteMarks`` and ``ListItems`` of ``rirag data ingest``:
:class:`rirag.data.passage_store.Passage`). A quote of the passage (an answer's part: its words as
:func:`rirag.text.lines.normalise` writes them, possibly cut or with elision and citation marks) is searched for
them by the words around them in the passage, never by what a number looks like:

* :func:`quoted_marks`: where each mark stands in the quote (found after the words before it in the passage, or at
  the quote's start before the words after it), so that it can be taken out;
* :func:`item_breaks`: where each quoted item of a nested list starts, and how deep it is, so that it can open a
  line of its own, indented by its level;
* :func:`without_marks`: the passage's text without them (what a language model's prompt shows);
* :func:`bare_marks`: the marks a finished answer still shows (a check: an answer should show none);
* :func:`edited`: a text with such edits made, and offsets into it moved with them.
"""

from __future__ import annotations

from typing import Sequence

#: Words of the passage before a mark (at most) that place it in a quote; fewer are tried when these are not quoted.
CONTEXT_WORDS = 3
#: Words of an item's line that place its start in a quote.
ITEM_WORDS = 4
#: Characters of the passage read around an offset for those words.
_WINDOW = 240
#: How much a nested item is indented in a quote, per level below the quote's top level.
INDENT = "  "


def _words_before(passage: str, at: int, n: int) -> str:
    return " ".join(passage[max(0, at - _WINDOW):at].split()[-n:])


def _words_after(passage: str, at: int, n: int) -> str:
    return " ".join(passage[at:at + _WINDOW].split()[:n])


def _ends_word(text: str, at: int) -> bool:
    return at >= len(text) or not text[at].isalnum()


def _find(text: str, needle: str, start: int) -> int:
    """The first place at or after ``start`` where ``needle`` stands in ``text`` with no letter or digit glued to
    either end of it; -1 when none."""
    at = text.find(needle, start)
    while at >= 0 and ((at > 0 and text[at - 1].isalnum()) or not _ends_word(text, at + len(needle))):
        at = text.find(needle, at + 1)
    return at


def _in(span: tuple[int, int] | None, at: int) -> bool:
    return span is None or span[0] <= at < span[1]


def quoted_marks(text: str, passage: str, marks: Sequence[tuple[int, int]],
                 span: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """Where each footnote mark of ``passage`` (``marks``: its (start, end) offsets; only those inside ``span`` of
    the passage, when given) stands in ``text``, a quote of it: (start, end) of the mark and the space before it
    (after it, for a mark the quote opens with), in text order. A mark is found after the words before it in the
    passage (:data:`CONTEXT_WORDS`, then fewer), or at the quote's start before the word after it; a mark whose
    words are not quoted is not in the quote."""
    found: list[tuple[int, int]] = []
    cursor = 0
    for start, end in sorted(marks):
        if not _in(span, start):
            continue
        mark = passage[start:end]
        for n in range(CONTEXT_WORDS, 0, -1):
            before = _words_before(passage, start, n)
            at = _find(text, f"{before} {mark}", cursor) if before else -1
            if at >= 0:
                found.append((at + len(before), at + len(before) + 1 + len(mark)))
                cursor = found[-1][1]
                break
        else:
            after = _words_after(passage, end, 1)
            if not found and after and text.startswith(f"{mark} {after}"):
                found.append((0, len(mark) + 1))
                cursor = found[-1][1]
    return found


def item_breaks(text: str, passage: str, items: Sequence[tuple[int, int]],
                span: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """Where each list item of ``passage`` (``items``: (offset of its line, level); only those inside ``span``)
    starts in ``text``, a quote of it, with its depth below the shallowest item quoted: (offset of the space before
    it, depth), in text order. None (an empty list) unless the quoted items are of two levels or more: a flat list
    reads well on one line."""
    found: list[tuple[int, int]] = []
    cursor = 0
    for start, level in sorted(items):
        if not _in(span, start):
            continue
        line = passage[start:passage.find("\n", start) if "\n" in passage[start:] else len(passage)]
        head = " ".join(line.split()[:ITEM_WORDS])
        at = _find(text, head, cursor) if head else -1
        if at > 0 and text[at - 1] == " ":
            found.append((at - 1, level))
            cursor = at + len(head)
    if len({level for _, level in found}) < 2:
        return []
    top = min(level for _, level in found)
    return [(at, level - top) for at, level in found]


def edited(text: str, edits: Sequence[tuple[int, int, str]], offsets: Sequence[int] = ()
           ) -> tuple[str, list[int]]:
    """``text`` with each edit (start, end, replacement: non-overlapping) made, and ``offsets`` into it moved to
    where they point after (an offset inside a replaced span goes to its start)."""
    out, moved, last = [], list(offsets), 0
    shift = [0] * len(moved)
    for start, end, new in sorted(edits):
        out += [text[last:start], new]
        last = end
        for i, at in enumerate(offsets):
            if at >= end:
                shift[i] += len(new) - (end - start)
            elif at > start:
                shift[i] += start - at
    out.append(text[last:])
    return "".join(out), [at + d for at, d in zip(moved, shift)]


def without_marks(text: str, marks: Sequence[tuple[int, int]]) -> str:
    """``text`` without its footnote marks (``marks``: their (start, end) offsets), each taken out with the space
    before it ("a write-down manager, 16 meaning" -> "a write-down manager, meaning")."""
    if not marks:
        return text
    cut = [(start - 1 if start and text[start - 1] == " " else start, end, "") for start, end in marks]
    return edited(text, cut)[0]


def bare_marks(answer: str, passage: str, marks: Sequence[tuple[int, int]]) -> list[str]:
    """The footnote marks of ``passage`` that ``answer`` shows: each mark found in it standing after the word before
    it in the passage, or before the word after it ("credit assessments; 9 [1]", "difficultly 9 ,"), as that
    word and the mark ("assessments; 9"). An answer that quotes the passage should show none."""
    shown = []
    for start, end in marks:
        mark = passage[start:end]
        before, after = _words_before(passage, start, 1), _words_after(passage, end, 1)
        if before and _find(answer, f"{before} {mark}", 0) >= 0:
            shown.append(f"{before} {mark}")
        elif after and _find(answer, f"{mark} {after}", 0) >= 0:
            shown.append(f"{mark} {after}")
    return shown
