"""The package's facade (``from rirag import AnsweringSession``, ...): each name is its module's object, imported only
when it is used; an unknown name is an AttributeError.

Import checks run in a fresh interpreter (this test process may have imported everything already).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rirag

SRC = Path(__file__).resolve().parents[1] / "src"
#: name -> the module that defines it
EXPECTED = {"AnsweringSession": "rirag.generation.session", "AnsweringJob": "rirag.generation.job",
            "AnswerOptions": "rirag.generation.pipeline",
            "build_retriever": "rirag.retrieval.registry", "retriever_spec": "rirag.retrieval.registry",
            "load_obliqa": "rirag.data.obliqa", "read_answers": "rirag.data.answers",
            "read_questions": "rirag.data.questions"}
HEAVY = ("torch", "transformers", "sentence_transformers", "numpy", "rirag.generation", "rirag.retrieval",
         "rirag.data")


def _fresh(code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_exported_name_is_its_modules_object(name):
    assert getattr(rirag, name) is getattr(importlib.import_module(EXPECTED[name]), name)
    assert name in rirag.__all__ and name in dir(rirag)


def test_the_facade_exports_exactly_these_names():
    assert sorted(rirag.__all__) == sorted(["__version__", *EXPECTED])
    assert rirag.__version__ == importlib.import_module("rirag.constants").VERSION


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Answerer'"):
        rirag.Answerer  # noqa: B018 - the look-up is the test
    assert not hasattr(rirag, "load_corpus")
    with pytest.raises(ImportError):
        exec("from rirag import no_such_name", {})


def test_import_rirag_loads_nothing_until_a_name_is_used():
    code = ("import json, sys; import rirag; heavy = {heavy!r}; "
            "loaded = lambda: [m for m in heavy if m in sys.modules]; "
            "before = loaded(); dir(rirag); listed = loaded(); from rirag import read_questions; "
            "print(json.dumps([before, listed, loaded()]))").format(heavy=HEAVY)
    before, listed, after = _fresh(code)
    assert before == [] and listed == []  # neither the import nor dir() loads a module of the facade
    assert "rirag.data" in after and "rirag.generation" not in after and "torch" not in after  # only what it needs


def test_the_session_loads_through_the_facade_without_torch():
    """``from rirag import AnsweringSession`` imports the session's module, still without torch (models load when a
    session opens)."""
    before, after = _fresh("import json, sys; import rirag; b = 'rirag.generation.session' in sys.modules; "
                           "from rirag import AnsweringSession; "
                           "print(json.dumps([b, [m for m in ('rirag.generation.session', 'torch', 'transformers') "
                           "if m in sys.modules]]))")
    assert before is False and after == ["rirag.generation.session"]
