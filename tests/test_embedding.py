"""A corpus embedded in shards (rirag.retrieval.embedding, ``rirag data embed``): every passage in exactly one shard
of one rank, resumed where it stopped, merged in order, and the same rows from one process and from two (the
two-process launch is marked ``distributed``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rirag.errors import DataError
from rirag.retrieval.embedding import (
    ShardPlan,
    embed_corpus,
    embed_shards,
    merge_shards,
    missing_shards,
    parts_dir,
    shard_path,
)

REPO = Path(__file__).resolve().parents[1]


class Counting:
    """A deterministic encoder (each text's row depends on the text alone) that records what it was asked."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return np.array([[len(t), sum(map(ord, t)) % 97, t.count("a")] for t in texts], dtype=np.float32)


TEXTS = [f"passage {i} about {'a' * (i % 5)} capital" for i in range(23)]


@pytest.mark.parametrize("world", [1, 2, 3, 7])
def test_every_passage_is_in_exactly_one_shard_of_one_rank(world):
    plan = ShardPlan(23, 4)
    rows = [i for rank in range(world) for s in plan.owned(rank, world) for i in range(*plan.bounds(s))]
    assert sorted(rows) == list(range(23)) and plan.shards == 6
    with pytest.raises(DataError, match="rank 3 is outside a world of 3"):
        plan.owned(3, 3)
    with pytest.raises(DataError, match="empty corpus"):
        ShardPlan(0, 4)


def test_two_ranks_write_their_shards_and_rank_0_merges_the_rows_of_one_process(tmp_path):
    one = embed_corpus(Counting(), TEXTS, tmp_path / "one.npy", shard_size=4)
    enc = Counting()
    assert embed_corpus(enc, TEXTS, tmp_path / "two.npy", rank=1, world=2, shard_size=4) is None  # no merge on rank 1
    assert not (tmp_path / "two.npy").exists() and [c[0] for c in enc.calls] == [TEXTS[4], TEXTS[12], TEXTS[20]]
    two = embed_corpus(enc, TEXTS, tmp_path / "two.npy", rank=0, world=2, shard_size=4)
    assert np.array_equal(np.asarray(two), np.asarray(one)) and np.array_equal(np.asarray(one), Counting()(TEXTS))
    assert np.array_equal(np.load(tmp_path / "two.npy"), np.asarray(one))
    assert not parts_dir(tmp_path / "two.npy").exists()  # the parts are gone once merged
    # without a cache: the same rows, in memory
    assert np.array_equal(embed_corpus(Counting(), TEXTS, None, shard_size=4), np.asarray(one))


def test_a_stopped_embedding_resumes_with_the_shards_it_had_and_any_process_count(tmp_path):
    final = tmp_path / "emb.npy"
    plan = ShardPlan(len(TEXTS), 4)
    first = Counting()
    embed_shards(first, TEXTS, final, rank=0, world=3, shard_size=4)  # shards 0 and 3, then "stopped"
    assert missing_shards(final, len(TEXTS), 4) == [1, 2, 4, 5]
    with pytest.raises(DataError, match=r"shard 1 of 6 .* is missing; run the embedding again"):
        merge_shards(final, len(TEXTS), 4)
    again = Counting()
    embed_shards(again, TEXTS, final, rank=0, world=1, shard_size=4)
    assert [c[0] for c in again.calls] == [TEXTS[4], TEXTS[8], TEXTS[16], TEXTS[20]]  # shards 0 and 3 not redone
    shard_path(final, plan, 2).write_bytes(b"not an array")  # a damaged shard is embedded again, never merged
    np.save(shard_path(final, plan, 5), np.zeros((2, 3), dtype=np.float32))  # 2 rows where shard 5 has 3
    fixed = Counting()
    merged = embed_corpus(fixed, TEXTS, final, shard_size=4)
    assert [c[0] for c in fixed.calls] == [TEXTS[8], TEXTS[20]]
    assert np.array_equal(np.asarray(merged), Counting()(TEXTS))


def test_an_encoder_that_loses_rows_is_an_error_and_writes_no_shard(tmp_path):
    with pytest.raises(DataError, match="returned 3 rows for the 4 passages of shard 0"):
        embed_shards(lambda texts: np.zeros((3, 2), dtype=np.float32), TEXTS, tmp_path / "e.npy", shard_size=4)
    assert not parts_dir(tmp_path / "e.npy").exists() or not any(parts_dir(tmp_path / "e.npy").iterdir())


def test_the_dense_retriever_embeds_in_shards_and_resumes(tiny_data_dir, tmp_path):
    from rirag.data.obliqa import load_obliqa
    from rirag.retrieval.dense import DenseRetriever
    from tiny_encoder import tiny_sentence_transformer

    model = str(tiny_sentence_transformer(tmp_path / "st", dropout=0.0))
    corpus = load_obliqa(tiny_data_dir).corpus
    whole = DenseRetriever(corpus, model, cache=False, shard_size=4)
    expected = whole.passage_embeddings(show_progress=False)
    r = DenseRetriever(corpus, model, cache=tmp_path / "c", shard_size=4)
    path = r.cache_path()
    # rank 1 of 2 ran before (its shards are on disk): rank 0 of a one-process run embeds only the others
    DenseRetriever(corpus, model, cache=tmp_path / "c", shard_size=4).passage_embeddings(False, rank=1, world=2)
    calls = []
    encode = r.encode
    r.encode = lambda texts, prefix, **kw: calls.append(len(texts)) or encode(texts, prefix, **kw)
    got = r.passage_embeddings(show_progress=False)
    assert path.exists() and sum(calls) == sum(b - a for a, b in map(ShardPlan(len(r.ids), 4).bounds, (0, 2, 4)))
    assert np.abs(np.asarray(got) - expected).max() <= 1e-6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.distributed
def test_rirag_data_embed_over_two_processes_equals_one(tiny_data_dir, tmp_path):
    from rirag.training.runner import CPU_MULTIPROCESS_CONFIG
    from tiny_encoder import tiny_sentence_transformer

    model = str(tiny_sentence_transformer(tmp_path / "st", dropout=0.0))
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    command = ["-m", "rirag.cli", "data", "embed", "--data", str(tiny_data_dir), "--model", model, "--shard-size", "4"]
    launch = [sys.executable, "-c", "from accelerate.commands.launch import main; main()", "--config_file",
              str(REPO / CPU_MULTIPROCESS_CONFIG), "--num_processes", "2", "--main_process_port", str(_free_port())]
    out = {}
    for n, prefix in ((2, launch), (1, [sys.executable])):
        cache = tmp_path / f"cache{n}"
        proc = subprocess.run(prefix + command + ["--option", f"cache={cache}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"over {n} process(es)" in proc.stdout
        for rank in range(n):
            assert f"process {rank + 1} of {n}: its shards are written" in proc.stderr
        (path,) = cache.glob("*.npy")
        out[n] = np.load(path)
        assert not parts_dir(path).exists()
    assert out[2].shape == out[1].shape and np.abs(out[2] - out[1]).max() <= 1e-6
