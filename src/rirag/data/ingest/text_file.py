"""The reader of plain-text and Markdown files (``.txt``, ``.md``, ``.markdown``): a blank line ends a paragraph, a
Markdown heading (``#`` to ``######``) starts a heading path step, a list or a pipe table joins the paragraph that
introduces it (a table row carries its header: ``Header: cell; Header: cell``)."""

from __future__ import annotations

import re
from pathlib import Path

from rirag.data.ingest.raw import RULE_NUMBER, Dropped, RawDocument, RawPassage, read_text
from rirag.errors import DataError

MARKDOWN_SUFFIXES = (".md", ".markdown")
MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*$")
LIST_ITEM = re.compile(r"^([-*+•]|\d+[.)]|\([a-z0-9]{1,4}\))\s+")
TABLE_RULE = re.compile(r":?-{2,}:?")


def read_text_file(path: Path, root: Path, dropped: Dropped) -> list[RawDocument]:
    """One document of the file, keyed by its path under ``root`` less the suffix."""
    key = path.relative_to(root).with_suffix("").as_posix()
    blocks = _Blocks(RawDocument(key, key, path.relative_to(root).as_posix()),
                     markdown=path.suffix.lower() in MARKDOWN_SUFFIXES)
    lines = read_text(path).splitlines()
    if blocks.markdown:
        lines = _without_front_matter(lines, path, dropped)
    for raw in lines:
        blocks.line(raw.strip())
    blocks.flush()
    if not blocks.doc.passages:
        raise DataError(f"{path}: no text")
    return [blocks.doc]


def _without_front_matter(lines: list[str], path: Path, dropped: Dropped) -> list[str]:
    """A Markdown file's lines less its YAML (``---``) or TOML (``+++``) front matter block, which is metadata."""
    fence = lines[0].strip() if lines else ""
    if fence not in ("---", "+++"):
        return lines
    for i, line in enumerate(lines[1:], 1):
        if line.strip() in (fence, "...") and (fence == "---" or line.strip() == fence):
            dropped.add("front matter", f"{path.name}: lines 1-{i + 1}")
            return lines[i + 1:]
    return lines  # no closing fence: a thematic break, not front matter


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
        if level == 1 and not self.doc.passages and self.doc.title == self.doc.key:
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
        passages = self.doc.passages
        if (is_list or only_table) and passages and passages[-1].headings == self.path():
            passages[-1].lines.extend(lines)  # a list or table joins the paragraph that introduces it
            return
        m = RULE_NUMBER.match(lines[0])
        passages.append(RawPassage(m.group(1) if m and not is_list else "", self.path(), lines))
