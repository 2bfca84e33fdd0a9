"""Learn the focused answerer's passage-set decision and freeze it in
``src/rirag/generation/focused/passage_set.json`` (:mod:`rirag.generation.focused.passage_set`).

Data (never a test split):

* ObliQA leakage-free ``train`` questions, ``train_multi`` of those with two or more gold passages and
  ``train_single`` with one (seeded samples), their top 10 from ``retriever`` (empty: the answering commands'
  default, :func:`rirag.retrieval.defaults.default_retriever`; the recipe uses BM25, which embeds nothing);
* ObliQA-MP validation (2-6 gold passages), its top 10 from ``mp_run``, in ``folds`` folds of
  question groups (questions sharing a gold passage stay together);
* the cross-reference graph of the ObliQA corpus (``graph``, ``rirag data xref``): a candidate linked to the lead.

For each question the focused answerer (the default one, as ``rirag ask`` builds it) scores the units of its
passages; every passage but the lead is a candidate (:func:`rirag.generation.focused.passage_set.candidates`), a
positive when it is a gold passage of the question. A logistic model (scikit-learn, standardised features) is fitted
on the candidates; the threshold and ``max_passages`` are chosen on the questions it was fitted on: the highest
F-beta (``beta``) of the decided sets' mean precision and recall against the gold (the lead alone is one of the
settings), among the settings whose mean precision is at least ``precision_floor`` times the lead alone's on each
population it was fitted on (train questions with one gold passage, with several, ObliQA-MP): a passage is added
only where that does not make the answers of one kind of question less precise than citing the lead alone. Then the
``linked_threshold`` (a candidate linked to the lead by a cross-reference is held to it instead): the lowest of
``linked_thresholds`` that keeps the same floor (a rule that the lead cites, or that cites it, is quoted whenever the
data allow it; ObliQA's links seldom join two gold passages, so the floor decides how low it may go).

Reported (``results``): ObliQA-MP validation fold by fold, each fold answered by the focused answerer with a decision
fitted and tuned without it (gold-citation precision, recall, cite-all share, beside the answer without the decision
and the context's ceiling). The frozen decision is fitted on everything.

Several processes: the decision is fitted in one process (scikit-learn). Under a multi-process launch the main
process (``RANK`` 0) does all the work and alone writes ``output`` and ``results``; every other rank logs one line and
exits 0 before loading anything (:func:`rirag.training.runner.run_trainer`).

Usage:

    rirag data xref --data ../shared/data/obliqa --out out/obliqa_xref
    rirag retrieve --data ../shared/data/obliqa --questions ../shared/data/obliqa_mp/ObliQA_MultiPassage_val.json \\
        --retriever bm25 --k 100 --out out/runs/mp_bm25.trec
    python train/passage_set.py --config recipes/passage_set/offline.yaml
"""

from __future__ import annotations

import datetime
import json
import logging
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rirag.constants import EVAL_K, SEED
from rirag.io import portable_args
from rirag.training.folds import group_folds, question_groups

logger = logging.getLogger(__name__)


@dataclass
class PassageSetArguments:
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default $RIRAG_DATA_DIR)."})
    train_multi: int = field(default=500, metadata={"help": "Train questions with >= 2 gold passages (seeded)."})
    train_single: int = field(default=250, metadata={"help": "Train questions with one gold passage (seeded)."})
    retriever: str = field(default="", metadata={"help": "Retriever of the train questions (empty: the default)."})
    mp: str = field(default="../shared/data/obliqa_mp", metadata={"help": "The ObliQA-MP validation folder."})
    mp_run: str = field(default="out/runs/mp_bm25.trec", metadata={"help": "Run of the ObliQA-MP questions."})
    graph: str = field(default="out/obliqa_xref", metadata={"help": "ObliQA's graph folder (rirag data xref)."})
    folds: int = field(default=5, metadata={"help": "Folds of ObliQA-MP validation (by question group)."})
    beta: float = field(default=1.0, metadata={
        "help": "The setting chosen maximises the F-beta of the decided sets' mean precision and mean recall against "
                "the gold passages (1: both count alike)."})
    precision_floor: float = field(default=0.0, metadata={
        "help": "Only settings whose mean set precision on each population (train single-gold, train multi-gold, "
                "ObliQA-MP) is at least this share of the lead alone's are chosen (0: no floor)."})
    linked_thresholds: str = field(default="", metadata={
        "help": "Thresholds for a candidate linked to the lead to choose among (empty: the threshold's)."})
    thresholds: str = field(default="0.05,0.08,0.1,0.12,0.15,0.2,0.25,0.3,0.4,0.5",
                            metadata={"help": "Thresholds to choose among."})
    max_passages: str = field(default="2,3,4,5", metadata={"help": "max_passages values to choose among."})
    regularisation: float = field(default=1.0, metadata={"help": "Inverse L2 strength C."})
    seed: int = field(default=SEED, metadata={"help": "Seed of the train samples and the folds."})
    features_cache: str = field(default="out/passage_set_features.json", metadata={
        "help": "Where the questions' features are kept between runs (git-ignored out/)."})
    output: str = field(default="src/rirag/generation/focused/passage_set.json",
                        metadata={"help": "The frozen decision."})
    results: str = field(default="benchmarks/results/passage_set.json", metadata={"help": "Results JSON."})


# -- the questions and their contexts ---------------------------------------------------------------------------


def train_items(args: PassageSetArguments, obliqa) -> list[dict]:
    from rirag.data.splits import split_questions
    from rirag.retrieval.defaults import default_retriever
    from rirag.retrieval.registry import build_retriever, retriever_spec

    questions = split_questions(obliqa, "train")
    rng = random.Random(args.seed)
    multi = [q for q in questions if len(set(q.gold)) >= 2]
    single = [q for q in questions if len(set(q.gold)) == 1]
    chosen = rng.sample(multi, min(args.train_multi, len(multi))) + rng.sample(single, min(args.train_single,
                                                                                             len(single)))
    spec = retriever_spec(args.retriever, None, []) if args.retriever else default_retriever()
    retriever = build_retriever(obliqa.corpus, spec, root=obliqa.root)
    run = retriever.search({q.id: q.text for q in chosen}, k=EVAL_K, show_progress=True)
    return [{"set": "train", "id": q.id, "question": q.text, "gold": sorted(set(q.gold)), "group": f"train-{q.id}",
             "ids": [pid for pid, _ in sorted(run.get(q.id, {}).items(), key=lambda kv: (-kv[1], kv[0]))][:EVAL_K],
             "run": run.get(q.id, {})} for q in chosen]


def mp_items(args: PassageSetArguments) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from follow_references import mp_gold
    from rirag.data.runs import ranked, read_trec

    questions, gold = mp_gold(Path(args.mp))
    run = read_trec(args.mp_run)
    groups = question_groups({q: gold[q] for q, _ in questions})
    return [{"set": "obliqa-mp", "id": q, "question": text, "gold": sorted(gold[q]), "group": groups[q],
             "ids": [pid for pid, _ in ranked(run.get(q, {}), EVAL_K)], "run": run.get(q, {})}
            for q, text in questions]


# -- features -----------------------------------------------------------------------------------------------------


def featurise(answerer, item: dict, corpus, graph) -> None:
    """The item's lead, candidates (passage index, features, label) and the answer without the decision."""
    from rirag.generation.focused.passage_set import candidates
    from rirag.generation.focused.selection import Selection
    from rirag.retrieval.filtering import context_filter

    chosen = context_filter("top-k").select(item["run"], EVAL_K)
    ids = [pid for pid, _ in chosen]
    texts = [corpus[pid].text for pid in ids]
    scores = [s for _, s in chosen]
    item["ids"] = ids
    units, x, _ = answerer.features(item["question"], texts, scores)
    if not units:
        item["candidates"] = []
        return
    scored = answerer.scored_units(units, x, item["question"])
    seen = {}

    def capture(usable, lead):
        seen["usable"], seen["lead"] = list(usable), lead
        return [lead]

    Selection(answerer.limits, capture)(scored)
    position = {id(s): i for i, s in enumerate(scored)}
    answerer.attach_references(graph, corpus)
    links = answerer.context_links(ids)
    c = candidates(item["question"], texts, scored, x, seen["lead"], [position[id(s)] for s in seen["usable"]],
                   links, answerer.context_labels(ids))
    gold = set(item["gold"])
    item["lead"] = seen["lead"]
    item["lead_gold"] = ids[seen["lead"]] in gold
    item["candidates"] = [{"passage": p, "x": row.tolist(), "gold": ids[p] in gold}
                          for p, row in zip(c.passages, c.x)]
    item["links"] = sorted(links)


def features_of(args: PassageSetArguments, items: list[dict], corpus, graph, answerer) -> list[dict]:
    """Every item featurised, reusing ``features_cache`` for items already done (same question, same context)."""
    from tqdm.auto import tqdm

    from rirag.io import atomic_write_json

    path = Path(args.features_cache)
    cache = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for n, item in enumerate(tqdm(items, desc="passage-set features", unit="q")):
        key = f"{item['set']}|{item['id']}|{','.join(ids_of(item))}"
        if key in cache and current(cache[key]):
            item.update(cache[key])
        else:
            featurise(answerer, item, corpus, graph)
            cache[key] = {k: item[k] for k in ("ids", "lead", "lead_gold", "candidates", "links") if k in item}
        if (n + 1) % 100 == 0:
            atomic_write_json(path, cache)
    atomic_write_json(path, cache)
    return items


def current(cached: dict) -> bool:
    """Whether a cached item's candidates carry this version's features (:data:`PASSAGE_FEATURES`)."""
    from rirag.generation.focused.passage_set import PASSAGE_FEATURES

    return all(len(c["x"]) == len(PASSAGE_FEATURES) for c in cached.get("candidates", []))


def ids_of(item: dict) -> list[str]:
    from rirag.retrieval.filtering import context_filter

    return [pid for pid, _ in context_filter("top-k").select(item["run"], EVAL_K)]


# -- fitting and choosing -----------------------------------------------------------------------------------------


def fit(items: list[dict], c: float) -> dict:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    rows = [(cand["x"], cand["gold"]) for it in items for cand in it.get("candidates", [])]
    x = np.asarray([r for r, _ in rows], dtype=np.float64)
    y = np.asarray([g for _, g in rows], dtype=int)
    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=c, max_iter=2000).fit(scaler.transform(x), y)
    return {"mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist(), "coef": model.coef_[0].tolist(),
            "intercept": float(model.intercept_[0]), "positives": int(y.sum()), "candidates": int(len(y))}


def decided(item: dict, model: dict, threshold: float, most: int, linked: float | None = None) -> list[str]:
    from rirag.generation.focused.passage_set import Candidates, decide

    if "lead" not in item:
        return []
    cands = item.get("candidates", [])
    c = Candidates(item["lead"], tuple(x["passage"] for x in cands),
                   np.asarray([x["x"] for x in cands], dtype=np.float64).reshape(len(cands), -1), ())
    return [item["ids"][p] for p in decide(c, {**model, "threshold": threshold, "max_passages": most},
                                           linked_threshold=threshold if linked is None else linked)]


def set_metrics(items: list[dict], model: dict, threshold: float, most: int, beta: float = 1.0,
                linked: float | None = None) -> dict:
    """The decided sets against the gold: mean precision, mean recall, their F-beta, the share holding all gold."""
    precision, recall, cite_all = [], [], []
    for it in items:
        chosen = set(decided(it, model, threshold, most, linked))
        gold = set(it["gold"])
        if chosen:
            precision.append(len(chosen & gold) / len(chosen))
        recall.append(len(chosen & gold) / len(gold))
        cite_all.append(gold <= chosen)
    p, r = float(np.mean(precision)), float(np.mean(recall))
    f = (1 + beta ** 2) * p * r / (beta ** 2 * p + r) if p + r else 0.0
    return {"set_precision": p, "set_recall": r, "set_f": f, "set_cite_all": float(np.mean(cite_all))}


def populations(items: list[dict]) -> dict[str, list[dict]]:
    """The kinds of question a decision is fitted on: train with one gold passage, train with several, ObliQA-MP."""
    kinds = {"train_single": [], "train_multi": [], "obliqa_mp": []}
    for it in items:
        kind = "obliqa_mp" if it["set"] == "obliqa-mp" else ("train_multi" if len(it["gold"]) > 1 else "train_single")
        kinds[kind].append(it)
    return {k: v for k, v in kinds.items() if v}


def choose(args: PassageSetArguments, items: list[dict], model: dict) -> dict:
    """The threshold and max_passages of the highest set F-beta (ties: the higher threshold, fewer passages) among
    the settings that keep each population's mean set precision at ``precision_floor`` of the lead alone's or more;
    the lead alone (``max_passages`` 1) is in the grid, so a decision that adds nothing useful adds nothing. Then the
    lowest of ``linked_thresholds`` under the threshold that keeps the same floor (else the threshold)."""
    kinds = populations(items)

    def setting(t: float, most: int, linked: float | None = None) -> dict:
        linked = t if linked is None else linked
        per = {k: set_metrics(v, model, t, most, args.beta, linked)["set_precision"] for k, v in kinds.items()}
        return {"threshold": t, "max_passages": most, "linked_threshold": linked,
                **set_metrics(items, model, t, most, args.beta, linked), "precision_by_population": per}

    def kept(g: dict) -> bool:
        return all(g["precision_by_population"][k] >= floor[k] - 1e-12 for k in floor)

    def key(g: dict) -> tuple:
        return round(g["set_f"], 6), g["threshold"], -g["max_passages"], g["linked_threshold"]

    lead = setting(1.0, 1)
    floor = {k: args.precision_floor * p for k, p in lead["precision_by_population"].items()}
    grid = [lead]
    for most in (int(v) for v in args.max_passages.split(",")):
        for t in (float(v) for v in args.thresholds.split(",")):
            grid.append(setting(t, most))
    best = max((g for g in grid if kept(g)), key=key)
    linked = [setting(best["threshold"], best["max_passages"], float(v))
              for v in args.linked_thresholds.split(",") if v.strip() and float(v) < best["threshold"]]
    best = min([best, *(g for g in linked if kept(g))], key=lambda g: g["linked_threshold"])
    return {**best, "precision_floor": floor, "grid": grid, "linked_grid": linked}


# -- answering a held-out fold ----------------------------------------------------------------------------------


def answers_of(answerer, items: list[dict], corpus, model: dict | None) -> list:
    """The focused answers of ``items`` with the decision ``model`` (None: without it; the answerer's other switches
    as configured), as the pipeline writes them (features from the answerer's cache)."""
    from dataclasses import replace

    from rirag.generation.pipeline import RetrievedPassage, answer_items

    base_config = answerer.config
    if model is not None:
        answerer._passage_set_model = model
        answerer.config = replace(base_config, passage_set=True)
    try:
        batch = [(it["id"], it["question"], [RetrievedPassage(pid, corpus[pid].text, float(it["run"][pid]))
                                             for pid in it["ids"]]) for it in items]
        return answer_items(batch, answerer)
    finally:
        answerer.config = base_config
        answerer._passage_set_model = None


def answer_quality_of(answerer, items: list[dict], corpus, model: dict | None) -> dict:
    """The focused answers of ``items`` with the decision ``model`` (None: without it), scored against the gold."""
    from rirag.scoring.answer_quality import answer_quality

    answers = answers_of(answerer, items, corpus, model)
    q = answer_quality([a.text for a in answers], [[p.id for p in a.passages] for a in answers],
                       [it["gold"] for it in items])
    keys = ("gold_citation_precision", "gold_citation_recall", "gold_citation_f1", "cite_all_share",
            "context_all_share", "cited_per_answer", "gold_per_question", "words_median", "words_p95")
    return {"answers": len(answers), **{k: q[k] for k in keys}}


def main(args: PassageSetArguments) -> dict | None:
    """Fit and write the decision (module docstring); on a rank other than the job's main process: nothing (None)."""
    import os

    from rirag.training.runner import is_main_process, launched_processes

    if not is_main_process():
        logger.info("rank %s of %d: the passage-set decision is fitted and written by the main process (rank 0) "
                    "alone; this process does nothing", os.environ.get("RANK"), launched_processes())
        return None
    from rirag.data.obliqa import load_obliqa
    from rirag.generation.focused.passage_set import PASSAGE_FEATURES
    from rirag.io import atomic_write_json, provenance
    from rirag.xref.graph import ReferenceGraph

    start = time.time()
    obliqa = load_obliqa(args.data)
    graph = ReferenceGraph(obliqa.root, graph=Path(args.graph) / "references.jsonl")
    answerer = CachingAnswerer()
    items = features_of(args, [*train_items(args, obliqa), *mp_items(args)], obliqa.corpus, graph, answerer)
    answerer.attach_references(graph, obliqa.corpus)
    train = [it for it in items if it["set"] == "train"]
    mp = [it for it in items if it["set"] == "obliqa-mp"]
    fold_of = group_folds(mp, args.folds, args.seed)
    folds = []
    for k in range(args.folds):
        held = [it for it in mp if fold_of[it["group"]] == k]
        fitted_on = train + [it for it in mp if fold_of[it["group"]] != k]
        model = fit(fitted_on, args.regularisation)
        chosen = choose(args, fitted_on, model)
        model |= {k: chosen[k] for k in ("threshold", "max_passages", "linked_threshold")}
        folds.append({"fold": k, "questions": len(held), "threshold": chosen["threshold"],
                      "max_passages": chosen["max_passages"], "linked_threshold": chosen["linked_threshold"],
                      "with": answer_quality_of(answerer, held, obliqa.corpus, model),
                      "without": answer_quality_of(answerer, held, obliqa.corpus, None)})
        logger.info("fold %d: %s", k, folds[-1])
    model = fit(items, args.regularisation)
    chosen = choose(args, items, model)
    command = "python train/passage_set.py " + " ".join(portable_args(sys.argv[1:]))
    decision = {"source": f"{args.output} ({command})", "features": list(PASSAGE_FEATURES), **model,
                "threshold": chosen["threshold"], "max_passages": chosen["max_passages"],
                "linked_threshold": chosen["linked_threshold"],
                "provenance": {**provenance(), "train_questions": len(train), "obliqa_mp_questions": len(mp),
                               "mp_run": args.mp_run, "graph": args.graph,
                               "made": datetime.date.today().isoformat()}}
    atomic_write_json(args.output, decision)

    def pooled(key: str) -> dict:
        n = sum(f["questions"] for f in folds)
        return {m: sum(f[key][m] * f["questions"] for f in folds) / n
                for m in folds[0][key] if isinstance(folds[0][key][m], float)}

    results = {"benchmark": "train/passage_set.py", "command": command, "seconds": round(time.time() - start, 1),
               "decision": {k: decision[k] for k in ("threshold", "max_passages", "linked_threshold", "positives",
                                                   "candidates")},
               "coefficients": dict(zip(PASSAGE_FEATURES, model["coef"])), "choice": chosen,
               "obliqa_mp_folds": folds, "obliqa_mp_pooled": {"with": pooled("with"), "without": pooled("without")},
               "provenance": decision["provenance"]}
    atomic_write_json(args.results, results)
    logger.info("wrote %s and %s; pooled over the folds: %s", args.output, args.results, results["obliqa_mp_pooled"])
    return results


class CachingAnswerer:
    """The default focused answerer whose question features, embeddings and obligation flags are memoised (the
    folds answer the same questions again; contexts share passages), and whose passage-set decision can be given in
    memory."""

    def __new__(cls):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        from follow_references import Memo
        from rirag.generation.focused import FocusedAnswerer

        class _Answerer(FocusedAnswerer):
            _passage_set_model = None

            @property
            def passage_set_model(self):
                return self._passage_set_model if self._passage_set_model is not None else super().passage_set_model

            def features(self, question, passages, scores=None):
                key = (question, tuple(passages), tuple(scores) if scores is not None else None)
                cache = self.__dict__.setdefault("_memo", {})
                if key not in cache:
                    cache[key] = super().features(question, passages, scores)
                return cache[key]

        answerer = _Answerer()
        memo = Memo(answerer)  # a unit shared by several questions' contexts is embedded and classified once
        answerer._encode, answerer._is_obligation = memo.encode, memo.is_obligation
        return answerer


if __name__ == "__main__":
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (arguments,) = TrlParser((PassageSetArguments,)).parse_args_and_config()
    sys.exit(run_trainer(main, arguments))
