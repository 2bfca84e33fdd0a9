"""The one table of source formats: file suffix -> reader. A new format is its own module (a function
``read(path, root, dropped)`` yielding ``(document, passage)`` pairs as the file is read, raising
:class:`~rirag.errors.DataError` naming the file) and one entry here."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from rirag.data.ingest.docx_file import read_docx_file
from rirag.data.ingest.html_page import read_html_page
from rirag.data.ingest.pdf_file import read_pdf_file
from rirag.data.ingest.raw import Dropped, RawDocument, RawPassage
from rirag.data.ingest.records import read_records
from rirag.data.ingest.rst_file import read_rst_file
from rirag.data.ingest.text_file import read_text_file


class Reader(NamedTuple):
    kind: str  # the ingest report's "kind" of a source read by it
    read: Callable[[Path, Path, Dropped], Iterator[tuple[RawDocument, RawPassage]]]


HTML = Reader("html", read_html_page)
TEXT = Reader("text", read_text_file)
RECORDS = Reader("records", read_records)

#: File suffix (lower case) -> its reader.
READERS: dict[str, Reader] = {
    ".html": HTML,
    ".htm": HTML,
    ".txt": TEXT,
    ".md": TEXT,
    ".markdown": TEXT,
    ".jsonl": RECORDS,
    ".csv": RECORDS,
    ".rst": Reader("text", read_rst_file),
    ".pdf": Reader("pdf", read_pdf_file),
    ".docx": Reader("docx", read_docx_file),
}


def reader_for(path: Path) -> Reader | None:
    return READERS.get(path.suffix.lower())
