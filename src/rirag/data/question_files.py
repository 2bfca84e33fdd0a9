"""The formats a questions file may come in, read into records: what :func:`rirag.data.questions.read_questions`
checks. One module so that every ``--questions`` reads the same three formats (:data:`FORMATS_READ`):

* JSON: a list of ``{QuestionID, Question, Gold?}`` objects (ObliQA's own files);
* JSONL: one such object a line (blank lines skipped);
* CSV: a header row naming ``QuestionID`` and ``Question`` (other columns kept), its delimiter a comma, a semicolon
  (what a spreadsheet writes where the comma is the decimal mark) or a tab, whichever the header holds most of. A
  ``Gold`` (or ``Passages``) cell holds passage ids separated by ``|``, or a JSON list; an empty cell is no gold.

The format is the file's suffix's (``.json``, ``.jsonl`` / ``.ndjson``, ``.csv`` / ``.tsv``); any other suffix is
told by the text (``[`` opens JSON, ``{`` JSONL, anything else a CSV header). A UTF-8 byte order mark is dropped.
Every refusal names the file and where in it (``record N`` of a JSON list, ``line N`` of the others); a file that is
none of the three says which formats are read.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from rirag.errors import DataError
from rirag.io import parse_json, read_input_bytes

#: What a refusal says is read (one source: the commands' help says it too).
FORMATS_READ = ("JSON (a list of {QuestionID, Question} records), JSONL (one such record a line) or CSV (a header "
                "row with QuestionID and Question; comma-, semicolon- or tab-separated)")
#: The suffixes whose format is not told by the text.
JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv", ".tsv")
#: The delimiters a CSV header is looked at for, most frequent wins (a tie: the first).
CSV_DELIMITERS = (",", ";", "\t")
#: The CSV columns that hold gold passage ids, and what separates several in one cell.
CSV_GOLD_COLUMNS = ("Gold", "Passages")
CSV_GOLD_SEPARATOR = "|"


def _text(path: Path) -> str:
    data = read_input_bytes(path)
    try:
        return data.decode("utf-8-sig")  # a byte order mark (what Excel writes first) dropped
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.start})") from err


def _format(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix in JSON_SUFFIXES:
        return "jsonl" if text.lstrip()[:1] == "{" else "json"  # a .json file of one object a line is JSONL
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in CSV_SUFFIXES:
        return "csv"
    return {"[": "json", "{": "jsonl"}.get(text.lstrip()[:1], "csv")


def _json(path: Path, text: str) -> list[tuple[str, Any]]:
    data = parse_json(text, str(path))
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of {{QuestionID, Question}} records, got "
                        f"{type(data).__name__}; questions are read as {FORMATS_READ}")
    return [(f"record {i}", rec) for i, rec in enumerate(data)]


def _one_json_value(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _jsonl(path: Path, text: str) -> list[tuple[str, Any]]:
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((f"line {n}", json.loads(line)))
        except json.JSONDecodeError as err:
            if _one_json_value(text):  # one object over several lines (pretty-printed): not a list of records
                return _json(path, text)
            raise DataError(f"{path}: line {n}: malformed JSON at column {err.colno} ({err.msg}); questions are "
                            f"read as {FORMATS_READ}") from err
        except RecursionError:
            raise DataError(f"{path}: line {n}: JSON nested too deeply to read") from None
    return records


def _gold_cell(cell: str, where: str) -> list:
    cell = cell.strip()
    if cell.startswith("["):
        gold = parse_json(cell, f"{where}: field 'Gold'")
        if not isinstance(gold, list):
            raise DataError(f"{where}: field 'Gold' must be a list")
        return gold
    return [part.strip() for part in cell.split(CSV_GOLD_SEPARATOR) if part.strip()]


def _csv(path: Path, text: str) -> list[tuple[str, Any]]:
    lines = text.splitlines(keepends=True)
    header = lines[0] if lines else ""
    delimiter = max(CSV_DELIMITERS, key=header.count)
    reader = csv.DictReader(lines, delimiter=delimiter)
    names = [(name or "").strip() for name in (reader.fieldnames or [])]
    if "QuestionID" not in names or "Question" not in names:
        raise DataError(f"{path}: not a questions file: questions are read as {FORMATS_READ}; its first line "
                        f"{header.strip()[:80]!r} names no QuestionID and Question columns")
    reader.fieldnames = names
    records = []
    try:
        for row in reader:
            where = f"line {reader.line_num}"
            if None in row:
                raise DataError(f"{path}: {where}: more cells than the header's {len(names)} columns "
                                f"(delimiter {delimiter!r})")
            rec = {k: v for k, v in row.items() if v is not None}
            for column in CSV_GOLD_COLUMNS:
                if column in rec:
                    gold = _gold_cell(rec.pop(column), f"{path}: {where}")
                    if gold:
                        rec[column] = gold
            records.append((where, rec))
    except csv.Error as err:
        raise DataError(f"{path}: line {reader.line_num}: malformed CSV ({err})") from err
    return records


_READERS = {"json": _json, "jsonl": _jsonl, "csv": _csv}


def question_records(path: str | Path) -> list[tuple[str, Any]]:
    """The records of a questions file in any of the formats read (:data:`FORMATS_READ`), each with where it is in
    the file (``record N`` or ``line N``); not yet checked (:func:`rirag.data.questions.read_questions` does)."""
    path = Path(path)
    text = _text(path)
    return _READERS[_format(path, text)](path, text)
