"""Cross-references: a corpus folder (ObliQA layout, ingested or not) read as the resolver's passages and aliases,
whole (:func:`xref_passages`) or one document at a time (:func:`xref_documents`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from rirag.data.obliqa import (
    DOCUMENT_MAP_FILE,
    PASSAGE_FIELDS,
    document_files,
    load_titles,
    record_marks,
    records_in,
)
from rirag.io import read_json
from rirag.xref.numbers import aliases_from_names
from rirag.xref.records import Passage


def _names(root: Path) -> tuple[dict[int, str], dict[str, str]]:
    """The document map's titles (DocumentID -> title) and aliases (short codes, other titles), read once."""
    names = read_json(root / DOCUMENT_MAP_FILE) if (root / DOCUMENT_MAP_FILE).exists() else {}
    titles = load_titles(root, names) if names else {}
    return titles, aliases_from_names({str(k): (v if isinstance(v, list) else [v])[1:] or v
                                       for k, v in names.items()})


def _passages(path: Path, titles: dict[int, str]) -> list[Passage]:
    """One document file's records as resolver passages. An ingested passage's chapter is read from its heading path
    ("4 Format and Frequency" -> 4)."""
    passages = []
    for rec in records_in(path, PASSAGE_FIELDS):
        chapter = None
        for heading in (rec.get("Headings") or [])[1:]:
            m = re.match(r"(?:Chapter\s+)?(\d+[A-Z]?)\b(?!\.\d)", str(heading))
            if m:
                chapter = m.group(1)
                break
        doc = int(rec["DocumentID"])
        passages.append(Passage(rec["ID"], str(doc), titles.get(doc, f"Document {doc}"),
                                str(rec["PassageID"]), rec["Passage"], chapter=chapter,
                                marks=record_marks(rec, f"{path}: record"), anchor=rec.get("FootnoteId") or ""))
    return passages


def xref_passages(root: str | Path) -> tuple[list[Passage], dict[str, str]]:
    """The corpus at ``root`` (ObliQA layout, ingested or not; question files not needed) as resolver passages, and
    the aliases its document map gives (short codes, other titles)."""
    root = Path(root)
    titles, aliases = _names(root)
    passages = [p for path in document_files(root) for p in _passages(path, titles)]
    return passages, aliases


def document_names(root: str | Path) -> tuple[dict[int, str], dict[str, str]]:
    """The titles (DocumentID -> title) and aliases of the corpus at ``root``, from its document map."""
    return _names(Path(root))


def xref_documents(root: str | Path, names: tuple[dict[int, str], dict[str, str]] | None = None
                   ) -> tuple[dict[str, str], dict[str, str], Callable[[str], list[Passage]]] | None:
    """The corpus at ``root`` one document at a time, where each ``documents/N.json`` holds document N (as ingested
    corpora and ObliQA are written): each document's title (id -> title, in corpus order), the aliases, and a reader
    of one document's passages (``read("7")`` reads ``documents/7.json``). None for a folder whose files are named
    otherwise: read it whole with :func:`xref_passages`. A file that holds another document's passages is an error
    when it is read (a ``ValueError`` from :class:`rirag.xref.index.CorpusIndex`). ``names``: what
    :func:`document_names` gives, when the caller has it."""
    root = Path(root)
    by_id = {f.stem: f for f in document_files(root)}
    if not all(stem.isdigit() and str(int(stem)) == stem for stem in by_id):
        return None
    titles, aliases = names if names is not None else _names(root)

    def read(doc_id: str) -> list[Passage]:
        return _passages(by_id[doc_id], titles)

    return {d: titles.get(int(d), f"Document {d}") for d in by_id}, aliases, read
