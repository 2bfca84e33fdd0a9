"""Importing rirag loads no heavy dependency: torch and the libraries built on it load inside the functions that use
them, so ``rirag --help``, the data tools and BM25 start in a fraction of a second.

Each check runs in a fresh interpreter (this test process has long since imported torch).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch", "transformers", "sentence_transformers", "lightgbm", "datasets", "peft", "trl", "sklearn")

# imports every module of rirag in turn and names, for each heavy dependency, the first module that loaded it
_PROBE = """
import importlib, json, pkgutil, sys
import rirag
heavy = {heavy!r}
first = {{}}
names = [m.name for m in pkgutil.walk_packages(rirag.__path__, "rirag.")] if {walk!r} else {modules!r}
for name in names:
    importlib.import_module(name)
    for dep in heavy:
        if dep in sys.modules and dep not in first:
            first[dep] = name
print(json.dumps({{"first": first, "imported": len(names)}}))
"""


def _probe(heavy, *, walk=False, modules=()) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    code = _PROBE.format(heavy=tuple(heavy), walk=walk, modules=list(modules))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_no_module_of_rirag_imports_a_heavy_dependency():
    result = _probe(HEAVY, walk=True)
    assert result["imported"] > 50  # the walk found the package's modules
    assert result["first"] == {}, f"heavy dependency loaded at import by: {result['first']}"


@pytest.mark.parametrize("module", ["rirag", "rirag.cli", "rirag.data.obliqa", "rirag.data.splits", "rirag.data.runs",
                                    "rirag.retrieval.bm25", "rirag.text.citations", "rirag.validation"])
def test_light_modules_stay_light(module):
    assert _probe(HEAVY, modules=[module])["first"] == {}


def test_the_command_loads_no_numpy():
    """`rirag --help` builds every subparser: the command groups import the numpy-loading scorers, retrievers and
    the focused answerer inside the command that runs them."""
    assert _probe(("numpy", *HEAVY), modules=["rirag.cli"])["first"] == {}


def test_the_probe_does_see_a_heavy_import():
    """The checks above could fail: a module that loads numpy at its top is reported."""
    assert _probe(("numpy",), modules=["rirag.retrieval.bm25"])["first"] == {"numpy": "rirag.retrieval.bm25"}
