"""How well do the passage-set decision's features tell a question's gold passages from the other candidates,
whatever model reads them? Held-out ObliQA-MP candidates, scored by models fitted without them.

Issue 45 asks the decision for ObliQA-MP gold-citation recall 0.60 at precision 0.75. The frozen decision is a
logistic model over :data:`rirag.generation.focused.passage_set.PASSAGE_FEATURES`; this benchmark asks whether a
more flexible model over the same features would separate the candidates better. Each candidate (a passage of the
question's top 10 other than the lead) is scored by a model fitted on the decision recipe's ObliQA ``train``
questions and the other folds of ObliQA-MP validation (question groups, the train script's folds), and reported over
the held-out candidates:

* ROC AUC and average precision (the area under the precision-recall curve; a random ranking scores the positive
  share);
* ``recall_at_precision``: the most of the held-out gold candidates a threshold can keep while the kept candidates
  are at least ``precision`` gold (the candidates alone, the lead aside).

Models: ``logistic`` (the train script's :func:`fit`, the frozen decision's kind) and scikit-learn's
``HistGradientBoostingClassifier`` at two sizes. The features are the train script's cache (``features_cache``,
written by ``python train/passage_set.py --config recipes/passage_set/offline.yaml``); a missing item is featurised
and cached as the train script does.

Usage:

    python train/passage_set.py --config recipes/passage_set/offline.yaml   # writes out/passage_set_features.json
    python benchmarks/passage_set_models.py [--out benchmarks/results/passage_set_models.json]
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rirag.training.folds import group_folds

logger = logging.getLogger(__name__)

#: Gradient-boosted models compared with the logistic one: name -> HistGradientBoostingClassifier keywords.
BOOSTED = {"boosted, 200 trees of 15 leaves": {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15,
                                               "l2_regularization": 1.0},
           "boosted, 100 trees of depth 3": {"max_iter": 100, "learning_rate": 0.05, "max_depth": 3}}


@dataclass
class PassageSetModelsArguments:
    recipe: str = field(default="recipes/passage_set/offline.yaml", metadata={
        "help": "The decision's recipe: its questions, folds, features cache and regularisation."})
    precision: float = field(default=0.75, metadata={"help": "Candidate precision of recall_at_precision."})
    out: str = field(default="benchmarks/results/passage_set_models.json", metadata={"help": "Results JSON."})


def _trainer():
    """train/passage_set.py as a module, loaded as benchmarks/passage_set_pra_cv.py loads it."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from passage_set_pra_cv import _trainer as load

    return load()


def candidates_xy(items: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate of ``items``: features (rows) and gold (0/1)."""
    rows = [(c["x"], c["gold"]) for it in items for c in it.get("candidates", [])]
    x = np.asarray([r for r, _ in rows], dtype=np.float64).reshape(len(rows), -1)
    return x, np.asarray([int(g) for _, g in rows], dtype=int)


def recall_at_precision(y: np.ndarray, p: np.ndarray, precision: float) -> float:
    """The largest share of positives kept by a threshold on ``p`` whose kept candidates are at least ``precision``
    positive (0.0 when no threshold is)."""
    from sklearn.metrics import precision_recall_curve

    prec, rec, _ = precision_recall_curve(y, p)
    ok = rec[prec >= precision]
    return float(ok.max()) if ok.size else 0.0


def held_out_scores(ps, train: list[dict], mp: list[dict], folds: int, seed: int, regularisation: float,
                    model: str) -> tuple[np.ndarray, np.ndarray]:
    """Each fold's ObliQA-MP candidates scored by ``model`` fitted on ``train`` and the other folds (question groups
    shuffled with ``seed``, as the train script folds them); (gold, score) over all held-out candidates."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from rirag.generation.focused.passage_set import Candidates, probabilities

    fold_of = group_folds(mp, folds, seed)
    ys, ps_ = [], []
    for k in range(folds):
        held = [it for it in mp if fold_of[it["group"]] == k]
        fitted_on = train + [it for it in mp if fold_of[it["group"]] != k]
        xh, yh = candidates_xy(held)
        if model == "logistic":
            held_out = Candidates(0, tuple(range(len(xh))), xh, ())
            score = probabilities(held_out, ps.fit(fitted_on, regularisation))
        else:
            x, y = candidates_xy(fitted_on)
            boosted = HistGradientBoostingClassifier(random_state=seed, **BOOSTED[model]).fit(x, y)
            score = boosted.predict_proba(xh)[:, 1]
        ys.append(yh)
        ps_.append(score)
    return np.concatenate(ys), np.concatenate(ps_)


def separation(y: np.ndarray, p: np.ndarray, precision: float) -> dict:
    from sklearn.metrics import average_precision_score, roc_auc_score

    return {"candidates": int(len(y)), "gold_candidates": int(y.sum()), "positive_share": round(float(y.mean()), 4),
            "roc_auc": round(float(roc_auc_score(y, p)), 4),
            "average_precision": round(float(average_precision_score(y, p)), 4),
            f"recall_at_precision_{precision:g}": round(recall_at_precision(y, p, precision), 4)}


def main(args: PassageSetModelsArguments) -> dict:
    import yaml

    from rirag.data.obliqa import load_obliqa
    from rirag.io import atomic_write_json, provenance
    from rirag.xref.graph import ReferenceGraph

    ps = _trainer()
    start = time.time()
    recipe = ps.PassageSetArguments(**{k: v for k, v in yaml.safe_load(Path(args.recipe).read_text()).items()
                                       if k in ps.PassageSetArguments.__dataclass_fields__})
    obliqa = load_obliqa(recipe.data)
    graph = ReferenceGraph(obliqa.root, graph=Path(recipe.graph) / "references.jsonl")
    items = ps.features_of(recipe, [*ps.train_items(recipe, obliqa), *ps.mp_items(recipe)], obliqa.corpus, graph,
                           ps.CachingAnswerer())
    train = [it for it in items if it["set"] == "train"]
    mp = [it for it in items if it["set"] == "obliqa-mp"]
    rows = {}
    for model in ("logistic", *BOOSTED):
        y, p = held_out_scores(ps, train, mp, recipe.folds, recipe.seed, recipe.regularisation, model)
        rows[model] = separation(y, p, args.precision)
        logger.info("%s: %s", model, rows[model])
    out = {"benchmark": "benchmarks/passage_set_models.py", **provenance(), "recipe": args.recipe,
           "features": recipe.features_cache, "folds": recipe.folds, "train_questions": len(train),
           "obliqa_mp_questions": len(mp), "held_out_obliqa_mp_candidates": rows,
           "seconds": round(time.time() - start, 1)}
    atomic_write_json(args.out, out)
    return out


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    (arguments,) = HfArgumentParser(PassageSetModelsArguments).parse_args_into_dataclasses()
    main(arguments)
