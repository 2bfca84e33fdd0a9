"""Inference with ONNX Runtime (rirag.onnx_inference): the encoder and the obligation classifier of `rirag ask` give
torch's embeddings and labels without importing torch, exported once into the cache; torch runs them where ONNX
Runtime is turned off, not wanted (a GPU) or cannot run the folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from rirag import onnx_inference as ox  # noqa: E402
from rirag.retrieval.encoder import OnnxPlainEncoder, PlainEncoder, shared_encoder  # noqa: E402
from tiny_encoder import tiny_sentence_transformer, write_vocab  # noqa: E402

TEXTS = ["how long must capital adequacy records be kept", "client money", "an authorised person must maintain "
         "records for six years and the regulator may require a report at any time " * 8, "guidance", ""]
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st", dropout=0.0)


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("models") / "tiny-cls"
    vocab = write_vocab(folder)
    BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True).save_pretrained(folder)
    torch.manual_seed(3)
    config = BertConfig(vocab_size=len(vocab.read_text().split()), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=37, max_position_embeddings=64, initializer_range=0.5,
                        id2label={0: "not_obligation", 1: "obligation"},
                        label2id={"not_obligation": 0, "obligation": 1})
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("options", [{}, {"prompt": "query: ", "normalize_embeddings": True, "batch_size": 2}])
def test_onnx_encoder_gives_the_torch_embeddings(tiny_model, options):
    expected = PlainEncoder(tiny_model, 16).encode(TEXTS, **options)
    onnx = OnnxPlainEncoder(tiny_model, 16)
    got = onnx.encode(TEXTS, **options)
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.allclose(got, expected, atol=1e-5)
    assert not np.allclose(got[0], got[1], atol=1e-3)
    assert onnx.max_seq_length == 16
    # the same tokens as transformers' tokenizer, truncated (the long text) and padded
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(str(tiny_model))(TEXTS, padding=True, truncation=True, max_length=16)
    assert [e.ids for e in onnx.tokenizer.encode_batch(TEXTS)] == ids["input_ids"]


def test_the_export_is_made_once_and_read_from_the_cache(tiny_model):
    first = ox.exported(tiny_model)
    stamp = first.stat().st_mtime_ns
    assert ox.exported(tiny_model) == first and first.stat().st_mtime_ns == stamp
    assert ox.input_names(first) == ["input_ids", "attention_mask", "token_type_ids"]
    assert ox.exported(tiny_model, "sequence-classification") != first  # another head, another file
    with pytest.raises(ValueError, match="head"):
        ox.exported(tiny_model, "token-classification")


def test_onnx_is_wanted_on_the_cpu_unless_turned_off(monkeypatch):
    assert not ox.onnx_wanted("cuda") and not ox.onnx_wanted("cuda:0")
    monkeypatch.setenv("RIRAG_ONNX", "off")
    assert not ox.onnx_wanted("cpu")
    monkeypatch.setenv("RIRAG_ONNX", "auto")
    assert ox.onnx_wanted("cpu")


def test_the_shared_encoder_runs_with_torch_when_onnx_is_off_or_cannot_run(tiny_model, tmp_path, monkeypatch):
    assert isinstance(shared_encoder(str(tiny_model), "cpu"), OnnxPlainEncoder)
    assert isinstance(shared_encoder(str(tiny_model), "cpu", onnx=False), PlainEncoder)  # the corpus's encoder
    monkeypatch.setenv("RIRAG_ONNX", "off")
    assert isinstance(shared_encoder(str(tiny_model), "cpu", 32), PlainEncoder)
    monkeypatch.setenv("RIRAG_ONNX", "auto")
    import shutil

    bare = shutil.copytree(tiny_model, tmp_path / "no-tokenizer-json")
    (bare / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="tokenizer.json"):
        OnnxPlainEncoder(bare)
    assert isinstance(shared_encoder(str(bare), "cpu"), PlainEncoder)


def test_an_exported_encoder_runs_without_importing_torch(tiny_model):
    ox.exported(tiny_model)  # the cache this process and the child share (RIRAG_CACHE_DIR)
    code = ("import sys, json; from rirag.retrieval.encoder import shared_encoder; m = shared_encoder(sys.argv[1]); "
            "e = m.encode(['client money']); print(json.dumps([type(m).__name__, 'torch' in sys.modules, "
            "'transformers' in sys.modules, e.shape[1]]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, str(tiny_model)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["OnnxPlainEncoder", False, False, 32]


def test_the_onnx_obligation_classifier_gives_the_torch_logits_and_labels(tiny_classifier, monkeypatch):
    import torch

    from rirag.generation.extractive import obligation_classifier
    from rirag.onnx_inference import batch_inputs
    from rirag.scoring.models import load_classifier, onnx_classifier

    sentences = [t for t in TEXTS if t] + TEXTS[2].split()[:12]
    tokenizer, model = load_classifier(str(tiny_classifier), "cpu")
    with torch.inference_mode():
        expected = model(**tokenizer(sentences, padding=True, truncation=True, max_length=64,
                                     return_tensors="pt")).logits.numpy()
    monkeypatch.setenv("RIRAG_ONNX", "auto")
    onnx_classifier.cache_clear()
    fast, session, config, inputs = onnx_classifier(str(tiny_classifier), "cpu")
    got = session.run(None, batch_inputs(fast, sentences, inputs))[0]
    assert np.allclose(got, expected, atol=1e-5)
    assert np.ptp(expected[:, 1] - expected[:, 0]) > 1e-3  # the logits vary: the comparison can fail
    labels = obligation_classifier(str(tiny_classifier), "cpu", batch_size=4)(sentences)
    assert labels == (expected.argmax(-1) == 1).tolist() and len(set(labels)) == 2
    monkeypatch.setenv("RIRAG_ONNX", "off")
    onnx_classifier.cache_clear()
    assert onnx_classifier(str(tiny_classifier), "cpu") is None
    assert obligation_classifier(str(tiny_classifier), "cpu", batch_size=4)(sentences) == labels


@pytest.mark.parametrize("onnx", ["auto", "off"])
def test_the_answerers_classifier_reads_at_most_obligation_max_tokens(tiny_classifier, monkeypatch, onnx):
    import torch

    from rirag.generation import extractive
    from rirag.scoring.models import load_classifier, onnx_classifier

    sentences = [t for t in TEXTS if t]
    tokenizer, model = load_classifier(str(tiny_classifier), "cpu")
    with torch.inference_mode():
        def labels_at(n):
            logits = model(**tokenizer(sentences, padding=True, truncation=True, max_length=n,
                                       return_tensors="pt")).logits
            return (logits.argmax(-1) == 1).tolist()
        cut, whole = labels_at(4), labels_at(64)
    assert cut != whole  # reading 4 tokens changes some label: the test can fail
    monkeypatch.setenv("RIRAG_ONNX", onnx)
    monkeypatch.setattr(extractive, "OBLIGATION_MAX_TOKENS", 4)
    onnx_classifier.cache_clear()
    assert extractive.obligation_classifier(str(tiny_classifier), "cpu", batch_size=2)(sentences) == cut
    onnx_classifier.cache_clear()


@pytest.mark.parametrize("config", [{"do_lower_case": False}, {"truncation_side": "left"}])
def test_a_tokenizer_config_that_the_file_alone_does_not_follow_is_left_to_transformers(tiny_model, tmp_path, config):
    """transformers applies ``do_lower_case`` and ``truncation_side`` from tokenizer_config.json; tokenizer.json alone
    does not, so such a folder runs with torch and its tokenizer."""
    import json
    import shutil

    from rirag.onnx_inference import fast_tokenizer

    assert fast_tokenizer(tiny_model, 32) is not None
    folder = shutil.copytree(tiny_model, tmp_path / "model")
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    assert fast_tokenizer(folder, 32) is None
    assert isinstance(shared_encoder(str(folder), "cpu"), PlainEncoder)


def test_concurrent_calls_share_the_cores_in_threads_that_do_not_spin(tiny_model, monkeypatch):
    """rirag serve runs a call per core at once: each ONNX Runtime session opened after share_cores runs its share of
    the cores (not ONNX Runtime's thread per core), without spinning; the embeddings are the same."""
    monkeypatch.setattr(ox, "_shared_threads", None)
    default = OnnxPlainEncoder(tiny_model, 16)
    assert default.session.get_session_options().intra_op_num_threads == 0  # ONNX Runtime's own choice
    monkeypatch.setattr(ox, "cpu_cores", lambda: 4)
    assert ox.share_cores(2) == 2 and ox.shared_threads() == 2
    assert ox.share_cores(8) == 1  # never fewer than one
    shared = OnnxPlainEncoder(tiny_model, 16)
    options = shared.session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert np.array_equal(shared.encode(TEXTS), default.encode(TEXTS))
