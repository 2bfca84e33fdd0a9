"""The base errors: :class:`DataError` (bad input data, named file / record / field) and :class:`UsageError`."""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data; the message names the file, the record and the field."""


class UsageError(DataError):
    """Bad command-line input; the message names the option, file or field."""

