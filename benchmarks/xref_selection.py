"""Cross-reference selection (issue 65, point 1): does letting a small model decide which linked passages enter the
top 10 bring both rules a question needs, and what does it cost where questions need one passage?

Question sets (gold passages by id):

* ``ukfin``: the 80 PRA development questions (two gold rules each, the second cross-referenced by the first) over
  the ingested PRA corpus and its graph (``rirag data ingest`` + ``rirag data xref``);
* ``obliqa-mp``: ObliQA-MP validation (446 questions, 2-6 gold passages) over ObliQA and its graph;
* ``obliqa-validation``: ObliQA's leakage-free ``validation`` split (held out by document);
* ``obliqa-train``: ObliQA's leakage-free ``train`` split, training only.

The base is the default retriever without trained models (:func:`rirag.retrieval.defaults.default_retriever`), or
with ``--base ranker`` the default after ``make models`` (learned fusion with the trained ranker; ``--no_train``
then leaves out ``obliqa-train``, the ranker's own training questions). Training rows are the
candidates of :func:`rirag.retrieval.xref_selection.candidate_features` (label: gold). Each evaluation set is
scored by 5-fold cross-validation over its questions: the model of fold f is trained on ``obliqa-train`` and every
other set's questions, plus the set's other folds (never the questions it ranks). ObliQA's ``test`` and the PRA
questions of any test split are never read. Then one model is fitted on every training question and saved
(``--save``): the selector the library ships.

Per set and row: R@10, MAP@10 (ranx), All@10 (every gold passage in the top 10: Both@10 on ukfin), each with its
95 % bootstrap interval, and the paired difference from the base.

Usage:

    python benchmarks/xref_selection.py --pra out/pra [--obliqa-graph DIR/xref/references.jsonl] \\
        [--save src/rirag/retrieval/xref_selector.json] [--out benchmarks/results/xref_selection.json]
"""

from __future__ import annotations

import logging
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from transformers import HfArgumentParser

from rirag.constants import EVAL_K, RUN_DEPTH, SEED, XREF_SELECT_C
from rirag.io import atomic_write_json, portable_args, portable_path
from rirag.retrieval.defaults import default_retriever, trained_ranker
from rirag.retrieval.registry import RetrieverSpec, build_retriever
from rirag.retrieval.xref_selection import SelectorModel, candidate_features, select

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_cv import bootstrap_interval, paired_difference_interval  # noqa: E402
from transfer import QuestionSetData, TransferConfig, load_set, per_question  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EVAL_SETS = ("ukfin", "obliqa-mp", "obliqa-validation")
FOLDS = 5
logger = logging.getLogger("xref_selection")


@dataclass
class Config:
    pra: str = field(default="out/pra", metadata={"help": "The ingested PRA corpus with its xref/ graph."})
    obliqa_graph: str | None = field(default=None, metadata={
        "help": "ObliQA's references.jsonl (default: DATA/xref/references.jsonl, `rirag data xref`)."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder (default: $RIRAG_DATA_DIR)."})
    train_max: int = field(default=0, metadata={"help": "Use at most N obliqa-train questions (0: all)."})
    base: str = field(default="cv", metadata={
        "help": "The base run: 'cv' (the default without trained models, the best cross-validated row) or 'ranker' "
                "(the default after make models: learned fusion with the trained ranker, $RIRAG_RANKER or "
                "artifacts/)."})
    no_train: bool = field(default=False, metadata={
        "help": "Fit on the evaluation sets' other folds alone, without obliqa-train: for a base trained on "
                "obliqa-train (learned fusion), whose runs on its own training questions are not what it does on "
                "new ones."})
    bootstrap: int = field(default=1000, metadata={"help": "Bootstrap resamples."})
    seed: int = field(default=SEED, metadata={"help": "Fold and bootstrap seed."})
    save: str | None = field(default=None, metadata={"help": "Save the model fitted on every training question."})
    out: str = field(default="benchmarks/results/xref_selection.json", metadata={"help": "Results JSON."})


def obliqa_split(config: Config, split: str) -> QuestionSetData:
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import split_questions

    obliqa = load_obliqa(config.data)
    qs = split_questions(obliqa, split, config.seed)
    if split == "train" and config.train_max:
        qs = [qs[i] for i in sorted(np.random.default_rng(config.seed).permutation(len(qs))[:config.train_max])]
    return QuestionSetData(f"obliqa-{split}", obliqa.corpus, {q.id: q.text for q in qs},
                           {q.id: tuple(q.gold) for q in qs}, {"questions": len(qs)})


def graph_of(name: str, config: Config, corpus):
    from rirag.data.obliqa import resolve_data_dir
    from rirag.xref.graph import ReferenceGraph

    if name == "ukfin":
        return ReferenceGraph(config.pra, corpus=corpus)
    root = resolve_data_dir(config.data)
    return ReferenceGraph(root, graph=config.obliqa_graph, corpus=corpus)


def base_spec(base: str) -> RetrieverSpec:
    """The base run's retriever (``Config.base``)."""
    if base == "cv":
        return default_retriever()
    if base != "ranker":
        raise SystemExit(f"--base must be 'cv' or 'ranker', got {base!r}")
    ranker, why = trained_ranker()
    if ranker is None:
        raise SystemExit(f"--base ranker: {why}")
    return RetrieverSpec("learned-fusion", None, {"ranker": ranker})


@dataclass
class Prepared:
    data: QuestionSetData
    run: dict
    ids: dict  # qid -> candidate ids
    X: dict  # qid -> features
    seconds: float


def prepare(name: str, config: Config) -> Prepared:
    if name in ("ukfin", "obliqa-mp"):
        tc = TransferConfig(pra=config.pra, data=config.data)
        data = load_set(tc, name)
    else:
        data = obliqa_split(config, name.removeprefix("obliqa-"))
    graph = graph_of(name, config, data.corpus)
    spec = base_spec(config.base)
    started = time.perf_counter()
    run = build_retriever(data.corpus, spec).search(data.questions, k=RUN_DEPTH, show_progress=True)
    ids, X = {}, {}
    for q, results in run.items():
        ids[q], X[q] = candidate_features(data.questions[q], results, graph, data.corpus)
    logger.info("%s: %d questions, base %s, %.0f s", name, len(run), spec, time.perf_counter() - started)
    return Prepared(data, run, ids, X, time.perf_counter() - started)


def rows_of(p: Prepared, qids) -> tuple[np.ndarray, np.ndarray]:
    X = np.concatenate([p.X[q] for q in qids])
    y = np.concatenate([[float(pid in set(p.data.gold[q])) for pid in p.ids[q]] for q in qids])
    return X, y


def fit(parts: list[tuple[Prepared, list[str]]], seed: int, trained_on: dict | None = None) -> SelectorModel:
    Xs, ys = zip(*(rows_of(p, qids) for p, qids in parts if qids))
    return SelectorModel.fit(np.concatenate(Xs), np.concatenate(ys), XREF_SELECT_C, seed, trained_on)


def folds(qids: list[str], seed: int) -> list[list[str]]:
    order = np.random.default_rng(seed).permutation(len(qids))
    return [[qids[i] for i in order[f::FOLDS]] for f in range(FOLDS)]


def summary(values: dict[str, np.ndarray], base: dict[str, np.ndarray] | None, config: Config) -> dict:
    out = {}
    for metric, v in values.items():
        out[metric] = round(float(v.mean()), 4)
        out[f"{metric} 95% CI"] = bootstrap_interval(v, config.bootstrap, config.seed)
        if base is not None:
            out[f"{metric} − base"] = round(float(v.mean() - base[metric].mean()), 4)
            out[f"{metric} − base 95% CI"] = paired_difference_interval(v, base[metric], config.bootstrap,
                                                                         config.seed)
    return out


def main(config: Config) -> dict:
    prepared = {name: prepare(name, config) for name in (*EVAL_SETS, *(() if config.no_train else ("obliqa-train",)))}
    everything = [(p, list(p.run)) for p in prepared.values()]
    rows = []
    for name in EVAL_SETS:
        p = prepared[name]
        others = [(o, list(o.run)) for n, o in prepared.items() if n != name]
        selected = {}
        for fold in folds(list(p.run), config.seed):
            held = set(fold)
            model = fit([*others, (p, [q for q in p.run if q not in held])], config.seed)
            for q in fold:
                selected[q] = select(p.run[q], p.ids[q], model.score(p.X[q]), EVAL_K * 10)
        base = per_question(p.run, p.data.gold)
        new = per_question(selected, p.data.gold)
        rows.append({"questions": name, "row": "default", "label": f"default ({base_spec(config.base)})",
                     **summary(base, None, config)})
        rows.append({"questions": name, "row": "default + xref selection",
                     "label": "default + cross-reference selection (5-fold CV)", **summary(new, base, config)})
    trained_on = {name: len(p.run) for name, p in prepared.items()}
    model = fit(everything, config.seed, {"questions": trained_on, "C": XREF_SELECT_C, "seed": config.seed,
                                          "command": "benchmarks/xref_selection.py"})
    if config.save:
        model.save(config.save)
    result = {"benchmark": "benchmarks/xref_selection.py", "command": "python " + " ".join(portable_args(sys.argv)),
              "date": time.strftime("%Y-%m-%d"), "cpu_cores": __import__("os").cpu_count(),
              "machine": platform.machine(), "base": str(base_spec(config.base)),
              "pra": portable_path(config.pra), "trained_on": trained_on, "folds": FOLDS,
              "model": {"features": model.features, "weights": [round(w, 4) for w in model.weights]},
              "rows": rows}
    atomic_write_json(config.out, result)
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    (cfg,) = HfArgumentParser(Config).parse_args_into_dataclasses()
    for row in main(cfg)["rows"]:
        print({k: v for k, v in row.items() if "CI" not in k})
