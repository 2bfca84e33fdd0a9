"""How a subcommand runs: its return value is the exit status; an expected failure is one line on stderr and
:data:`~rirag.exit_codes.EXIT_USAGE`, Ctrl-C one line and :data:`~rirag.exit_codes.EXIT_INTERRUPTED`."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from typing import Any, Callable

from rirag.cli.checks import error_line
from rirag.errors import DataError
from rirag.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE
from rirag.io import input_limit
from rirag.validation import printable

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


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler's timeout, ``docker stop``), raised where the command is, so that it unwinds as
    for Ctrl-C: the answers written so far are kept, the lock and any temporary file are removed."""


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (once: a second SIGTERM while the
    command cleans up is ignored, so the clean-up finishes; SIGKILL still ends it at once)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_command(func: Callable[[Any], Any], args: Any, verbose: bool = False) -> int:
    """Run a subcommand: its return code (0 when it returns a non-int); an expected failure → one line on stderr
    and 2 (with ``verbose``, the traceback too); Ctrl-C → one line and 130; SIGTERM → as Ctrl-C (the same clean-up),
    one line and 143."""
    try:
        with sigterm_as_interrupt(), input_limit(getattr(args, "max_input_bytes", None)):
            rc = func(args)  # --max-input-bytes bounds every file read, where the command has the option
        return rc if isinstance(rc, int) else EXIT_OK
    except Terminated:
        _flush_progress()
        command_logger.error("terminated (SIGTERM): results already written are complete; nothing half-written was "
                             "left; rerun the same command to resume")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        command_logger.error("interrupted (Ctrl-C): results already written are complete; nothing half-written was "
                             "left")
        return EXIT_INTERRUPTED
    except _expected_errors() as err:
        _flush_progress()
        command_logger.error("%s", printable(error_line(err)), exc_info=verbose)  # a path may hold an ESC
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
