"""Every exit status of the ``rirag`` command, in one table.

The library raises typed errors (:class:`~rirag.data.DataError`, :class:`~rirag.generation.base.GenerationError`,
:class:`~rirag.scoring.models.MissingModelError`, ...); only the command (:mod:`rirag.cli`) turns them into these
numbers (:func:`rirag.cli.runner.run_command`).
"""

from __future__ import annotations

#: The command did what it was asked.
EXIT_OK = 0
#: An expected failure: bad input, a missing file or model, an unwritable output, a bad option (argparse's one line).
EXIT_USAGE = 2
#: Generation failed mid-run (``rirag answer``/``submit``): the answers written so far are kept; rerun to resume.
EXIT_GENERATION_ERROR = 3
#: Interrupted by Ctrl-C (SIGINT): results already written are complete; nothing half-written is left.
EXIT_INTERRUPTED = 130
