"""Dependency floors (issue 68, item 9): no file that installs rirag or one of its Spaces admits a version known to
fail with the rest of what it installs. Each known failure is one row: the package, the version, why."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib", reason="Python 3.11's tomllib reads pyproject.toml")

REPO = Path(__file__).resolve().parents[1]

#: (package, a version that fails, why): each must be outside every range that names the package.
KNOWN_FAILING = [
    ("evaluate", "0.4.3", "with datasets >= 4 a column is a Column, not a list: metrics computed on it fail "
                          "(fixed in evaluate 0.4.5, 'Support datasets 4')"),
    ("evaluate", "0.4.5", "reads huggingface_hub.HfFolder, gone from huggingface-hub 1.x, to load a metric from the "
                          "Hub (removed in evaluate 0.4.6)"),
    ("datasets", "3.6.0", "made for huggingface-hub 0.x (requests), not the 1.x rirag needs (httpx from 4.2.0)"),
    ("datasets", "4.1.1", "made for huggingface-hub 0.x (requests), not the 1.x rirag needs (httpx from 4.2.0)"),
]
#: A version of each that works (the floor itself), so that a range excluding everything is caught too.
WORKING = {"evaluate": "0.4.6", "datasets": "4.2.0"}


def _requirements() -> list[tuple[str, Requirement]]:
    """Every requirement of pyproject.toml (dependencies and extras) and of the Spaces' requirements.txt files."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    found = [("pyproject.toml", Requirement(r)) for r in project["dependencies"]]
    found += [("pyproject.toml", Requirement(r)) for extra in project["optional-dependencies"].values()
              for r in extra if not r.startswith("rirag")]
    for path in ("spaces/demo/requirements.txt", "evaluate_scripts/repass/requirements.txt"):
        for line in (REPO / path).read_text("utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                found.append((path, Requirement(line)))
    return found


@pytest.mark.parametrize("package, version, why", KNOWN_FAILING, ids=[f"{p}=={v}" for p, v, _ in KNOWN_FAILING])
def test_no_range_admits_a_version_known_to_fail(package, version, why):
    ranges = [(where, r) for where, r in _requirements() if r.name.lower() == package]
    assert ranges, f"no file names {package}"
    for where, r in ranges:
        assert version not in r.specifier, f"{where}: {r} admits {package} {version}, which fails: {why}"
        assert WORKING[package] in r.specifier, f"{where}: {r} admits no working {package}"
