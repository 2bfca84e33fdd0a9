"""The reader of passage records (``.jsonl``, ``.csv``): one passage a record, ``{id?, document, rule?, headings?,
text}`` under any of the field names below; the ids a record gives are kept (checked unique), the others made."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable, Iterator

from rirag.data.ingest.raw import NEWLINES, Dropped, RawDocument, RawPassage, SourceText
from rirag.errors import DataError

RECORD_TEXT_FIELDS = ("text", "Passage", "passage")
RECORD_DOCUMENT_FIELDS = ("document", "DocumentID", "document_id", "doc")
RECORD_RULE_FIELDS = ("rule", "rule_id", "rule id", "PassageID", "passage_id", "paragraph")
RECORD_ID_FIELDS = ("id", "ID")
RECORD_HEADING_FIELDS = ("headings", "heading", "Headings", "section")


def _field(rec: dict, names: Iterable[str]):
    for name in names:
        if name in rec and rec[name] is not None:
            return rec[name]
    return None


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    """The file's records as they are read, each with its line (lines end at ``\\n``, ``\\r`` or ``\\r\\n``)."""
    text = SourceText(path)
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.lines(NEWLINES, keepends=True))
        try:
            for rec in reader:
                yield reader.line_num, rec  # the line the record ends on (the header is line 1)
        except csv.Error as err:
            raise DataError(f"{path}: line {reader.line_num}: malformed CSV ({err})") from err
        return
    for i, line in enumerate(text.lines(NEWLINES), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}: line {i}: malformed JSON ({err.msg})") from err
        if not isinstance(rec, dict):
            raise DataError(f"{path}: line {i}: expected an object, got {type(rec).__name__}")
        yield i, rec


def _record_text(rec: dict, where: str) -> str:
    text = _field(rec, RECORD_TEXT_FIELDS)
    if text is None:
        raise DataError(f"{where}: missing field 'text'")
    if not isinstance(text, str):
        raise DataError(f"{where}: field 'text' must be a string, got {type(text).__name__}")
    if not text.strip():
        raise DataError(f"{where}: field 'text' is empty")
    return text


def _record_id(rid, where: str) -> str | None:
    if rid is None:
        return None
    rid = str(rid).strip()
    if not rid or any(c.isspace() for c in rid):
        raise DataError(f"{where}: field 'id' must be a non-empty string without spaces")
    return rid


def _record_passage(rec: dict, where: str) -> tuple[str, RawPassage]:
    """The document a record belongs to and its passage (its id given or not)."""
    text = _record_text(rec, where)
    document = _field(rec, RECORD_DOCUMENT_FIELDS)
    if document is None or not str(document).strip():
        raise DataError(f"{where}: missing field 'document'")
    document = str(document).strip()
    rule = _field(rec, RECORD_RULE_FIELDS)
    heads = _field(rec, RECORD_HEADING_FIELDS)
    if isinstance(heads, str):
        heads = [h.strip() for h in heads.split(">") if h.strip()]
    lines = [" ".join(x.split()) for x in text.splitlines() if x.strip()]
    passage = RawPassage(str(rule).strip() if rule is not None else "", (document, *(heads or ())), lines,
                         given_id=_record_id(_field(rec, RECORD_ID_FIELDS), where))
    return document, passage


def read_records(path: Path, root: Path, dropped: Dropped) -> Iterator[tuple[RawDocument, RawPassage]]:
    """Documents from a JSONL/CSV of passages, record by record (a record's id is checked unique in the file); the
    passages are kept whole (never cut: a record is the user's passage)."""
    docs: dict[str, RawDocument] = {}
    seen: dict[str, int] = {}
    for line, rec in _records(path):
        rid = _field(rec, RECORD_ID_FIELDS)
        where = f"{path}: line {line}" + (f" (id {rid})" if rid else "")
        document, p = _record_passage(rec, where)
        if p.given_id is not None:
            if p.given_id in seen:
                raise DataError(f"{path}: line {line} (id {p.given_id}): id already used on line {seen[p.given_id]}")
            seen[p.given_id] = line
        doc = docs.get(document)
        if doc is None:
            doc = docs[document] = RawDocument(document, document, path.name, whole=True)
        yield doc, p
