"""The exit statuses of the ``rirag`` command: the project's one table, :mod:`rirag.exit_codes`, re-exported for the
command's modules (the lowest layer of :mod:`rirag.cli`)."""

from __future__ import annotations

from rirag.exit_codes import (
    EXIT_GENERATION_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
)

__all__ = ["EXIT_GENERATION_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE"]
