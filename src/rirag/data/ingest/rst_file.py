"""The reader of reStructuredText files (``.rst``; docutils): a section's title is a heading path step (the
document's one top-level title its title), each paragraph, literal block or definition starts a passage, a list
joins the paragraph before it (one line an item). Directives that read other files or raw markup are off."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from rirag.data.ingest.raw import RULE_NUMBER, Dropped, RawDocument, RawPassage, read_text
from rirag.errors import DataError

#: docutils settings: no file inclusion, no raw passthrough, no messages printed, nothing read from config files.
SETTINGS = {"file_insertion_enabled": False, "raw_enabled": False, "report_level": 5, "halt_level": 5,
            "_disable_config": True, "input_encoding": "unicode"}


def _line(node) -> str:
    return " ".join(node.astext().split())


def read_rst_file(path: Path, root: Path, dropped: Dropped) -> Iterator[tuple[RawDocument, RawPassage]]:
    """One document of the file, keyed by its path under ``root`` less the suffix (docutils parses a file whole:
    the one reader that holds its file)."""
    from docutils import nodes
    from docutils.core import publish_doctree

    key = path.relative_to(root).with_suffix("").as_posix()
    tree = publish_doctree(read_text(path), source_path=str(path), settings_overrides=SETTINGS)
    doc = RawDocument(key, tree.get("title") or key, path.relative_to(root).as_posix())

    def walk(node, heads: tuple[str, ...]) -> None:
        for child in node.children:
            if isinstance(child, (nodes.title, nodes.subtitle, nodes.system_message, nodes.comment)):
                continue
            if isinstance(child, nodes.section):
                walk(child, heads + (_line(child[0]),))
            elif isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
                items = [_line(item) for item in child.children if _line(item)]
                last = doc.passages[-1] if doc.passages else None
                if last is not None and last.headings == heads:
                    last.lines.extend(items)  # a list joins the paragraph that introduces it
                elif items:
                    doc.passages.append(RawPassage("", heads, items))
            elif isinstance(child, (nodes.paragraph, nodes.literal_block, nodes.definition_list_item)):
                line = _line(child)
                m = RULE_NUMBER.match(line)
                doc.passages.append(RawPassage(m.group(1) if m else "", heads, [line]))
            else:
                walk(child, heads)

    walk(tree, (doc.title,))
    if not doc.passages:
        raise DataError(f"{path}: no text")
    passages, doc.passages = doc.passages, []
    for p in passages:
        yield doc, p
