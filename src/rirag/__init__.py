"""rirag: Regulatory Information Retrieval and Answer Generation.

The names a user starts from, importable from the package itself::

    from rirag import (AnswerOptions, AnsweringJob, AnsweringSession, build_retriever, load_obliqa, read_answers,
                       read_questions)

Importing the package has no side effects and loads none of them: each name is imported from its module the first
time it is used (module ``__getattr__`` over :data:`_import_structure`, as trl exports its trainers), so
``import rirag`` stays light; the ``TYPE_CHECKING`` block lets type checkers and IDEs see them. Models and data load
lazily where they are used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rirag.constants import VERSION as __version__

#: The facade: module (below ``rirag``) -> the names it gives the package.
_import_structure: dict[str, list[str]] = {
    "data.answers": ["read_answers"],
    "data.obliqa": ["load_obliqa"],
    "data.questions": ["read_questions"],
    "generation.job": ["AnsweringJob"],
    "generation.pipeline": ["AnswerOptions"],
    "generation.session": ["AnsweringSession"],
    "retrieval.registry": ["build_retriever", "retriever_spec"],
}

if TYPE_CHECKING:
    from rirag.data.answers import read_answers as read_answers
    from rirag.data.obliqa import load_obliqa as load_obliqa
    from rirag.data.questions import read_questions as read_questions
    from rirag.generation.job import AnsweringJob as AnsweringJob
    from rirag.generation.pipeline import AnswerOptions as AnswerOptions
    from rirag.generation.session import AnsweringSession as AnsweringSession
    from rirag.retrieval.registry import build_retriever as build_retriever
    from rirag.retrieval.registry import retriever_spec as retriever_spec

_MODULE_OF = {name: module for module, names in _import_structure.items() for name in names}

__all__ = ["__version__", *sorted(_MODULE_OF)]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # imported once: later look-ups do not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
