"""Learn the focused answerer's scorer and freeze it in ``src/rirag/generation/focused/focused_scorer.json``.

* **Unit scorer** (logistic regression, standardised :data:`rirag.generation.focused.FEATURES`): every answer unit
  of the retrieved, RIRAG-filtered passages of leakage-free ``train`` questions; a unit of one of the question's
  gold passages is a positive. The passages come from ``retriever`` (default rank-fusion: ``rirag ask``'s default,
  which needs no trained model).
* **Answerability** (logistic regression over :data:`rirag.generation.focused.ANSWERABILITY_FEATURES`): each
  train question with its own passages (positive) and with the passages of another train question whose gold
  passages differ (negative).
* **Selection options** (``keep_ratio``, ``min_score``, and the passage gate's ``passage_weight``,
  ``passage_margin``, ``max_passages``, ``max_words``, ``extra_unit_words``, or no gate) chosen on ``tune_split``
  questions of ``tune_run`` outside the generation benchmark's seeded sample (:func:`rirag.data.splits.seeded_sample`),
  by the F-beta of gold-citation precision and recall (``selection_beta``; 2: recall-first, issue 32; among settings
  within one question's worth of the best F-beta, the one of highest recall: :func:`choose_recall_first`) among the
  settings whose median answer (missing-part sentences included) stays within ``median_words_max`` words and whose
  95th percentile within ``p95_words_max``; the answerability threshold is the ``matched_flag_rate`` quantile of
  the matched tuning questions' answerability. Never a test split.

Several processes: the scorer is fitted in one process (scikit-learn; nothing is shared between ranks). Under a
multi-process launch (``accelerate launch --config_file recipes/accelerate/cpu-2proc.yaml``, torchrun) the job's main
process (``RANK`` 0) does all the work and is the only one that writes ``output`` and ``results`` (both tracked by
default); every other rank logs one line saying so and exits 0 at once, before loading anything. A failure (missing
data or model, bad input) is one line and exit 2 (:func:`rirag.training.runner.run_trainer`).

Usage:

    python train/focused_scorer.py --config recipes/focused/offline.yaml
    # the selection options only, with the frozen unit and answerability models (no train retrieval):
    python train/focused_scorer.py --config recipes/focused/offline.yaml --selection_only true
"""

from __future__ import annotations

import datetime
import logging
import os
import random
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from rirag.constants import EVAL_K, OFFLINE_ENCODER, RUN_DEPTH, SEED
from rirag.data.splits import ANSWER_SAMPLE_SIZE
from rirag.io import portable_args

logger = logging.getLogger(__name__)


@dataclass
class FocusedScorerArguments:
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default $RIRAG_DATA_DIR)."})
    train_questions: int = field(default=2000, metadata={"help": "Train questions sampled (seeded)."})
    retriever: str = field(default="rank-fusion", metadata={"help": "Retriever for the train questions' passages."})
    tune_run: str = field(default="benchmarks/runs/validation.best.trec.gz", metadata={
        "help": "Run whose filtered passages the selection options are chosen on."})
    tune_split: str = field(default="validation", metadata={"help": "Questions of tune_run (never a test split)."})
    benchmark_sample: int = field(default=ANSWER_SAMPLE_SIZE, metadata={
        "help": "Size of the generation benchmark's seeded sample of tune_split, left out of the tuning questions."})
    encoder: str = field(default=OFFLINE_ENCODER, metadata={
        "help": "Sentence encoder of the unit features (the focused answerer's; a Hub id or a folder)."})
    keep_ratio_grid: str = field(default="0.3,0.5,0.7", metadata={"help": "keep_ratio values to choose among."})
    min_score_grid: str = field(default="0.1,0.2,0.3", metadata={"help": "min_score values to choose among."})
    gate_weight_grid: str = field(default="", metadata={
        "help": "passage_weight values of the passage gate to choose among (empty: no gated settings)."})
    gate_margin_grid: str = field(default="", metadata={"help": "passage_margin values of the passage gate."})
    gate_max_passages_grid: str = field(default="", metadata={"help": "max_passages values of the passage gate."})
    gate_max_words_grid: str = field(default="", metadata={
        "help": "max_words values tried with the gate (empty: max_words only)."})
    gate_extra_words_grid: str = field(default="", metadata={
        "help": "extra_unit_words values tried with the gate ('none': no cap; empty: no cap only)."})
    selection_beta: float = field(default=1.0, metadata={
        "help": "The selection criterion is the F-beta of gold-citation precision and recall (2: recall counts "
                "twice as much)."})
    gate_keep_ratio_grid: str = field(default="", metadata={
        "help": "keep_ratio values tried with the gate (its min_score is 0; above 1: only each cited passage's "
                "best unit)."})
    max_words: int = field(default=120, metadata={"help": "The answer's word budget (FocusedConfig.max_words)."})
    median_words_max: int = field(default=80, metadata={"help": "Settings with a longer median answer are out."})
    p95_words_max: int = field(default=200, metadata={
        "help": "Settings whose 95th-percentile answer is longer are out."})
    selection_only: bool = field(default=False, metadata={
        "help": "Keep the unit and answerability models of the existing output file and choose only the "
                "selection options (no retrieval or features of train questions)."})
    matched_flag_rate: float = field(default=0.05, metadata={
        "help": "Share of matched tuning questions allowed below the answerability threshold."})
    regularisation: float = field(default=1.0, metadata={"help": "Inverse L2 strength C of both models."})
    seed: int = field(default=SEED, metadata={"help": "Seed of the train sample and the mismatched pairing."})
    output: str = field(default="src/rirag/generation/focused/focused_scorer.json",
                        metadata={"help": "The frozen scorer."})
    results: str = field(default="benchmarks/results/focused_scorer.json", metadata={"help": "Results JSON."})


def cached_encoder(name: str):
    """texts -> normalised embeddings, each distinct text encoded once."""
    from rirag.retrieval.encoder import load_encoder

    model = load_encoder(name)
    cache: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            emb = model.encode(todo, normalize_embeddings=True, convert_to_numpy=True, batch_size=64,
                               show_progress_bar=False)
            cache.update(zip(todo, emb))
        return np.stack([cache[t] for t in texts])

    return encode


def items_of(questions, run: dict, corpus) -> list[dict]:
    """Each question with its filtered passages (texts, scores, ids) and gold ids; questions without any dropped."""
    from rirag.generation.pipeline import select_passages

    out = []
    for q in questions:
        passages = select_passages(run.get(q.id, {}), corpus, EVAL_K, True, where=q.id)
        if passages and q.gold:
            out.append({"id": q.id, "question": q.text, "texts": [p.text for p in passages],
                        "scores": [p.score for p in passages], "ids": [p.id for p in passages], "gold": set(q.gold)})
    return out


def mismatched_partner(items: list[dict], seed: int) -> list[int]:
    """For each item, another item whose gold passages differ
    (:func:`rirag.scoring.answer_quality.mismatched_partners`)."""
    from rirag.scoring.answer_quality import mismatched_partners

    return mismatched_partners([sorted(it["gold"]) for it in items], [it["ids"] for it in items], seed)


def featurise(answerer, items: list[dict], desc: str) -> None:
    """Add units, unit features, labels and answerability features (matched) to each item."""
    from tqdm.auto import tqdm

    for it in tqdm(items, desc=desc, unit="q"):
        units, x, a = answerer.features(it["question"], it["texts"], it["scores"])
        it["units"], it["x"], it["a"] = units, x, a
        it["y"] = np.array([it["ids"][u.passage] in it["gold"] for u in units], dtype=int)


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float, seed: int) -> dict:
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(0), x.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    model = LogisticRegression(C=c, max_iter=2000, random_state=seed).fit((x - mean) / scale, y)
    return {"coef": model.coef_[0].round(6).tolist(), "intercept": round(float(model.intercept_[0]), 6),
            "mean": mean.round(6).tolist(), "scale": scale.round(6).tolist()}


def evaluate_selection(answerer, items: list[dict]) -> dict:
    """Gold-citation precision/recall, answer length (missing-part sentences included) and the share of questions
    whose gold passage below rank 1 is cited, of the answerer's selection over featurised items."""
    from rirag.text.missing_parts import missing_parts, statement

    precision, recall, words, below = [], [], [], []
    for it in items:
        if not it["units"]:
            continue
        kept = answerer.select(answerer.scored_units(it["units"], it["x"]))
        cited = {it["ids"][n - 1] for s in kept for n in s.numbers}
        hits = len(cited & it["gold"])
        precision.append(hits / len(cited) if cited else 0.0)
        recall.append(hits / len(it["gold"]))
        said = missing_parts(it["question"], [s.unit.text for s in kept])
        words.append(sum(s.unit.words for s in kept) + sum(len(statement(p).split()) for p in said))
        lower = set(it["ids"][1:]) & it["gold"]
        if lower:
            below.append(bool(lower & cited))
    return {"gold_citation_precision": float(np.mean(precision)), "gold_citation_recall": float(np.mean(recall)),
            "words_median": float(np.median(words)), "words_p95": float(np.percentile(words, 95)),
            "words_max": int(max(words)), "gold_below_rank1_cited": float(np.mean(below)) if below else None,
            "questions": len(precision)}


def _floats(grid: str) -> list[float]:
    return [float(v) for v in grid.split(",") if v.strip()]


def selection_settings(args: FocusedScorerArguments) -> list[dict]:
    """Every selection setting of the grid: without the passage gate, then with it."""
    settings = [{"keep_ratio": k, "min_score": m} for k in _floats(args.keep_ratio_grid)
                for m in _floats(args.min_score_grid)]
    extra = [None if v.strip().lower() == "none" else int(v) for v in args.gate_extra_words_grid.split(",")
             if v.strip()] or [None]
    settings += [{"keep_ratio": k, "min_score": 0.0, "passage_weight": w, "passage_margin": d, "max_passages": int(n),
                  "max_words": int(m), "extra_unit_words": e}
                 for w in _floats(args.gate_weight_grid) for d in _floats(args.gate_margin_grid)
                 for n in _floats(args.gate_max_passages_grid) for k in _floats(args.gate_keep_ratio_grid)
                 for m in (_floats(args.gate_max_words_grid) or [args.max_words]) for e in extra]
    return settings


def f_beta(precision: float, recall: float, beta: float) -> float:
    """The F-beta of precision and recall (0 when both are 0)."""
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall > 0 else 0.0


def choose_selection(args: FocusedScorerArguments, answerer, unit_model: dict, tune_items: list[dict]):
    """(the chosen setting with its metrics, the whole grid): the best mean of gold-citation precision and recall
    among the settings within both length bounds (all settings if none is)."""
    from rirag.generation.focused import FocusedConfig

    answerer._scorer = {"unit": unit_model, "selection": {}}
    grid = []
    for setting in selection_settings(args):
        answerer.config = FocusedConfig(**{"max_words": args.max_words, **setting})
        grid.append({**setting, **evaluate_selection(answerer, tune_items)})
    eligible = [g for g in grid if g["words_median"] <= args.median_words_max
                and g["words_p95"] <= args.p95_words_max] or grid
    return choose_recall_first(eligible, args.selection_beta, len(tune_items)), grid


def choose_recall_first(eligible: list[dict], beta: float, questions: int) -> dict:
    """The setting of best F-beta; among the settings within one question's worth of it (1 / ``questions``: the grid
    is flat, and smaller differences are noise), the one of highest recall, then of best F-beta (recall first, issue
    32). Without this, 3 and 4 passages tied to 1e-5 and the choice between them fell to that noise."""
    def score(g: dict) -> float:
        return f_beta(g["gold_citation_precision"], g["gold_citation_recall"], beta)

    best = max(score(g) for g in eligible)
    close = [g for g in eligible if score(g) >= best - 1.0 / max(questions, 1)]
    return max(close, key=lambda g: (g["gold_citation_recall"], score(g)))


def fit_models(args: FocusedScorerArguments, answerer, obliqa) -> tuple[dict, dict, dict]:
    """(unit model, answerability model, provenance) learned on train questions (module docstring)."""
    from rirag.data.splits import split_questions
    from rirag.retrieval.registry import RetrieverSpec, build_retriever
    from rirag.training.runner import check_parts

    train = split_questions(obliqa, "train")
    train = random.Random(args.seed).sample(train, min(args.train_questions, len(train)))
    retriever = build_retriever(obliqa.corpus, RetrieverSpec(args.retriever))
    run = retriever.search({q.id: q.text for q in train}, k=RUN_DEPTH, show_progress=True)
    train_items = items_of(train, run, obliqa.corpus)
    check_parts("focused scorer", f"{obliqa.root} split train", {"train questions with passages": len(train_items)})
    featurise(answerer, train_items, "train features")
    x = np.concatenate([it["x"] for it in train_items if it["units"]])
    y = np.concatenate([it["y"] for it in train_items if it["units"]])
    unit_model = fit_logistic(x, y, args.regularisation, args.seed)
    a = np.stack([it["a"] for it in train_items] + mismatched_features(answerer, train_items, args.seed))
    b = np.array([1] * len(train_items) + [0] * len(train_items))
    answerability_model = fit_logistic(a, b, args.regularisation, args.seed)
    provenance = {"train_questions": len(train_items), "train_retriever": args.retriever, "train_units": int(len(y)),
                  "train_positive_share": round(float(y.mean()), 4)}
    return unit_model, answerability_model, provenance


def mismatched_features(answerer, items: list[dict], seed: int) -> list[np.ndarray]:
    """Answerability features of each item's question against its mismatched partner's passages."""
    return [answerer.features(it["question"], items[j]["texts"], items[j]["scores"])[2]
            for it, j in zip(items, mismatched_partner(items, seed))]


def frozen_models(path: str) -> tuple[dict, dict, dict]:
    """The unit and answerability models (and the train provenance) of an existing scorer file."""
    from rirag.generation.focused import load_scorer

    frozen = load_scorer(path)
    strip = ("features",)
    keys = ("train_questions", "train_retriever", "train_units", "train_positive_share")
    return ({k: v for k, v in frozen["unit"].items() if k not in strip},
            {k: v for k, v in frozen["answerability"].items() if k not in strip},
            {k: frozen["provenance"][k] for k in keys if k in frozen.get("provenance", {})})


def main(args: FocusedScorerArguments) -> dict | None:
    """Fit and write the scorer (module docstring); on a rank other than the job's main process: nothing (None)."""
    from rirag.training.runner import is_main_process, launched_processes

    if not is_main_process():
        logger.info("rank %s of %d: the focused scorer is fitted and written by the main process (rank 0) alone; "
                    "this process does nothing", os.environ.get("RANK"), launched_processes())
        return None
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import seeded_sample, split_questions
    from rirag.generation.extractive import modal_cue_obligations
    from rirag.generation.focused.answerer import FocusedAnswerer
    from rirag.generation.focused.scorer import ANSWERABILITY_FEATURES, FEATURES, _logistic
    from rirag.io import atomic_write_json
    from rirag.training.runner import check_parts

    start = time.time()
    obliqa = load_obliqa(args.data)
    answerer = FocusedAnswerer(encode=cached_encoder(args.encoder), is_obligation=modal_cue_obligations,
                               scorer={})

    # Unit and answerability models: learned on train, or kept from the frozen file
    if args.selection_only:
        unit_model, answerability_model, train_provenance = frozen_models(args.output)
    else:
        unit_model, answerability_model, train_provenance = fit_models(args, answerer, obliqa)

    # Tuning questions: validation questions outside the benchmark sample, never a test split
    tune_run = read_trec(args.tune_run)
    tune_questions = split_questions(obliqa, args.tune_split)
    sample = {q.id for q in seeded_sample(tune_questions, tune_run, args.benchmark_sample)}
    tune_items = items_of([q for q in tune_questions if q.id not in sample and q.id in tune_run], tune_run,
                          obliqa.corpus)
    logger.info("%d tuning questions (%s, outside the %d-question benchmark sample)", len(tune_items),
                args.tune_split, len(sample))
    check_parts("focused scorer", args.tune_run, {"tuning questions": len(tune_items)},
                hint=f"{args.tune_split} questions with a ranking, outside the benchmark sample")
    featurise(answerer, tune_items, "tuning features")
    matched_p = _logistic(np.stack([it["a"] for it in tune_items]), answerability_model)
    mismatched_p = _logistic(np.stack(mismatched_features(answerer, tune_items, args.seed)), answerability_model)
    threshold = float(np.quantile(matched_p, args.matched_flag_rate))
    best, grid = choose_selection(args, answerer, unit_model, tune_items)

    # Save
    command = "python train/focused_scorer.py " + " ".join(portable_args(sys.argv[1:]))
    selection = {k: best[k] for k in ("keep_ratio", "min_score", "passage_weight", "passage_margin", "max_passages",
                                      "extra_unit_words") if best.get(k) is not None}
    scorer = {
        "source": f"{args.output} ({command})",
        "unit": {"features": list(FEATURES), **unit_model},
        "answerability": {"features": list(ANSWERABILITY_FEATURES), **answerability_model},
        "selection": {**selection, "answerable_threshold": round(threshold, 6),
                      "max_words": int(best.get("max_words") or args.max_words)},
        "provenance": {"command": command, **train_provenance, "encoder": args.encoder,
                       "obligations": "deontic cues", "tune_run": args.tune_run, "tune_questions": len(tune_items),
                       "made": datetime.date.today().isoformat()},
    }
    atomic_write_json(args.output, scorer)
    logger.info("wrote %s", args.output)
    results = {"benchmark": "train/focused_scorer.py", "command": command, "seconds": round(time.time() - start, 1),
               "selection": scorer["selection"], "tuning": {
                   "chosen": best, "grid": grid,
                   "matched_flag_rate": float(np.mean(matched_p < threshold)),
                   "mismatched_flag_rate": float(np.mean(mismatched_p < threshold))},
               "provenance": scorer["provenance"],
               "unit_coefficients": dict(zip(FEATURES, unit_model["coef"])),
               "answerability_coefficients": dict(zip(ANSWERABILITY_FEATURES, answerability_model["coef"]))}
    atomic_write_json(args.results, results)
    logger.info("wrote %s", args.results)
    logger.info("chosen %s; mismatched flag rate on tuning %.3f (matched %.3f)", best,
                results["tuning"]["mismatched_flag_rate"], results["tuning"]["matched_flag_rate"])
    return results


if __name__ == "__main__":
    from trl import TrlParser

    from rirag.training.runner import run_trainer

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (arguments,) = TrlParser((FocusedScorerArguments,)).parse_args_and_config()
    sys.exit(run_trainer(main, arguments))
