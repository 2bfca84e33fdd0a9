"""How a subcommand runs: its return value is the exit status; an expected failure is one line on stderr and
:data:`~rirag.exit_codes.EXIT_USAGE`, Ctrl-C one line and :data:`~rirag.exit_codes.EXIT_INTERRUPTED`."""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

from rirag.cli.checks import error_line
from rirag.errors import DataError
from rirag.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

#: The command's own logger: its one-line errors read 'ERROR rirag: ...'.
command_logger = logging.getLogger("rirag")

#: Failures a user can cause and fix: reported in one line with exit status 2, never as a traceback.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (DataError, ValueError, OSError)


def _expected_errors() -> tuple[type[BaseException], ...]:
    extra: list[type[BaseException]] = []
    try:  # huggingface_hub's network errors (httpx ones do not derive from OSError)
        import httpx

        extra.append(httpx.HTTPError)
    except ImportError:
        pass
    return EXPECTED_ERRORS + tuple(extra)


def run_command(func: Callable[[Any], Any], args: Any, verbose: bool = False) -> int:
    """Run a subcommand: its return code (0 when it returns a non-int); an expected failure → one line on stderr
    and 2 (with ``verbose``, the traceback too); Ctrl-C → one line and 130."""
    try:
        rc = func(args)
        return rc if isinstance(rc, int) else EXIT_OK
    except KeyboardInterrupt:
        command_logger.error("interrupted (Ctrl-C): results already written are complete; nothing half-written was "
                             "left")
        return EXIT_INTERRUPTED
    except _expected_errors() as err:
        _flush_progress()
        command_logger.error("%s", error_line(err), exc_info=verbose)
        return EXIT_USAGE


def _flush_progress() -> None:
    """Let progress bars that an error interrupted finish their line first, so the error line comes last."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def checked(pre: Callable[[Any], None], func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``func(args)`` after ``pre(args)``, the checks that must pass before any work."""
    def run(args: Any):
        pre(args)
        return func(args)

    run.__name__ = getattr(func, "__name__", "run")
    return run
