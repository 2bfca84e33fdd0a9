"""The reader of plain-text and Markdown files (``.txt``, ``.md``, ``.markdown``): a blank line ends a paragraph, a
Markdown heading (``#`` to ``######``) starts a heading path step, a list or a pipe table joins the paragraph that
introduces it (a table row carries its header: ``Header: cell; Header: cell``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from rirag.data.ingest.raw import RULE_NUMBER, Dropped, RawDocument, RawPassage, SourceText
from rirag.errors import DataError

MARKDOWN_SUFFIXES = (".md", ".markdown")
MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*$")
LIST_ITEM = re.compile(r"^([-*+•]|\d+[.)]|\([a-z0-9]{1,4}\))\s+")
TABLE_RULE = re.compile(r":?-{2,}:?")


def read_text_file(path: Path, root: Path, dropped: Dropped) -> Iterator[tuple[RawDocument, RawPassage]]:
    """One document of the file, keyed by its path under ``root`` less the suffix; its passages as the lines come
    (a passage is given once the next one starts: a list or table after it may still join it)."""
    key = path.relative_to(root).with_suffix("").as_posix()
    blocks = _Blocks(RawDocument(key, key, path.relative_to(root).as_posix()),
                     markdown=path.suffix.lower() in MARKDOWN_SUFFIXES)
    lines = SourceText(path).lines()
    if blocks.markdown:
        lines = _without_front_matter(lines, path, dropped)
    for raw in lines:
        blocks.line(raw.strip())
        yield from blocks.done()
    blocks.flush()
    yield from blocks.done(last=True)
    if not blocks.count:
        raise DataError(f"{path}: no text")


#: The most lines a Markdown front matter block may have: a ``---`` line without a closing fence this soon is a
#: thematic break (and the lines read ahead are text).
FRONT_MATTER_MAX_LINES = 1000


def _without_front_matter(lines: Iterator[str], path: Path, dropped: Dropped) -> Iterator[str]:
    """A Markdown file's lines less its YAML (``---``) or TOML (``+++``) front matter block, which is metadata."""
    first = next(lines, None)
    if first is None:
        return
    fence = first.strip()
    if fence not in ("---", "+++"):
        yield first
        yield from lines
        return
    ahead = [first]
    for line in lines:
        ahead.append(line)
        if line.strip() in (fence, "...") and (fence == "---" or line.strip() == fence):
            dropped.add("front matter", f"{path.name}: lines 1-{len(ahead)}")
            yield from lines
            return
        if len(ahead) > FRONT_MATTER_MAX_LINES:
            break
    yield from ahead  # no closing fence: a thematic break, not front matter
    yield from lines


def _list_item(line: str) -> bool:
    return bool(LIST_ITEM.match(line))


def _markdown_table(rows: list[list[str]]) -> list[str]:
    header, body = rows[0], rows[1:]
    if not body:
        return [" | ".join(header)]
    out = []
    for cells in body:
        if len(cells) == len(header):
            out.append("; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c))
        else:
            out.append(" | ".join(c for c in cells if c))
    return out


class _Blocks:
    """The paragraphs of a text file as its lines come: the heading path in force, the paragraph and the table
    being read."""

    def __init__(self, doc: RawDocument, markdown: bool) -> None:
        self.doc, self.markdown = doc, markdown
        self.heads: dict[int, str] = {}
        self.block: list[str] = []
        self.table: list[list[str]] = []
        self.last: RawPassage | None = None  # the passage a list or table after it may still join
        self.ready: list[RawPassage] = []  # passages complete, not yet given
        self.count = 0

    def done(self, last: bool = False) -> Iterator[tuple[RawDocument, RawPassage]]:
        """The passages complete so far (with ``last``, the one a list could still have joined too)."""
        if last and self.last is not None:
            self.ready.append(self.last)
            self.last = None
        for p in self.ready:
            yield self.doc, p
        self.ready.clear()

    def path(self) -> tuple[str, ...]:
        return (self.doc.title,) + tuple(self.heads[k] for k in sorted(self.heads))

    def line(self, line: str) -> None:
        heading = MARKDOWN_HEADING.match(line) if self.markdown else None
        if heading:
            self.heading(len(heading.group(1)), heading.group(2))
        elif not line:
            self.flush()
        elif self.markdown and line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(TABLE_RULE.fullmatch(c) for c in cells if c):
                self.table.append(cells)
        elif self.block and not _list_item(line) and (self.markdown or not _list_item(self.block[-1])):
            self.block[-1] = f"{self.block[-1]} {line}"  # a wrapped line of a paragraph
        else:
            self.block.append(line)

    def heading(self, level: int, text: str) -> None:
        self.flush()
        for k in [k for k in self.heads if k >= level]:
            del self.heads[k]
        if level == 1 and not self.count and self.doc.title == self.doc.key:
            self.doc.title = text
        else:
            self.heads[level] = text

    def flush(self) -> None:
        lines = list(self.block)
        only_table = bool(self.table) and not self.block
        if self.table:
            lines.extend(_markdown_table(self.table))
            self.table.clear()
        self.block.clear()
        if not lines:
            return
        is_list = _list_item(lines[0])
        if (is_list or only_table) and self.last is not None and self.last.headings == self.path():
            self.last.lines.extend(lines)  # a list or table joins the paragraph that introduces it
            return
        m = RULE_NUMBER.match(lines[0])
        if self.last is not None:
            self.ready.append(self.last)
        self.last = RawPassage(m.group(1) if m and not is_list else "", self.path(), lines)
        self.count += 1
