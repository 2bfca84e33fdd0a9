"""The walk over an HTML page's container element as the page is parsed (:mod:`rirag.data.ingest.html_page`): each
child read whole once it has ended (:mod:`rirag.data.ingest.html_text`), then dropped, so what is held is the open
elements and the one being read. The passages come out in the order, and with the text, of a walk over the whole
tree (:class:`~rirag.data.ingest.html_text.GenericPage`, :func:`~rirag.data.ingest.html_text.section_child`)."""

from __future__ import annotations

from typing import Iterator

from rirag.data.ingest.html_text import (
    BLOCK_TAGS,
    CONTAINER_TAGS,
    HEADING_TAGS,
    LIST_TAGS,
    NAV_CLASSES,
    NAV_TAGS,
    PARAGRAPH_TAGS,
    GenericPage,
    classes_of,
    is_hidden,
    section_child,
    section_label_of,
    tag_of,
)
from rirag.data.ingest.raw import Dropped, RawDocument, RawPassage


def free(el) -> None:
    """An element read: its content dropped and its earlier siblings (read before it) removed from the tree."""
    el.clear(keep_tail=True)
    parent = el.getparent()
    if parent is not None:
        while el.getprevious() is not None:
            del parent[0]



# -- the walk over the container as it is parsed -------------------------------------------------------------------
#: How an element under the container is read: walked into (its children read as each ends), read whole when it
#: ends, left out, inside one read whole, or undecided (a block that is one paragraph unless it holds a block).
DESCEND, WHOLE, SKIP, INSIDE, UNDECIDED = "descend", "whole", "skip", "inside", "undecided"
PENDING = "pending"  # inside an undecided block: read with it, or walked into once a block starts inside it


class _Frame:
    __slots__ = ("el", "kind", "visitor")

    def __init__(self, el, kind: str, visitor=None) -> None:
        self.el, self.kind, self.visitor = el, kind, visitor


class _GenericLevel:
    """A level of a generic page's walk (:meth:`GenericPage.dispatch`, one child at a time)."""

    def __init__(self, page: "GenericPage") -> None:
        self.page = page

    def kind_of(self, child) -> tuple[str, object]:
        """How ``child`` is read, from what its start tag says (as :meth:`GenericPage.dispatch` would read it)."""
        tag = tag_of(child)
        if tag is None or is_hidden(child):
            return SKIP, None
        if (tag in NAV_TAGS or classes_of(child) & NAV_CLASSES or tag in HEADING_TAGS or tag in LIST_TAGS
                or tag == "table" or tag in PARAGRAPH_TAGS):
            return WHOLE, None
        if tag in BLOCK_TAGS:
            return UNDECIDED, None
        return DESCEND, self  # an inline element is walked into

    def done(self, child) -> bool:
        self.page.dispatch(child)
        return True

    def closed(self) -> None:
        pass


class _SectionLevel:
    """A PRA-Rulebook ``part-content`` or ``chapter-section``, one child at a time
    (:func:`~rirag.data.ingest.html_text.section_child`): a section's heading path step is its first ``div-row``
    child, and what comes before that row is kept until it is read."""

    def __init__(self, doc: RawDocument, dropped: Dropped, parent: tuple[str, ...], labelled: bool) -> None:
        self.doc, self.dropped, self.parent = doc, dropped, parent
        self.path: tuple[str, ...] | None = parent if labelled else None
        self.subheading: str | None = None
        self.waiting: list = []  # children read before the section's heading row

    def kind_of(self, child) -> tuple[str, object]:
        if self.path is None:
            return WHOLE, None
        cls = classes_of(child)
        if "chapter-section" in cls:
            return DESCEND, _SectionLevel(self.doc, self.dropped, self.path, labelled=False)
        if "row-block" not in cls and not cls & NAV_CLASSES and "div-row" in cls:
            return SKIP, None  # a section's own heading row
        return WHOLE, None

    def done(self, child) -> bool:
        if self.path is None:
            if "div-row" in classes_of(child):  # the heading row (read again as a child: it may be a rule too)
                self.path = self.parent + section_label_of(child)
                self._read(self.waiting + [child])
                self.waiting = []
                return True
            self.waiting.append(child)
            return False
        self._read([child])
        return True

    def _read(self, children) -> None:
        for child in children:
            self.subheading = section_child(child, self.path, self.subheading, self.doc, self.dropped)

    def closed(self) -> None:
        if self.path is None:  # no heading row: the section adds no step
            self.path = self.parent
            self._read(self.waiting)
            self.waiting = []


class StreamedWalk:
    """The passages of the container element as the page is read: each child read when it ends
    (:class:`_GenericLevel` or :class:`_SectionLevel`), then dropped from the tree, so what is held is the open
    elements and the one being read. A block (``div``, ``section``, ...) is one paragraph unless it holds another
    block: it is kept until it ends, or until a block inside it starts, when the children it holds are read and the
    rest as they end. The passages come out in the order, and with the text, of a walk over the whole tree."""

    def __init__(self, doc: RawDocument, dropped: Dropped, rulebook: bool) -> None:
        self.doc, self.dropped, self.rulebook = doc, dropped, rulebook
        self.frames: list[_Frame] = []
        self.inside = False
        self.count = 0

    def enter(self, el) -> None:
        self.inside = True
        level = (_SectionLevel(self.doc, self.dropped, (self.doc.title,), labelled=True) if self.rulebook
                 else _GenericLevel(GenericPage(self.doc, self.dropped)))
        self.frames.append(_Frame(el, DESCEND, level))

    def start(self, el) -> None:
        top = self.frames[-1]
        if top.kind == DESCEND:
            kind, visitor = top.visitor.kind_of(el)
        elif top.kind in (UNDECIDED, PENDING):
            if tag_of(el) in CONTAINER_TAGS:
                self._commit()
                return self.start(el)
            kind, visitor = PENDING, None
        else:
            kind, visitor = INSIDE, None
        self.frames.append(_Frame(el, kind, visitor))

    def _commit(self) -> None:
        """A block starts inside an undecided one: the undecided one is walked into, and so is each open element
        down to the new block that the walk would walk into (the first it reads whole ends the chain)."""
        u = next(i for i in range(len(self.frames) - 1, -1, -1) if self.frames[i].kind == UNDECIDED)
        # only a generic page's blocks are undecided, and its levels are one (the page's state is in GenericPage)
        self.frames[u].kind, self.frames[u].visitor = DESCEND, self.frames[u - 1].visitor
        self._read_done_children(u)
        for i in range(u + 1, len(self.frames)):
            kind, visitor = self.frames[i - 1].visitor.kind_of(self.frames[i].el)
            if kind in (DESCEND, UNDECIDED):  # it holds the new block: walked into
                self.frames[i].kind = DESCEND
                self.frames[i].visitor = visitor if visitor is not None else self.frames[i - 1].visitor
                self._read_done_children(i)
                continue
            self.frames[i].kind, self.frames[i].visitor = kind, None
            for f in self.frames[i + 1:]:
                f.kind, f.visitor = INSIDE, None
            break

    def _read_done_children(self, i: int) -> None:
        """The children of frame ``i`` that have ended (all but the open one, frame ``i + 1``), read in order and
        dropped from the tree."""
        el, level = self.frames[i].el, self.frames[i].visitor
        open_child = self.frames[i + 1].el if i + 1 < len(self.frames) else None
        for child in list(el):
            if child is open_child:
                break
            level.done(child)
            el.remove(child)

    def end(self, el) -> bool:
        frame = self.frames.pop()
        if not self.frames:  # the container
            frame.visitor.closed()
            self.inside = False
            return True
        parent = self.frames[-1]
        if parent.kind != DESCEND:
            return False  # read with the element that holds it
        if frame.kind == DESCEND:
            frame.visitor.closed()
            free(el)
        elif frame.kind == SKIP or parent.visitor.done(el):
            free(el)
        return False

    def ready(self, last: bool = False) -> Iterator[tuple[RawDocument, RawPassage]]:
        """The passages read so far, less the last (a list or table after it may still join it) unless ``last``."""
        passages = self.doc.passages
        keep = 0 if last else 1
        if len(passages) > keep:
            done = passages[:len(passages) - keep]
            del passages[:len(passages) - keep]
            for p in done:
                self.count += 1
                yield self.doc, p
