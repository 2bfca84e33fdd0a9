"""``make models``: every offline artifact the README's best paths use, trained in dependency order.

:data:`STAGES` is the one list of those artifacts, the command that trains each (the same commands as
``benchmarks/ablation.sh`` and the recipes' usage lines) and its estimated minutes. :func:`build` runs what is
missing or stale, skips what is current, and returns one :class:`Row` per stage for :func:`format_table`.

**Current** means: the artifact's marker file exists (``config.json``, ``modules.json``, ``ranker.txt`` or
``adapter_config.json``) and its stamp (``artifacts/.build/<stage>.json``, written after a successful build) records
the key it would get now. The key hashes the command, every file the command names with ``--config`` /
``--config_file`` (the recipe, the accelerate config) and the stamps of the stages it needs. So a changed recipe, a
changed command, or a rebuilt upstream artifact (a new stamp) makes an artifact **stale**, and it is rebuilt. An
artifact without a stamp (trained by hand before ``make models``) is kept and reported as ``present (no stamp)``;
``rebuild`` retrains it. The stamps live beside the artifacts, not inside them, so a published folder holds only the
model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from rirag.models import STAGES, Stage

logger = logging.getLogger(__name__)

#: Where stamps and logs go, relative to the repository root.
STAMP_DIR = "artifacts/.build"
LOG_DIR = "artifacts/logs/models"

#: Statuses of a stage.
CURRENT = "current"
UNSTAMPED = "present (no stamp)"
STALE = "stale"
MISSING = "missing"
BUILT = "built"
FAILED = "failed"
BLOCKED = "not run"
WOULD_BUILD = "would build"


# -- current / stale ------------------------------------------------------------------------------------------------


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def command_files(command: str) -> list[str]:
    """The files a command names with ``--config`` / ``--config_file`` (its recipe and accelerate config)."""
    words = shlex.split(command)
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--config", "--config_file")]


def stamp_path(stage: Stage, root: Path) -> Path:
    return root / STAMP_DIR / f"{stage.name}.json"


def read_stamp(stage: Stage, root: Path) -> dict | None:
    path = stamp_path(stage, root)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stamp_digest(stage: Stage, root: Path) -> str:
    """What a downstream stage's key records of this one: its stamp's hash (a rebuild writes a new stamp), or the
    marker's modification time for an artifact trained without ``make models``."""
    path = stamp_path(stage, root)
    if path.is_file():
        return _sha256(path.read_bytes())
    marker = root / stage.artifact / stage.marker
    return f"unstamped:{marker.stat().st_mtime_ns}" if marker.is_file() else "missing"


def stage_key(stage: Stage, root: Path, by_name: dict[str, Stage]) -> str:
    """The hash a current artifact's stamp records: command, the files it names, the stamps of its inputs."""
    files = {}
    for name in command_files(stage.command):
        path = root / name
        files[name] = _sha256(path.read_bytes()) if path.is_file() else "missing"
    upstream = {need: stamp_digest(by_name[need], root) for need in stage.needs}
    return _sha256(json.dumps({"command": stage.command, "files": files, "needs": upstream},
                              sort_keys=True).encode())


def status(stage: Stage, root: Path, by_name: dict[str, Stage]) -> str:
    """``current``, ``present (no stamp)``, ``stale`` or ``missing``."""
    if not (root / stage.artifact / stage.marker).is_file():
        return MISSING
    stamp = read_stamp(stage, root)
    if stamp is None:
        return UNSTAMPED
    return CURRENT if stamp.get("key") == stage_key(stage, root, by_name) else STALE


# -- running --------------------------------------------------------------------------------------------------------


def argv_of(command: str) -> list[str]:
    """The command's argv with ``python`` and ``accelerate launch`` run by this interpreter."""
    words = shlex.split(command)
    if words[:2] == ["accelerate", "launch"]:
        return [sys.executable, "-m", "accelerate.commands.launch", *words[2:]]
    if words and words[0] == "python":
        return [sys.executable, *words[1:]]
    return words


@dataclass
class Row:
    """One line of the table: a stage's artifact, what happened, minutes (measured, or ~estimated), command."""

    stage: Stage
    status: str
    minutes: float | None = None
    estimated: bool = False
    note: str = ""


def select(stages: Sequence[Stage], only: Iterable[str] = ()) -> list[Stage]:
    """The stages named in ``only`` (all when empty) with everything they need, in dependency order."""
    by_name = {s.name: s for s in stages}
    wanted = [n.strip() for n in only if n.strip()]
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}; stages: {', '.join(by_name)}")
    if not wanted:
        return list(stages)
    keep: set[str] = set()

    def add(name: str) -> None:
        if name not in keep:
            keep.add(name)
            for need in by_name[name].needs:
                add(need)

    for name in wanted:
        add(name)
    return [s for s in stages if s.name in keep]


def check_order(stages: Sequence[Stage]) -> None:
    """Every stage comes after the stages it needs (and they are in the list)."""
    seen: set[str] = set()
    for stage in stages:
        missing = [n for n in stage.needs if n not in seen]
        if missing:
            raise ValueError(f"stage {stage.name} needs {', '.join(missing)}, which must come before it")
        seen.add(stage.name)


def _run(stage: Stage, root: Path, log_path: Path, progress: Callable[[float], None] | None) -> int:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(f"$ {stage.command}\n")
        log.flush()
        proc = subprocess.Popen(argv_of(stage.command), cwd=root, stdout=log, stderr=subprocess.STDOUT)
        while True:
            try:
                return proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                if progress:
                    progress((time.monotonic() - start) / 60)
            except KeyboardInterrupt:
                proc.terminate()
                proc.wait()
                raise


#: The line every trainer logs once its first steps are timed (rirag.training.runner.run_estimate).
_ESTIMATE = re.compile(r"about ([0-9.]+) min for all ([0-9]+) steps")


def trainer_estimate(log_path: Path) -> float | None:
    """The minutes of training the stage's trainer estimated from its first steps (its log's last estimate line)."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
            tail = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _ESTIMATE.findall(tail)
    return float(found[-1][0]) if found else None


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    return next((line for line in reversed(lines) if line), "")


def _estimate(stage: Stage, root: Path) -> float:
    """Minutes a stage is expected to take: what its last build measured, else the stage's own estimate."""
    stamp = read_stamp(stage, root)
    return float(stamp["minutes"]) if stamp and stamp.get("minutes") else stage.minutes


def _plan(chosen: Sequence[Stage], root: Path, by_name: dict[str, Stage],
          forced: set[str]) -> tuple[dict[str, str], set[str]]:
    """Each chosen stage's status now, and what will run: missing, stale, forced, or downstream of something that
    will run."""
    to_run: set[str] = set()
    initial = {}
    for stage in chosen:
        initial[stage.name] = status(stage, root, by_name)
        if initial[stage.name] in (MISSING, STALE) or stage.name in forced or any(n in to_run for n in stage.needs):
            to_run.add(stage.name)
    return initial, to_run


def _write_stamp(stage: Stage, root: Path, by_name: dict[str, Stage], minutes: float) -> None:
    """Record a built stage: its key (what makes it stale later) and the minutes it took."""
    path = stamp_path(stage, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"stage": stage.name, "artifact": stage.artifact, "command": stage.command,
                                "key": stage_key(stage, root, by_name), "minutes": minutes,
                                "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2), encoding="utf-8")


def build(stages: Sequence[Stage] = STAGES, root: str | Path = ".", only: Iterable[str] = (),
          rebuild: Iterable[str] = (), dry_run: bool = False, show_progress: bool = True) -> list[Row]:
    """Build what is missing or stale (and ``rebuild``), in order; stop building after a failure (the stages that
    need the failed one are ``not run``; independent ones still run). Returns the table rows."""
    root = Path(root)
    chosen = select(stages, only)
    check_order(chosen)
    by_name = {s.name: s for s in stages}
    forced = {n.strip() for n in rebuild if n.strip()}
    unknown = forced - set(by_name)
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(sorted(unknown))}; stages: {', '.join(by_name)}")

    initial, to_run = _plan(chosen, root, by_name, forced)
    if dry_run:  # what would run, and nothing run
        return [Row(s, f"{WOULD_BUILD} ({initial[s.name]})" if s.name in to_run else initial[s.name],
                    _estimate(s, root) if s.name in to_run else None, estimated=s.name in to_run) for s in chosen]

    from tqdm.auto import tqdm

    total = sum(_estimate(s, root) for s in chosen if s.name in to_run)
    bar = tqdm(total=round(total, 1), unit="min", desc="make models", disable=not show_progress or not to_run,
               bar_format="{desc} |{bar}| {percentage:3.0f}% of ~{total} min estimated")
    rows: list[Row] = []
    failed: set[str] = set()
    done_minutes = 0.0
    n_run = 0
    for stage in chosen:
        if stage.name not in to_run:
            stamp = read_stamp(stage, root)
            rows.append(Row(stage, initial[stage.name], stamp.get("minutes") if stamp else None))
            continue
        blocked = [n for n in stage.needs if n in failed]
        if blocked:
            failed.add(stage.name)
            rows.append(Row(stage, BLOCKED, note=f"needs {', '.join(blocked)}"))
            continue
        n_run += 1
        expected = _estimate(stage, root)
        label = f"[{n_run}/{len(to_run)}] {stage.name}"
        bar.set_description_str(f"{label}: starting, ~{expected:.0f} min")
        logger.info("[%d/%d] %s -> %s: about %.0f min (%s; log %s)", n_run, len(to_run), stage.name, stage.artifact,
                    expected, initial[stage.name], Path(LOG_DIR) / f"{stage.name}.log")

        log_path = root / LOG_DIR / f"{stage.name}.log"

        def progress(minutes: float, expected=expected, label=label, before=done_minutes, log_path=log_path) -> None:
            bar.n = round(min(before + min(minutes, expected), total), 1)  # a stage never runs the bar past its share
            measured = trainer_estimate(log_path)
            note = f"; its trainer estimates {measured:.0f} min of training" if measured is not None else ""
            bar.set_description_str(f"{label}: {minutes:.1f} of ~{expected:.0f} min{note}")

        start = time.monotonic()
        rc = _run(stage, root, log_path, progress if show_progress else None)
        minutes = round((time.monotonic() - start) / 60, 1)
        done_minutes += expected
        bar.n = round(min(done_minutes, total), 1)
        bar.refresh()
        if rc != 0 or not (root / stage.artifact / stage.marker).is_file():
            failed.add(stage.name)
            why = f"exit {rc}" if rc != 0 else f"no {stage.marker} written"
            rows.append(Row(stage, FAILED, minutes, note=f"{why}; {_last_line(log_path)[:160]} (log {log_path})"))
            continue
        _write_stamp(stage, root, by_name, minutes)
        rows.append(Row(stage, BUILT, minutes))
    bar.close()
    return rows


def format_table(rows: Sequence[Row]) -> str:
    """A Markdown table: artifact, status, minutes (``~`` marks an estimate), command."""
    lines = ["| artifact | status | minutes | command |", "|---|---|---|---|"]
    for row in rows:
        minutes = "" if row.minutes is None else f"{'~' if row.estimated else ''}{row.minutes:.1f}"
        state = f"{row.status}: {row.note}" if row.note else row.status
        lines.append(f"| {row.stage.artifact} | {state} | {minutes} | `{row.stage.command}` |")
    return "\n".join(lines)


def table_record(rows: Sequence[Row]) -> list[dict]:
    """The table as JSON rows (``scripts/models.py --record``): stage, artifact, status, minutes, command."""
    return [{"stage": r.stage.name, "artifact": r.stage.artifact, "status": r.status, "minutes": r.minutes,
             "estimated": r.estimated, "note": r.note, "command": r.stage.command} for r in rows]


def failed(rows: Sequence[Row]) -> bool:
    return any(r.status in (FAILED, BLOCKED) for r in rows)
