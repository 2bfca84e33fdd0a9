"""The encoder of `rirag ask` (rirag.retrieval.encoder): a plain sentence-transformers folder gives the same
embeddings without importing sentence-transformers; any other folder is left to sentence-transformers."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rirag.retrieval.encoder import PlainEncoder, load_encoder, plain_pipeline, shared_encoder
from tiny_encoder import tiny_sentence_transformer

TEXTS = ["how long must capital adequacy records be kept", "client money", "an authorised person must maintain "
         "records for six years and the regulator may require a report at any time", "guidance"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st")


@pytest.mark.parametrize("options", [{}, {"prompt": "query: ", "normalize_embeddings": True, "batch_size": 3}])
def test_plain_encoder_gives_sentence_transformers_embeddings(tiny_model, options):
    expected = load_encoder(str(tiny_model)).encode(TEXTS, convert_to_numpy=True, **options)
    got = PlainEncoder(tiny_model).encode(TEXTS, **options)
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.allclose(got, expected, atol=1e-6)
    assert not np.allclose(got[0], got[1], atol=1e-3)  # different texts, different rows


def test_only_a_plain_transformer_and_mean_pooling_folder_is_run_without_sentence_transformers(tiny_model, tmp_path):
    assert plain_pipeline(tiny_model) == {"normalize": False, "max_seq_length": None}  # the tokenizer's: 64
    assert PlainEncoder(tiny_model).max_seq_length == 64 and PlainEncoder(tiny_model, 16).max_seq_length == 16
    cls = shutil.copytree(tiny_model, tmp_path / "cls")
    pooling = json.loads((cls / "1_Pooling" / "config.json").read_text())
    (cls / "1_Pooling" / "config.json").write_text(json.dumps({**pooling, "pooling_mode": "cls"}))
    dense = shutil.copytree(tiny_model, tmp_path / "dense")
    modules = json.loads((dense / "modules.json").read_text())
    (dense / "modules.json").write_text(json.dumps([*modules, {"idx": 2, "name": "2", "path": "2_Dense",
                                                               "type": "sentence_transformers.models.Dense"}]))
    assert plain_pipeline(cls) is None and plain_pipeline(dense) is None and plain_pipeline(tmp_path / "none") is None
    assert not isinstance(shared_encoder(str(cls)), PlainEncoder)  # sentence-transformers runs it


def test_the_shared_encoder_loads_once_without_sentence_transformers(tiny_model):
    code = ("import sys, json; from rirag.retrieval.encoder import shared_encoder; m = shared_encoder(sys.argv[1]); "
            "m.encode(['client money']); print(json.dumps([m is shared_encoder(sys.argv[1]), type(m).__name__, "
            "'sentence_transformers' in sys.modules]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, str(tiny_model)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    # ONNX Runtime where it is installed (tests/test_onnx_inference.py), else transformers
    kind = "OnnxPlainEncoder" if importlib.util.find_spec("onnxruntime") else "PlainEncoder"
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, kind, False]
