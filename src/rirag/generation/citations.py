"""Citations ``[n]`` in generated answers: defined in :mod:`rirag.answer_record` (the scorers read them too),
re-exported here."""

from rirag.answer_record import (  # noqa: F401
    CITATION_PATTERN,
    Citation,
    ParsedAnswer,
    citation_records,
    numbers_in,
    parse_citations,
    strip_citations,
)

__all__ = ["CITATION_PATTERN", "Citation", "ParsedAnswer", "citation_records", "numbers_in", "parse_citations",
           "strip_citations"]
