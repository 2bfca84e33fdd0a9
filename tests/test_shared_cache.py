"""Caches that many processes share (rirag.retrieval.shared_cache): two cold processes embed the corpus once, a
truncated embeddings cache is named in one warning and rebuilt, and the embedding bar moves per batch."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rirag.data.obliqa import load_obliqa
from rirag.retrieval.dense import DenseRetriever
from rirag.retrieval.shared_cache import build_lock, checksum_path, checksum_state, holder_path
from tiny_encoder import tiny_sentence_transformer

REPO = Path(__file__).resolve().parents[1]

# One process of the two: waits for its peer to be ready, then asks for the corpus embedding. Each real embedding
# (the shards' embed_corpus) takes a second at least and leaves a line in the log file, so both processes would
# embed when nothing makes one wait.
_WORKER = r"""
import sys, time
from pathlib import Path
from rirag.data.obliqa import load_obliqa
from rirag.retrieval import embedding
from rirag.retrieval.dense import DenseRetriever

data, model, cache, log, me, peer = sys.argv[1:]
original = embedding.embed_corpus
def slow_embed(*args, **kwargs):
    with open(log, "a") as fh:
        fh.write(me + "\n")
    time.sleep(1.5)
    return original(*args, **kwargs)
embedding.embed_corpus = slow_embed
retriever = DenseRetriever(load_obliqa(data).corpus, model, cache=cache)
Path(log + "." + me).touch()
deadline = time.time() + 120
while not Path(log + "." + peer).exists() and time.time() < deadline:
    time.sleep(0.05)
emb = retriever.passage_embeddings(show_progress=False)
print(emb.shape[0], float(abs(emb).sum()))
"""


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return str(tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st", dropout=0.0))


def test_two_cold_processes_on_one_cache_embed_the_corpus_once(tiny_data_dir, tiny_model, tmp_path):
    cache, log = tmp_path / "cache", tmp_path / "embedded.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           "TOKENIZERS_PARALLELISM": "false"}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tiny_data_dir), tiny_model, str(cache), str(log),
                               me, peer], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for me, peer in (("a", "b"), ("b", "a"))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    assert len(log.read_text().split()) == 1, log.read_text()  # one process embedded, the other read its cache
    assert outs[0][0] == outs[1][0]  # the same embeddings in both
    waited = "".join(err for _, err in outs)
    assert "holds its lock" in waited and "process " in waited  # the waiting one said who holds the lock


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("sidecar", [True, False], ids=["checksum", "no-checksum (a cache of before)"])
def test_a_truncated_embeddings_cache_is_named_in_one_warning_and_rebuilt(tiny_data_dir, tiny_model, tmp_path,
                                                                          caplog, sidecar):
    corpus = load_obliqa(tiny_data_dir).corpus
    first = DenseRetriever(corpus, tiny_model, cache=tmp_path)
    expected = np.array(first.passage_embeddings(show_progress=False))  # a copy: the file is memory-mapped
    path = first.cache_path()
    path.write_bytes(path.read_bytes()[:90])  # what a killed copy or a full disk leaves
    if not sidecar:
        checksum_path(path).unlink(missing_ok=True)
    caplog.set_level(logging.INFO)
    again = DenseRetriever(corpus, tiny_model, cache=tmp_path).passage_embeddings(show_progress=False)
    warned = _warnings(caplog)
    assert len(warned) == 1 and str(path) in warned[0] and "rebuilding" in warned[0], warned
    assert np.abs(np.asarray(again) - expected).max() <= 1e-6
    assert checksum_state(path) is True  # rebuilt whole, with its checksum
    caplog.clear()
    DenseRetriever(corpus, tiny_model, cache=tmp_path).passage_embeddings(show_progress=False)
    assert not _warnings(caplog)  # the rebuilt cache is read back quietly


def test_the_embedding_bar_moves_per_batch_with_the_same_rows(tiny_data_dir, tiny_model):
    corpus = load_obliqa(tiny_data_dir).corpus
    r = DenseRetriever(corpus, tiny_model, cache=False, batch_size=4)
    texts = list(r.texts)
    steps: list[int] = []
    batched = r.encode(texts, r.passage_prefix, on_batch=steps.append)
    assert steps == [4] * (len(texts) // 4) + ([len(texts) % 4] if len(texts) % 4 else [])
    assert np.abs(batched - r.encode(texts, r.passage_prefix)).max() <= 1e-5


def test_the_lock_names_its_holder_while_held_and_nothing_after(tmp_path):
    path = tmp_path / "index.npy"
    with build_lock(path, "a test build"):
        assert f"process {os.getpid()}" in holder_path(path).read_text()
    assert not holder_path(path).exists()
