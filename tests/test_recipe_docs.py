"""Every recipe folder has a README that names each of its YAML files, whose command lines run files that exist, and
whose cited repository paths (results files, templates, sources) exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "recipes"
FOLDERS = sorted(p.name for p in RECIPES.iterdir() if p.is_dir())
#: Top-level folders whose paths a README may cite; a cited path under one of them must exist.
CITED_ROOTS = ("train", "recipes", "src", "benchmarks", "model_cards", "hub_push", "dataset_builders", "tests",
               "scripts", "docs", "evaluate_scripts", "spaces")


def command_lines(text: str) -> list[str]:
    """The shell commands a README gives: lines of indented code blocks and inline code that start with ``python``
    or ``accelerate launch``."""
    found = [line.strip() for line in text.splitlines() if line.startswith("    ")]
    found += re.findall(r"`([^`\n]+)`", text)
    return [c for c in found if c.startswith(("python ", "accelerate launch "))]


def missing_files(command: str, root: Path = REPO) -> list[str]:
    """The ``.py`` / ``.yaml`` arguments of ``command`` (not options) that are not files under ``root``."""
    words = shlex.split(command, comments=True)
    return [w for w in words if w.endswith((".py", ".yaml")) and not w.startswith("-") and not (root / w).is_file()]


def cited_paths(text: str) -> list[str]:
    """Repository paths cited in inline code (``train/x.py``, ``benchmarks/results/x.json``), globs left out."""
    paths = re.findall(r"`((?:%s)/[\w./-]+)`" % "|".join(CITED_ROOTS), text)
    return [p for p in paths if not any(c in p for c in "*<")]


def test_the_command_check_catches_a_missing_file(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "x.py").write_text("")
    text = ("Run it:\n\n    accelerate launch --config_file recipes/accelerate/cpu.yaml train/x.py --config a.yaml\n"
            "or `python train/y.py --config a.yaml`, not `rirag ask`.\n")
    commands = command_lines(text)
    assert len(commands) == 2
    assert missing_files(commands[0], tmp_path) == ["recipes/accelerate/cpu.yaml", "a.yaml"]
    assert missing_files(commands[1], tmp_path) == ["train/y.py", "a.yaml"]


def test_every_recipe_folder_is_checked():
    assert {"accelerate", "raft", "nli_judge"} <= set(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_recipe_folder_readme(folder):
    readme = RECIPES / folder / "README.md"
    assert readme.is_file(), f"{readme.relative_to(REPO)} is missing"
    text = readme.read_text(encoding="utf-8")
    yamls = sorted(p.name for p in (RECIPES / folder).glob("*.yaml"))
    assert yamls, f"recipes/{folder} holds no YAML file"
    for name in yamls:
        assert f"recipes/{folder}/{name}" in text, f"{readme.relative_to(REPO)} does not name recipes/{folder}/{name}"

    commands = command_lines(text)
    assert commands, f"{readme.relative_to(REPO)} gives no command line"
    for command in commands:
        assert not missing_files(command), f"{readme.relative_to(REPO)}: {command!r} names missing files"
    if folder != "accelerate":  # a trainer's recipes: each one is run by a command the README gives
        for name in yamls:
            assert any(f"--config recipes/{folder}/{name}" in c for c in commands), \
                f"{readme.relative_to(REPO)}: no command runs recipes/{folder}/{name}"

    missing = [p for p in cited_paths(text) if not (REPO / p).exists()]
    assert not missing, f"{readme.relative_to(REPO)} cites paths that do not exist: {missing}"
