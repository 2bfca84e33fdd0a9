"""The reader of saved HTML pages (``.html``, ``.htm``; lxml): a page is parsed as it is read and never held
whole. A first read (:class:`_Survey`) finds the page's title and the element its passages are in; the second
builds only that element's subtree, one child at a time, and hands each child to
:mod:`rirag.data.ingest.html_text` once it has ended (:mod:`rirag.data.ingest.html_walk`), dropping it after. The
passages are those a walk over the whole tree gives, in its order.

HTML pages of the PRA Rulebook layout (``div.part-content`` holding ``div.chapter-section`` and ``div.row-block``,
the rule number in ``span.rule-number``) are read by that structure; any other page by its headings and blocks.
Navigation, headers and footers, scripts, forms, "effective date" stamps (``row-block__info``), export links
(``page-utilities``), hidden text and tooltips are never part of a passage.

libxml2 parses in pull mode here (``etree.parse`` over a reader of the decoded text): its push mode (``feed``,
``iterparse``) keeps every byte fed until the end, a second copy of the page."""

from __future__ import annotations

import contextvars
import queue
import threading
from pathlib import Path
from typing import Callable, Iterator

from rirag.data.ingest.html_text import NAV_TAGS, block_lines, declared_charset, hidden
from rirag.data.ingest.html_walk import StreamedWalk
from rirag.data.ingest.raw import Dropped, RawDocument, RawPassage, SourceText, document_key
from rirag.errors import DataError


class _Finished(Exception):
    """Raised in a parser callback to stop the parse: the container has ended, or the reader was closed."""


class _Utf8Reader:
    """The file-like object libxml2 reads: the page's text re-encoded as UTF-8, chunk by chunk."""

    def __init__(self, src: SourceText) -> None:
        self._chunks = src.utf8_chunks()
        self._rest = b""

    def read(self, size: int = -1) -> bytes:
        while len(self._rest) < max(size, 1):
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._rest += chunk
        if size < 0:
            size = len(self._rest)
        out, self._rest = self._rest[:size], self._rest[size:]
        return out


def _parse(src: SourceText, path: Path, target) -> None:
    """Parse the page with ``target`` (lxml's parser-target interface: ``start``, ``end``, ``data``, ...), libxml2's
    HTML parser as ``lxml.html`` uses it; a callback raising :class:`_Finished` ends it."""
    from lxml import etree

    try:
        etree.parse(_Utf8Reader(src), etree.HTMLParser(target=target, encoding="utf-8"))
    except _Finished:
        pass
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as err:
        raise DataError(f"{path}: not a parsable HTML page ({err})") from err


class _Survey:
    """The first read of a page (a parser target: nothing built but the subtree of each ``h1``): the page's title
    (the first ``h1`` outside navigation with text, else its first ``<title>``), the element the passages are read
    from (the first ``part-content``, else the first visible ``main``/``article`` of the body, else the body), each
    as its place in document order, and whether the page has any text at all."""

    def __init__(self) -> None:
        from lxml import etree

        self._builder = etree.TreeBuilder
        self.n = -1
        self.stack: list[tuple[str | None, bool]] = []  # the open elements: (tag, is the body)
        self.part: int | None = None
        self.body: int | None = None
        self.main_in_body: int | None = None
        self.main_anywhere: int | None = None
        self.h1: tuple[int, str] | None = None  # (place, text) of the first h1 outside navigation with text
        self.title: str | None = None  # the first <title>'s text (None: no title, or a blank one)
        self._title: list[str] | None = None  # the first <title>'s text while it is read
        self._titled = False
        self.has_text = False
        self._h1s: list[list] = []  # [builder, place, depth] of each open h1 outside navigation

    def start(self, tag, attrib, nsmap=None) -> None:
        self.n += 1
        n, name = self.n, tag.lower() if isinstance(tag, str) else None
        if self.part is None and "part-content" in (attrib.get("class") or "").split():
            self.part = n
        is_body = self.body is None and name == "body" and len(self.stack) == 1
        if is_body:
            self.body = n
        if name in ("main", "article") and not hidden(name, attrib):
            if self.main_anywhere is None:
                self.main_anywhere = n
            if self.main_in_body is None and any(b for _, b in self.stack):
                self.main_in_body = n
        if self._title is not None:
            self._titled, self._title = True, None  # a <title>'s text is what comes before any element in it
        for h in self._h1s:
            h[0].start(tag, attrib)
            h[2] += 1
        if name == "h1" and not any(t in NAV_TAGS for t, _ in self.stack):
            builder = self._builder()
            builder.start(tag, attrib)
            self._h1s.append([builder, n, 1])
        if name == "title" and not self._titled:
            self._title = []
        self.stack.append((name, is_body))

    def end(self, tag) -> None:
        name, _ = self.stack.pop()
        if name == "title" and self._title is not None:
            text = "".join(self._title)
            self.title = " ".join(text.split("|")[0].split()) if text.strip() else None
            self._titled, self._title = True, None
        done = []
        for h in self._h1s:
            el = h[0].end(tag)
            h[2] -= 1
            if not h[2]:
                done.append(h)
                text = " ".join(block_lines(el))
                if text and (self.h1 is None or h[1] < self.h1[0]):  # a nested h1 ends before the one it is in
                    self.h1 = (h[1], text)
        for h in done:
            self._h1s.remove(h)

    def data(self, data) -> None:
        if not self.has_text and data.strip():
            self.has_text = True
        if self._title is not None:
            self._title.append(data)
        for h in self._h1s:
            h[0].data(data)

    def comment(self, text) -> None:
        for h in self._h1s:
            h[0].comment("")  # kept for its place (its tail is text); what it says is never read

    def pi(self, target, data=None) -> None:
        self.comment("")

    def close(self) -> None:
        return None

    @property
    def container(self) -> int:
        """The place of the element the passages are read from."""
        if self.part is not None:
            return self.part
        if self.body is not None:
            return self.main_in_body if self.main_in_body is not None else self.body
        return self.main_anywhere if self.main_anywhere is not None else 0

    def page_title(self, fallback: str) -> str:
        if self.h1 is not None:
            return self.h1[1]
        return self.title if self.title is not None else fallback


def read_html_page(path: Path, root_folder: Path, dropped: Dropped) -> Iterator[tuple[RawDocument, RawPassage]]:
    """The page's document, keyed by its file stem less any capture-date suffix, its passages as the page is parsed
    (none when it holds nothing beside navigation: counted as an "empty page"). The page is read twice: once for
    its title and the element its passages are in (:class:`_Survey`), once for the passages."""
    src = SourceText(path, declared_charset)
    survey = _Survey()
    _parse(src, path, survey)
    if survey.n < 0:
        raise DataError(f"{path}: not a parsable HTML page (Document is empty)")
    key = document_key(path.stem)
    doc = RawDocument(key, survey.page_title(key), path.name)
    walk = StreamedWalk(doc, dropped, rulebook=survey.part is not None)

    def produce(emit: Callable) -> None:
        _parse(src, path, _ContainerTarget(survey.container, walk, emit))
        for item in walk.ready(last=True):
            emit(item)

    yield from _produced(produce)
    if not walk.count:
        if not survey.has_text:
            raise DataError(f"{path}: no text")
        dropped.add("empty page", f"{doc.source}: no content beside navigation")


#: Passages handed from the parsing thread at a time, and batches waiting at most.
BATCH, QUEUED = 256, 8


def _produced(produce: Callable[[Callable], None]) -> Iterator:
    """What ``produce(emit)`` emits, as an iterator: it runs in a thread (libxml2's pull-mode parse cannot pause for
    a generator), handing items over in batches through a bounded queue, so memory holds a few batches whatever
    the page's size; it sees the caller's context variables (the input limit in force). An error in it is raised
    here; closing the iterator stops it at its next item."""
    items: queue.Queue = queue.Queue(maxsize=QUEUED)
    stop = threading.Event()
    batch: list = []
    end = object()

    def put(item) -> None:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Finished

    def emit(item) -> None:
        batch.append(item)
        if len(batch) >= BATCH:
            put(list(batch))
            batch.clear()

    def work() -> None:
        try:
            produce(emit)
            put(list(batch))
            put(end)
        except _Finished:
            pass
        except BaseException as err:  # handed to the reader's thread, raised there
            try:
                put(err)
            except _Finished:
                pass

    # the thread runs in the caller's context: the input limit a command's --max-input-bytes set (rirag.io.input_limit,
    # a context variable) holds there too; a new thread's own context has the default, which refused a page the
    # raised limit let in, after parsing it once
    thread = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="rirag-html-page",
                              daemon=True)
    thread.start()
    try:
        while True:
            got = items.get()
            if got is end:
                return
            if isinstance(got, BaseException):
                raise got
            yield from got
    finally:
        stop.set()
        thread.join()


class _ContainerTarget:
    """The lxml parser target of a page's second read: only the container element's subtree is built (an
    ``etree.TreeBuilder``, as lxml's parser would build it), each element handed to the walk when it opens and
    when it closes, as the parser reaches it (lxml's own events come a chunk late, when the tree is ahead of
    them); nothing outside the container is built, nothing after it read."""

    def __init__(self, container: int, walk: "StreamedWalk", emit) -> None:
        self.container, self.walk, self.emit = container, walk, emit
        self.n = -1
        self.depth = 0  # open elements of the container's subtree (0: outside it)
        self.builder = None
        self.finished = False

    def start(self, tag, attrib, nsmap=None):
        if self.finished:
            return None
        self.n += 1
        if not self.depth:
            if self.n != self.container:
                return None
            from lxml import etree

            self.builder = etree.TreeBuilder()
            el = self.builder.start(tag, attrib)
            self.depth = 1
            self.walk.enter(el)
            return el
        self.depth += 1
        el = self.builder.start(tag, attrib)
        self.walk.start(el)
        return el

    def end(self, tag):
        if self.finished or not self.depth:
            return None
        el = self.builder.end(tag)
        self.depth -= 1
        if self.walk.end(el):
            self.finished = True
            raise _Finished  # nothing after the container is read
        for item in self.walk.ready():
            self.emit(item)
        return el

    def data(self, data) -> None:
        if self.depth and not self.finished:
            self.builder.data(data)

    def comment(self, text) -> None:
        if self.depth and not self.finished:
            self.builder.comment("")  # kept for its place (its tail is text); what it says is never read

    def pi(self, target, data=None) -> None:
        self.comment("")  # a processing instruction ("<?php ... ?>"), kept the same way

    def close(self) -> None:
        return None
