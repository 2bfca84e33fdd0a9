"""Cross-references: a corpus folder (ObliQA layout, ingested or not) read as the resolver's passages and aliases."""

from __future__ import annotations

import re
from pathlib import Path

from rirag.data.obliqa import DOCUMENT_MAP_FILE, PASSAGE_FIELDS, _document_files, _load_titles, _records
from rirag.io import read_json
from rirag.xref.numbers import aliases_from_names
from rirag.xref.records import Passage


def xref_passages(root: str | Path) -> tuple[list[Passage], dict[str, str]]:
    """The corpus at ``root`` (ObliQA layout, ingested or not; question files not needed) as resolver passages, and
    the aliases its document map gives (short codes, other titles). An ingested passage's chapter is read from its
    heading path ("4 Format and Frequency" -> 4)."""
    root = Path(root)
    titles = _load_titles(root)
    names = read_json(root / DOCUMENT_MAP_FILE) if (root / DOCUMENT_MAP_FILE).exists() else {}
    aliases = aliases_from_names({str(k): (v if isinstance(v, list) else [v])[1:] or v
                                  for k, v in names.items()})
    passages = []
    for path in _document_files(root):
        for rec in _records(path, PASSAGE_FIELDS):
            chapter = None
            for heading in (rec.get("Headings") or [])[1:]:
                m = re.match(r"(?:Chapter\s+)?(\d+[A-Z]?)\b(?!\.\d)", str(heading))
                if m:
                    chapter = m.group(1)
                    break
            doc = int(rec["DocumentID"])
            passages.append(Passage(rec["ID"], str(doc), titles.get(doc, f"Document {doc}"),
                                    str(rec["PassageID"]), rec["Passage"], chapter=chapter))
    return passages, aliases
