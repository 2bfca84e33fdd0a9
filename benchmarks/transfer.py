"""Transfer of the ADGM-tuned parts to other questions and another jurisdiction (issue 38, build point 4).

The second seed paper adapted its encoders on ADGM and tested them on Australian regulation; here the same question
is asked of two question sets:

* ``ukfin``: the 80 citation-dependent PRA questions of ``../shared/data/ukfin_xref`` (two gold passages each, given
  as text and mapped to the ingested PRA corpus by :func:`rirag.data.questions.load_questions`) over the PRA
  Rulebook ingested by ``rirag data ingest ../shared/data/pra_rulebook --out out/pra``: another regulator, another
  drafting style, nothing of it seen in training;
* ``obliqa-mp``: ObliQA-MP validation (446 questions, 2-6 gold passages each, by passage id) over the ADGM corpus:
  the same corpus the parts were tuned on, but multi-passage questions written by others;
* ``obliqa-validation``: ObliQA's leakage-free ``validation`` split (held out by document from the ``train`` split
  the parts were tuned on).

Rows (every one built by :func:`rirag.retrieval.registry.build_retriever`): BM25; dense with the zero-shot encoder
and with the ADGM-tuned encoders ET, CT and ET+CT (leakage-free ``train`` split, built by ``make models``); hybrid
(α = :data:`~rirag.constants.HYBRID_ALPHA`) and RRF with the zero-shot encoder and with the best tuned encoder (the
tuned dense row with the highest All@10, then R@10, on the same questions: an optimistic choice, said in the
results); rank fusion (BM25 passages + document BM25, the CLI's fallback default); learned fusion (the ranker
trained on ADGM, applied as it is); the commands' default before cross-reference selection (``default-before``: the
best CV row needing no trained model), the default without trained models (``default``: that row with
cross-reference selection, :mod:`rirag.retrieval.xref_selection`, over the corpus's written graph; ObliQA's from
``--obliqa_graph``) and the default after ``make models`` (``default-models``: learned fusion with selection); with
``--adapted``, an encoder adapted to the PRA corpus from its own headings (no labels; ``adapted``: dense, against
the zero-shot encoder; ``default-adapted``: the default with it, against ``default``). A row
whose artifact is not built (its marker and its ``make models`` stamp, :func:`rirag.training.plan.status`
``current``) is skipped with a note.

Per row: R@10, MAP@10 (ranx) and All@10 (every gold passage in the top 10; on ukfin, where every question has two,
this is Both@10, and one-only@10 / Neither@10 come from :func:`rirag.retrieval.metrics.pair_metrics`), each with its
95 % bootstrap interval (questions resampled with replacement, seeded: ``benchmarks/retrieval_cv.py``'s
``bootstrap_interval``), and for each tuned row the paired difference from its zero-shot counterpart with its paired
95 % interval: a tuned part *transfers* where that interval lies above 0, *hurts* where it lies below, and shows no
clear difference otherwise. Then the focused answerer (the default generator) answers every question from the best
row's top 10 as retrieved (``answers``) and after the RIRAG score filter that ``rirag answer`` applies by default
(``answers_filtered``; on a fused run it often keeps one passage): gold-citation precision and recall
(:func:`rirag.scoring.answer_quality.answer_quality`, as ``benchmarks/generation.py``) and the cite-all share
(answers citing every gold passage; cite-both on ukfin), with bootstrap intervals.

Dense passage embeddings are cached per model and corpus (``$RIRAG_CACHE_DIR``): each encoder embeds each corpus once
(about 8 minutes for 14k passages on 2 idle cores). Writes ``benchmarks/results/transfer.json`` (rows merged by
question set and row: a later run with more artifacts built adds its rows and keeps the others).

Usage:

    python benchmarks/transfer.py --pra out/pra [--data ../shared/data/obliqa] [--models-root .] \\
        [--sets ukfin,obliqa-mp,obliqa-validation] [--rows bm25,zero-shot,et,ct,et-ct,hybrid,hybrid-tuned,rrf,
        rrf-tuned,rank-fusion,learned-fusion,default-before,default,default-models,adapted,default-adapted]
        [--obliqa_graph FILE] [--adapted DIR]
        [--answers true] [--bootstrap 1000] [--seed 42] [--out benchmarks/results/transfer.json]
        [--note "why rows were left out of --rows"]
"""

from __future__ import annotations

import logging
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rirag.constants import EVAL_K, HYBRID_ALPHA, OFFLINE_ENCODER, RUN_DEPTH, SEED
from rirag.io import portable_path
from rirag.retrieval.registry import RetrieverSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval_cv import bootstrap_interval, paired_difference_interval  # noqa: E402

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
#: Encoder key -> (label, artifact folder relative to the models root; None: the zero-shot encoder by name).
ENCODERS: dict[str, tuple[str, str | None]] = {
    "zero-shot": ("zero-shot", None),
    "et": ("ET", "artifacts/entailment_tuning/minilm-et-train"),
    "ct": ("CT", "artifacts/contrastive_tuning/minilm-ct-train"),
    "et-ct": ("ET+CT", "artifacts/contrastive_tuning/minilm-et-ct-train"),
}
TUNED = ("et", "ct", "et-ct")
LEARNED_FUSION = "artifacts/learned_fusion/minilm-lf-train"
#: The ranker's encoders in the order it was trained with (rirag.models: ct, et-ct, zero-shot).
LEARNED_FUSION_ENCODERS = ("ct", "et-ct", "zero-shot")
ROWS = ("bm25", "zero-shot", "et", "ct", "et-ct", "hybrid", "hybrid-tuned", "rrf", "rrf-tuned", "rank-fusion",
        "learned-fusion", "default-before", "default", "default-models", "adapted", "default-adapted")
SETS = ("ukfin", "obliqa-mp", "obliqa-validation")
METRICS = ("recall@10", "map@10", "all@10")
ANSWER_METRICS = ("gold_citation_precision", "gold_citation_recall", "cite_all")
#: The passage-set metrics of every answers row (issue 45, point 3), beside their ceiling (context_all_share).
PASSAGE_SET_METRICS = ("gold_citation_f1", "cite_all_share", "context_all_share", "cited_per_answer",
                       "gold_per_question", "words_median", "words_p95", "words_per_cited_passage")


@dataclass
class TransferConfig:
    pra: str = field(default="out/pra", metadata={"help": "The ingested PRA corpus (rirag data ingest)."})
    ukfin: str = field(default=str(REPO.parent / "shared/data/ukfin_xref/ukfin_dev_questions.json"),
                       metadata={"help": "The PRA questions (gold by text)."})
    data: str | None = field(default=None, metadata={"help": "ObliQA (ADGM) corpus (default: $RIRAG_DATA_DIR)."})
    mp: str = field(default=str(REPO.parent / "shared/data/obliqa_mp"),
                    metadata={"help": "ObliQA-MP folder (ObliQA_MultiPassage_val.json, qrels_val.txt)."})
    adapted: str | None = field(default=None, metadata={
        "help": "An encoder adapted to the PRA corpus without labels (recipes/adaptation/offline.yaml) for the rows "
                "adapted (dense) and default-adapted (the default with it; PRA questions only)."})
    obliqa_graph: str | None = field(default=None, metadata={
        "help": "ObliQA's references.jsonl for the default rows' cross-reference selection (default: "
                "DATA/xref/references.jsonl; `rirag data xref --data DATA --out DIR` writes one elsewhere)."})
    models_root: str = field(default=".", metadata={
        "help": "The checkout whose artifacts/ hold the models `make models` built (and artifacts/.build stamps)."})
    sets: str = field(default=",".join(SETS), metadata={"help": "Comma-separated question sets."})
    rows: str = field(default=",".join(ROWS), metadata={"help": "Comma-separated rows."})
    answers: bool = field(default=True, metadata={"help": "Answer with the focused answerer over the best row."})
    obligation_model: str | None = field(default=None, metadata={
        "help": "The focused answerer's obligation classifier (default: MODELS_ROOT/artifacts/obligation_classifier)."})
    bootstrap: int = field(default=1000, metadata={"help": "Bootstrap resamples."})
    seed: int = field(default=SEED, metadata={"help": "Bootstrap seed."})
    out: str = field(default="benchmarks/results/transfer.json", metadata={"help": "Results JSON."})
    note: str | None = field(default=None, metadata={
        "help": "Why rows were left out of --rows (recorded in the set's summary beside the rows not run)."})


# -- rows -------------------------------------------------------------------------------------------------------


def encoder_path(config: TransferConfig, key: str) -> str:
    rel = ENCODERS[key][1]
    return OFFLINE_ENCODER if rel is None else portable_path((Path(config.models_root) / rel).resolve())


def missing_artifact(config: TransferConfig, rel: str | None) -> str | None:
    """Why the artifact ``rel`` (relative to the models root) cannot be used, or None when it is built and current."""
    if rel is None:
        return None
    from rirag.models import STAGES, stage_for
    from rirag.training.plan import CURRENT, status

    stage = stage_for(rel)
    if stage is None:
        return f"{rel}: no make-models stage builds it"
    state = status(stage, Path(config.models_root).resolve(), {s.name: s for s in STAGES})
    return None if state == CURRENT else f"{rel} is {state} (make models ONLY={stage.name})"


def row_spec(config: TransferConfig, row: str, tuned: str | None) -> tuple[str, RetrieverSpec | None, list[str]]:
    """(label, spec, why not) of a row; ``tuned``: the best tuned encoder key for the ``-tuned`` rows."""
    if row == "bm25":
        return "BM25", RetrieverSpec("bm25"), []
    if row in ENCODERS:
        label = f"dense {ENCODERS[row][0]}"
        why = missing_artifact(config, ENCODERS[row][1])
        return label, RetrieverSpec("dense", encoder_path(config, row)), [why] if why else []
    if row in ("hybrid", "rrf", "hybrid-tuned", "rrf-tuned"):
        name = row.split("-")[0]
        key = "zero-shot" if row in ("hybrid", "rrf") else tuned
        what = "hybrid (α={})".format(HYBRID_ALPHA) if name == "hybrid" else "RRF"
        if key is None:
            return f"{what}, best tuned encoder", None, ["no tuned encoder row was measured"]
        options = {"alpha": HYBRID_ALPHA} if name == "hybrid" else {}
        return f"{what}, {ENCODERS[key][0]}", RetrieverSpec(name, encoder_path(config, key), options), []
    if row == "rank-fusion":
        return "rank fusion (BM25 + document BM25)", RetrieverSpec("rank-fusion"), []
    if row in ("learned-fusion", "default-models"):
        why = [w for w in [missing_artifact(config, LEARNED_FUSION)]
               + [missing_artifact(config, ENCODERS[k][1]) for k in LEARNED_FUSION_ENCODERS] if w]
        encoders = ",".join(encoder_path(config, k) for k in LEARNED_FUSION_ENCODERS)
        spec = RetrieverSpec("learned-fusion", None, {
            "ranker": portable_path((Path(config.models_root) / LEARNED_FUSION).resolve()), "encoders": encoders})
        if row == "default-models":
            spec.options["xref_select"] = "on"
            return "the default after make models (learned fusion + cross-reference selection)", spec, why
        return "learned fusion (ADGM-trained ranker)", spec, why
    if row in ("adapted", "default-adapted"):
        if not config.adapted:
            return f"{row}: no adapted encoder", None, ["no --adapted encoder given"]
        if row == "adapted":
            return "dense, adapted to the corpus without labels", RetrieverSpec("dense", config.adapted), []
        from rirag.retrieval.defaults import default_retriever

        base = default_retriever()
        spec = RetrieverSpec(base.name, config.adapted, {**base.options, "xref_select": "on"})
        return f"the default with the adapted encoder ({base.name} + cross-reference selection)", spec, []
    if row in ("default-before", "default"):
        from rirag.retrieval.defaults import default_retriever

        base = default_retriever()
        if row == "default-before":
            return f"the default before cross-reference selection ({base.name})", base, []
        spec = RetrieverSpec(base.name, base.model, {**base.options, "xref_select": "on"})
        return f"the default without trained models ({base.name} + cross-reference selection)", spec, []
    raise ValueError(f"unknown row {row!r}; choose from {', '.join(ROWS)}")


#: Row -> the row it is compared with (the same method without the ADGM tuning).
BASELINE = {"et": "zero-shot", "ct": "zero-shot", "et-ct": "zero-shot", "hybrid-tuned": "hybrid",
            "rrf-tuned": "rrf", "learned-fusion": "bm25", "default": "default-before",
            "default-models": "learned-fusion", "adapted": "zero-shot", "default-adapted": "default"}


# -- question sets ----------------------------------------------------------------------------------------------


@dataclass
class QuestionSetData:
    name: str
    corpus: dict
    questions: dict[str, str]  # qid -> text
    gold: dict[str, tuple[str | None, ...]]  # qid -> gold items (None: a gold text that maps to no passage)
    report: dict
    root: Path | str | None = None  # the corpus folder (its xref/ graph)


def load_set(config: TransferConfig, name: str) -> QuestionSetData:
    from rirag.data.obliqa import load_obliqa
    from rirag.data.questions import load_questions

    if name == "ukfin":
        obliqa = load_obliqa(config.pra)
        qset = load_questions(config.ukfin, obliqa)
        report = {k: v for k, v in qset.report().items() if k not in ("unmapped", "fuzzy")}
        report |= {"corpus": portable_path(config.pra), "passages": len(obliqa.corpus),
                   "questions_file": portable_path(config.ukfin)}
        items = {q.id: qset.items[q.id] for q in qset.questions}
    elif name == "obliqa-mp":
        obliqa = load_obliqa(config.data)
        qset = load_questions(Path(config.mp) / "ObliQA_MultiPassage_val.json", obliqa)
        qrels: dict[str, set[str]] = {}
        for line in (Path(config.mp) / "qrels_val.txt").read_text(encoding="utf-8").splitlines():
            q, _, d, rel = line.split()
            if int(rel) > 0:
                qrels.setdefault(q, set()).add(d)
        items = {q.id: qset.items[q.id] for q in qset.questions}
        disagree = sum(1 for q, its in items.items() if set(its) != qrels.get(q, set()))
        report = {k: v for k, v in qset.report().items() if k not in ("unmapped", "fuzzy")}
        report |= {"corpus": portable_path(obliqa.root), "passages": len(obliqa.corpus),
                   "questions_disagreeing_with_qrels_val": disagree}
    elif name == "obliqa-validation":
        from rirag.data.splits import split_questions

        obliqa = load_obliqa(config.data)
        qs = [q for q in split_questions(obliqa, "validation") if q.gold]
        items = {q.id: tuple(q.gold) for q in qs}
        report = {"corpus": portable_path(obliqa.root), "passages": len(obliqa.corpus), "split": "validation"}
        return QuestionSetData(name, obliqa.corpus, {q.id: q.text for q in qs}, items, report, obliqa.root)
    else:
        raise ValueError(f"unknown question set {name!r}; choose from {', '.join(SETS)}")
    questions = {q.id: q.text for q in qset.questions if any(i is not None for i in items[q.id])}
    return QuestionSetData(name, obliqa.corpus, questions, {q: items[q] for q in questions}, report, obliqa.root)


# -- metrics ----------------------------------------------------------------------------------------------------


def per_question(run: dict, gold: dict[str, tuple[str | None, ...]], k: int = EVAL_K) -> dict[str, np.ndarray]:
    """Per-question R@k, MAP@k (ranx, over the mapped gold passages) and All@k (every gold item in the top ``k``;
    an unmapped item is never retrieved, as in :func:`~rirag.retrieval.metrics.pair_metrics`), in ``gold`` order."""
    from rirag.data.runs import ranked
    from rirag.retrieval.metrics import evaluate_run

    qrels = {q: {pid: 1 for pid in items if pid is not None} for q, items in gold.items()}
    scores = evaluate_run(qrels, run, k=k, metrics=("recall", "map"), per_query=True)["per_query"]
    all_k = []
    for q, items in gold.items():
        top = {pid for pid, _ in ranked(run.get(q) or {}, k)}
        all_k.append(float(all(i is not None and i in top for i in items)))
    return {"recall@10": np.array([scores[q][f"recall@{k}"] for q in gold]),
            "map@10": np.array([scores[q][f"map@{k}"] for q in gold]), "all@10": np.array(all_k)}


def summarise(values: dict[str, np.ndarray], config: TransferConfig) -> dict:
    out = {}
    for m, v in values.items():
        out[m] = round(float(v.mean()), 4)
        out[f"{m} 95% CI"] = bootstrap_interval(v, config.bootstrap, config.seed)
    return out


def verdict(interval: list[float]) -> str:
    return "transfers" if interval[0] > 0 else "hurts" if interval[1] < 0 else "no clear difference"


# -- answers ----------------------------------------------------------------------------------------------------


def answer_set(config: TransferConfig, data: QuestionSetData, run: dict, filtered: bool) -> dict:
    """The focused answerer over the run's top :data:`EVAL_K` passages (``filtered``: after the RIRAG score filter,
    as ``rirag answer`` does by default): gold-citation precision / recall and the cite-all share, with bootstrap
    intervals."""
    from rirag.generation.base import FOCUSED, GeneratorSpec
    from rirag.generation.pipeline import answer_items, select_passages
    from rirag.generation.prompts import ZERO_SHOT
    from rirag.generation.registry import build_generator
    from rirag.scoring.answer_quality import answer_quality, cited_passages

    model = portable_path(config.obligation_model
                          or Path(config.models_root).resolve() / "artifacts/obligation_classifier")
    generator = build_generator(GeneratorSpec(FOCUSED, model))
    start = time.perf_counter()
    items = [(q, text, select_passages(run.get(q, {}), data.corpus, EVAL_K, filtered, where=f"{data.name}, {q}"))
             for q, text in data.questions.items()]
    answers = []
    for i in range(0, len(items), 32):
        answers += answer_items(items[i:i + 32], generator, ZERO_SHOT)
    seconds = time.perf_counter() - start
    texts = [a.text for a in answers]
    ids = [[p.id for p in a.passages] for a in answers]
    golds = [[g for g in data.gold[a.question_id] if g is not None] for a in answers]
    quality = answer_quality(texts, ids, golds)
    per = quality["per_item"]
    values = {"gold_citation_precision": np.array(per["gold_citation_precision"], dtype=float),
              "gold_citation_recall": np.array(per["gold_citation_recall"], dtype=float),
              "cite_all": np.array([float(set(data.gold[a.question_id]) <= set(cited_passages(t, i)))
                                    for a, t, i in zip(answers, texts, ids)]),
              "context_all_gold": np.array([float(set(data.gold[a.question_id]) <= set(i))
                                            for a, i in zip(answers, ids)])}
    context = f"top {EVAL_K}, " + ("RIRAG score filtering" if filtered else "unfiltered")
    out = {"generator": f"{FOCUSED} (obligation classifier {model})", "context": context, "answers": len(answers),
           **summarise(values, config),
           **{k: (round(float(quality[k]), 4) if quality.get(k) is not None else None) for k in PASSAGE_SET_METRICS},
           "cites_two_or_more": round(float(quality["cites_two_or_more"]), 4),
           "flag_rate": round(float(quality["flag_rate"]), 4),
           "seconds_per_answer": round(seconds / max(len(answers), 1), 3)}
    return out


# -- main -------------------------------------------------------------------------------------------------------


def machine() -> dict:
    import os

    import torch

    return {"machine": platform.machine(), "cpu_cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def run_set(config: TransferConfig, name: str, rows: list[str]) -> tuple[list[dict], dict]:
    from rirag.retrieval.metrics import pair_metrics
    from rirag.retrieval.registry import build_retriever

    data = load_set(config, name)
    logger.info("%s: %d questions over %d passages", name, len(data.questions), len(data.corpus))
    results, runs, values, notes = [], {}, {}, {}
    tuned_best = None
    order = [r for r in rows if r not in ("hybrid-tuned", "rrf-tuned")] + [r for r in rows
                                                                            if r in ("hybrid-tuned", "rrf-tuned")]
    for row in order:
        if row in ("hybrid-tuned", "rrf-tuned") and tuned_best is None:
            measured = [r for r in results if r["row"] in TUNED and r["status"] == "ok"]
            if measured:
                tuned_best = max(measured, key=lambda r: (r["all@10"], r["recall@10"]))["row"]
        label, spec, why = row_spec(config, row, tuned_best)
        base = {"questions": name, "row": row, "label": label}
        if why or spec is None:
            notes[row] = "; ".join(why)
            results.append({**base, "status": "skipped: " + "; ".join(why)})
            logger.warning("%s / %s skipped: %s", name, row, "; ".join(why))
            continue
        start = time.perf_counter()
        if spec.options.get("xref_select") and name != "ukfin" and config.obliqa_graph:
            spec.options["xref_graph"] = config.obliqa_graph
        retriever = build_retriever(data.corpus, spec, root=data.root)
        run = retriever.search(data.questions, k=RUN_DEPTH)
        seconds = time.perf_counter() - start
        runs[row], values[row] = run, per_question(run, data.gold)
        options = {k: portable_path(v) if k == "xref_graph" else v for k, v in spec.options.items()}
        res = {**base, "status": "ok", "retriever": spec.name, "model": spec.model, "options": options or None,
               **summarise(values[row], config)}
        if name == "ukfin":
            pairs = pair_metrics(data.gold, run, k=EVAL_K)
            assert abs(pairs["both@10"] - res["all@10"]) < 1e-9, (pairs, res["all@10"])  # the same measure
            res |= {"both@10": round(pairs["both@10"], 4), "one-only@10": round(pairs["one-only@10"], 4),
                    "neither@10": round(pairs["neither@10"], 4)}
        if row in ("hybrid-tuned", "rrf-tuned"):
            res["tuned_encoder"] = f"{ENCODERS[tuned_best][0]} (the best tuned dense row on these questions)"
        res["seconds"] = round(seconds, 1)
        results.append(res)
        logger.info("%s / %s: %s", name, label, {m: res[m] for m in METRICS})
    for res in results:
        baseline = BASELINE.get(res["row"])
        if res["status"] != "ok" or baseline not in values:
            continue
        res["compared_with"] = baseline
        for m in ("recall@10", "all@10"):
            interval = paired_difference_interval(values[res["row"]][m], values[baseline][m], config.bootstrap,
                                                  config.seed)
            res[f"{m} − {baseline}"] = round(float((values[res["row"]][m] - values[baseline][m]).mean()), 4)
            res[f"{m} − {baseline} 95% CI"] = interval
            res[f"{m} verdict"] = verdict(interval)
    measured = [r for r in results if r["status"] == "ok"]
    summary = {"questions": len(data.questions), "mapping": data.report, "skipped": notes,
               "rows_not_run": [r for r in ROWS if r not in rows]}
    if summary["rows_not_run"] and config.note:
        summary["rows_not_run_because"] = config.note
    if measured:
        best = max(measured, key=lambda r: (r["all@10"], r["recall@10"], r["map@10"]))
        best["best"] = True
        summary["best_row"] = best["row"]
        summary["best_row_chosen_by"] = "All@10, then R@10, then MAP@10 on these questions (optimistic)"
        if config.answers:  # answered after every set's retrieval rows are written (answering is the slow part)
            summary["answers"] = lambda: {"row": best["row"], **answer_set(config, data, runs[best["row"]], False)}
            summary["answers_filtered"] = lambda: {"row": best["row"],
                                                   **answer_set(config, data, runs[best["row"]], True)}
    return results, summary


def main(config: TransferConfig) -> dict:
    from rirag.io import merge_results_file, provenance

    sets = [s.strip() for s in config.sets.split(",") if s.strip()]
    rows = [r.strip() for r in config.rows.split(",") if r.strip()]
    for r in rows:
        if r not in ROWS:
            raise ValueError(f"unknown row {r!r}; choose from {', '.join(ROWS)}")
    if config.data is None:
        from rirag.data.obliqa import resolve_data_dir

        config.data = str(resolve_data_dir(None))
    all_rows, summaries = [], {}
    facts = machine()
    regnlp = {"source": "../shared/data/ukfin_xref/SOURCE.md (their passages, not ours: ours are whole rules)",
              "BM25": {"recall@10": 0.719, "both@10": 0.562}, "E5": {"recall@10": 0.881, "both@10": 0.775},
              "BM25+E5 RRF": {"recall@10": 0.887, "both@10": 0.800}}
    prov = provenance() | facts

    kept = {(r.get("questions"), r.get("row")) for r in (_old_file(config.out).get("rows") or [])}

    def write(rows_now: list[dict]) -> dict:
        done = {name: {k: v for k, v in s.items() if not callable(v)} for name, s in summaries.items()}
        for name, summary in done.items():  # a row an earlier run measured is in the file: not "not measured"
            summary["rows_not_run"] = [r for r in summary.get("rows_not_run", []) if (name, r) not in kept]
        return merge_results_file(config.out, rows_now, ("questions", "row"), prov,
                                  new_file={"benchmark": "benchmarks/transfer.py"},
                                  summaries={**_old_summaries(config.out), **done}, regnlp_ukfin=regnlp)

    for name in sets:
        rows_of_set, summaries[name] = run_set(config, name, rows)
        for r in rows_of_set:
            r.update(facts)
        all_rows += rows_of_set
        result = write(rows_of_set)
    for name in sets:
        for key in ("answers_filtered", "answers"):  # the filtered context is small: fast
            pending = summaries[name].get(key)
            if callable(pending):
                summaries[name][key] = pending()
                result = write([])
    return result


def _old_file(path: str) -> dict:
    from rirag.io import read_json

    return (read_json(path) or {}) if Path(path).exists() else {}


def _old_summaries(path: str) -> dict:
    return _old_file(path).get("summaries", {})


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (arguments,) = HfArgumentParser(TransferConfig).parse_args_into_dataclasses()
    main(arguments)
