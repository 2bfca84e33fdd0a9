"""Every exit status of the project, in one table: the ``rirag`` command (:mod:`rirag.cli`, which re-exports it as
:mod:`rirag.exit_codes`), the trainers in ``train/`` (:func:`rirag.training.runner.run_trainer`) and the batch scripts
(``make models``, ``hub_push``).

The library raises typed errors (:class:`~rirag.errors.DataError`, :class:`~rirag.generation.base.GenerationError`,
:class:`~rirag.scoring.models.MissingModelError`, ...); only the command and those runners turn them into these
numbers (:func:`rirag.cli.runner.run_command`).
"""

from __future__ import annotations

#: The command did what it was asked.
EXIT_OK = 0
#: A batch script ran to its end, but some of its items failed (a stage of ``make models``, an artifact of
#: ``hub_push``); its table says which.
EXIT_SOME_FAILED = 1
#: An expected failure: bad input, a missing file or model, an unwritable output, a bad option (argparse's one line);
#: for a trainer, a refused or impossible run (the time guard, a missing input artifact).
EXIT_USAGE = 2
#: Generation failed mid-run (``rirag answer``/``submit``): the answers written so far are kept; rerun to resume.
EXIT_GENERATION_ERROR = 3
#: Interrupted by Ctrl-C (SIGINT): results already written are complete; nothing half-written is left.
EXIT_INTERRUPTED = 130
#: Terminated by SIGTERM (``kill``, a scheduler's time limit): handled as Ctrl-C (one line, the lock removed, the
#: answers written so far kept, resumable), with the status a shell gives a process SIGTERM ends (128 + 15).
EXIT_TERMINATED = 143
