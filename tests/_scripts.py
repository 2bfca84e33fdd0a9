"""Import the repository's scripts (train/, benchmarks/, docs/, dataset_builders/), which are not package modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_script(relative: str, name: str | None = None):
    """The module at ``REPO/relative``, registered in ``sys.modules`` under ``name`` (default: the file's stem), as
    dataclasses look their module up while the class is built."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
