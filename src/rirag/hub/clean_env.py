"""A card's local steps run as a user runs them: in a clean environment holding what the card's ``pip install``
lines install, and nothing else (no rirag unless the card installs it, no PYTHONPATH, no system site-packages).

The environment is made offline from this interpreter's installed distributions (:func:`clean_venv`: symlinks,
about a second, no download); a requirement the card asks for in a range the installed version is outside of is
an error, as it would be a different environment. The Hub is stood in for as :mod:`rirag.hub.load` does: each Hub
id with a local copy (an assembled upload folder, an alias) is replaced by that folder, and the run is offline
(``HF_HUB_OFFLINE=1``, a home of its own). The environment holds the console scripts of what it installs (``hf``,
``rirag``), so a card's shell steps run as written (:meth:`CleanRun.run_bash`). A Space runs in an environment of
what the Hub installs for it (:func:`space_requirements`: its ``requirements.txt`` and the Gradio its card pins).
``hub_push/push.py --clean-env`` (``make publish CLEAN_ENV=1``) checks every card so; ``tests/test_hub_as_pushed.py``
does it against a stand-in Hub server on tiny artifacts.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata as metadata
import os
import shlex
import subprocess
import venv
from pathlib import Path
from typing import Iterable, Mapping

#: What a snippet run prints before the type of what its load returned.
LOADED = "LOADED "
#: Seconds a card's snippet may take in its clean environment.
SNIPPET_TIMEOUT_S = 900


def requirement_closure(requirements: Iterable[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions that ``pip install REQUIREMENTS`` would give, their dependencies and extras
    included (``rirag[train]``), by canonical name; a requirement asked for by name whose installed version is
    outside its range (``gradio==3.19.1``) is a ValueError: the environment would not be what was asked for."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    roots = list(todo)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if req in roots and req.specifier and not req.specifier.contains(dist.version, prereleases=True):
            raise ValueError(f"{req} is asked for, but {name} {dist.version} is what is installed here")
        found[key] = dist
        for line in dist.requires or []:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append(dep)
    return {k.split("[")[0]: d for k, d in found.items()}


def clean_venv(dest: Path, requirements: Iterable[str], rirag_src: Path | None = None) -> Path:
    """A virtual environment at ``dest`` (no system site-packages, no pip) holding what ``pip install REQUIREMENTS``
    would give, from this interpreter's installed distributions (symlinks, no download), their console scripts
    included (:func:`write_console_scripts`); ``rirag`` (on no package index: ``rirag @ git+URL``) as ``rirag_src``,
    its source folder (default: the one running). Its python (an absolute path)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    requirements = list(requirements)
    closure = requirement_closure(requirements)
    venv.EnvBuilder(with_pip=False, symlinks=True, system_site_packages=False).create(dest)
    site = next(Path(dest).glob("lib/python3*/site-packages"))
    for name, dist in closure.items():
        if name == "rirag":
            continue
        base = Path(dist.locate_file(""))
        for top in sorted({f.parts[0] for f in dist.files or []}):
            if top in ("..", "__pycache__") or top.endswith(".pth") or not (base / top).exists():
                continue
            if not (site / top).exists():
                (site / top).symlink_to(base / top)
    if any(canonicalize_name(Requirement(r).name) == "rirag" for r in requirements):
        (site / "rirag").symlink_to(rirag_src or Path(__file__).resolve().parents[1])
    python = Path(dest).absolute() / "bin" / "python"
    write_console_scripts(python, closure.values())
    return python


def write_console_scripts(python: Path, distributions: Iterable[metadata.Distribution]) -> None:
    """The console scripts of ``distributions`` (``hf``, ``rirag``) in ``python``'s folder, run by it: what ``pip
    install`` writes, so that a card's shell steps find them on PATH."""
    for dist in distributions:
        for point in dist.entry_points.select(group="console_scripts"):
            script = python.parent / point.name
            if script.exists() or "/" in point.name or not point.attr:
                continue
            head = point.attr.split(".")[0]
            script.write_text(f"#!{python}\nimport sys\nfrom {point.module} import {head}\nsys.exit({point.attr}())\n",
                              encoding="utf-8")
            script.chmod(0o755)


def card_installs(card: str, folder: str | Path | None = None) -> list[str]:
    """The requirements of the card's ``pip install`` lines, as pip reads them: each named requirement (a
    ``NAME @ URL`` as NAME), and each line of a ``-r FILE`` read from ``folder`` (the downloaded repo the card's
    steps ``cd`` into); a ``-r FILE`` that is not there is a ValueError."""
    found = []
    for line in card.splitlines():
        if "pip install" not in line:
            continue
        words = shlex.split(line.split("pip install", 1)[1].split("&&")[0].strip().strip("`"))
        for i, word in enumerate(words):
            if word == "-r" and i + 1 < len(words):
                found += _requirements_file(Path(folder or ".") / words[i + 1])
            elif not word.startswith("-") and (i == 0 or words[i - 1] != "-r"):
                found.append(word.split(" @ ")[0].strip() if " @ " in word else word)
    return found


def _requirements_file(path: Path) -> list[str]:
    if not path.is_file():
        raise ValueError(f"the card installs -r {path.name}, which the repo does not hold")
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def space_requirements(folder: str | Path) -> list[str]:
    """What the Hub installs for a Gradio Space: the lines of its folder's ``requirements.txt`` (none without one),
    a ``gradio`` line replaced by ``gradio==`` the ``sdk_version`` its card pins; a card that pins none is a
    ValueError (the Hub would pick a Gradio nobody checked)."""
    from huggingface_hub import SpaceCard
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    folder = Path(folder)
    pinned = SpaceCard.load(folder / "README.md").data.to_dict().get("sdk_version")
    if not pinned:
        raise ValueError(f"{folder / 'README.md'}: the card pins no sdk_version")
    lines = _requirements_file(folder / "requirements.txt") if (folder / "requirements.txt").is_file() else []
    return [line for line in lines if canonicalize_name(Requirement(line).name) != "gradio"] + [f"gradio=={pinned}"]


#: Kept from the checking process: the locale, and where rirag finds the Hub's ObliQA and its derived caches here
#: (the stand-in for the Hub's dataset: a user downloads it, the check reads the local copy; no package comes of it).
KEPT_VARIABLES = ("LANG", "LC_ALL", "TMPDIR", "RIRAG_DATA_DIR", "RIRAG_CACHE_DIR")


def clean_environ(python: Path, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only what a user has: PATH (the environment's scripts first), a home of their own, offline Hub access (its
    ids are replaced by local copies), :data:`KEPT_VARIABLES`; ``extra`` over it."""
    keep = {k: v for k, v in os.environ.items() if k in KEPT_VARIABLES}
    return {**keep, "PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": str(home), "HF_HOME": str(home / "hf"),
            "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false",
            "GRADIO_ANALYTICS_ENABLED": "False", **(extra or {})}


def run_snippet(code: str, target: str | None, python: Path, work: Path,
                timeout: float = SNIPPET_TIMEOUT_S) -> str:
    """Run ``code`` (a card's snippet, its Hub ids already replaced by local copies) with the clean environment's
    ``python``, in ``work`` (its home inside); the type of what it bound to ``target`` ("ran" without one). A
    snippet that fails is a RuntimeError with the end of what it wrote."""
    work.mkdir(parents=True, exist_ok=True)
    script = work / "card_snippet.py"
    report = f"\nprint({LOADED!r} + type({target}).__name__)\n" if target else f"\nprint({LOADED!r} + 'ran')\n"
    script.write_text(code + report, encoding="utf-8")
    done = subprocess.run([str(python), script.name], cwd=work, env=clean_environ(python, work / "home"),
                          capture_output=True, text=True, timeout=timeout)
    _check(done)
    said = [line for line in done.stdout.splitlines() if line.startswith(LOADED)]
    return said[-1].removeprefix(LOADED) if said else "ran"


def _check(done: subprocess.CompletedProcess) -> None:
    """A RuntimeError with the last line a failed run wrote on stderr."""
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"in a clean environment: {lines[-1] if lines else f'exit {done.returncode}'}")


def run_bash(code: str, python: Path, work: Path, extra: Mapping[str, str] | None = None,
             timeout: float = SNIPPET_TIMEOUT_S) -> None:
    """Run ``code`` (a card's shell steps) with ``bash -e`` in ``work``, the clean environment of ``python`` first on
    PATH (:func:`clean_environ`, ``extra`` over it); a step that fails is a RuntimeError with the end of what it
    wrote."""
    work.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=work,
                          env=clean_environ(python, work / "home", extra), capture_output=True, text=True,
                          timeout=timeout)
    _check(done)


@dataclasses.dataclass(frozen=True)
class CleanRun:
    """Where a card's steps run in a clean environment: its python and a work folder (a home inside)."""

    python: Path
    work: Path

    @classmethod
    def for_card(cls, card: str, folder: Path, work: Path) -> "CleanRun":
        """The clean environment of what ``card`` installs (``-r FILE`` read from the repo ``folder``)."""
        return cls(clean_venv(work / "venv", card_installs(card, folder)), work)

    @classmethod
    def for_space(cls, folder: Path, work: Path) -> "CleanRun":
        """The clean environment of what the Hub installs for the Space in ``folder`` (:func:`space_requirements`)."""
        return cls(clean_venv(work / "space-venv", space_requirements(folder)), work / "space")

    def environ(self) -> dict[str, str]:
        return clean_environ(self.python, self.work / "home")

    def run_snippet(self, code: str, target: str | None) -> str:
        return run_snippet(code, target, self.python, self.work)

    def run_bash(self, code: str, extra: Mapping[str, str] | None = None) -> Path:
        """Run a card's shell steps (:func:`run_bash`) in a folder of their own; that folder."""
        steps = self.work / "steps"
        run_bash(code, self.python, steps, extra)
        return steps
