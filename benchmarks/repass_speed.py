"""RePASs exactness and CPU speed: our scorer (``mode="reference"``) vs. the reference-structured loop.

Both score the same answers with the same models, in one process, with the same torch thread setting. The answers
are built (seeded) from the real gold passages of ObliQA dev questions, in three shapes, one per question in turn:

* ``copied``: the passages' obligation sentences (modal cue: must / shall / required / may not / should), copied;
* ``rewritten``: all passage sentences shuffled, with a paraphrase table applied (modality kept);
* ``unrelated``: sentences from the passages of another document's question.

Answers the reference loop cannot score (it crashes where a coverage input exceeds an absolute-position model's table,
which ours cuts on the answer side) are listed in ``reference_failed`` and left out of the comparison, whose size is
``n_compared``; ``mean_scores_ours`` is over the compared answers. Reports per field the maximum absolute difference
between the two implementations, the share of answers whose four values are identical, the mean scores per
implementation and per shape, the time of each (ours is timed cold, once before and once after the reference loop, to
bracket load drift on a shared machine), and the forward passes and tokens (padding included) each implementation ran
per model. Numbers from the local stand-in models are "RePASs (local judge)".

Usage (one command; refuses to overwrite an existing result unless --overwrite):

    python benchmarks/repass_speed.py --n-answers 210 --output benchmarks/results/repass_speed.json --overwrite true
    python benchmarks/repass_speed.py --n-answers 30 --output out/repass_dry.json          # dry run
    python benchmarks/repass_speed.py --nli-model cross-encoder/nli-deberta-v3-xsmall \\
        --coverage-model microsoft/deberta-large-mnli --output out/repass_official.json     # official models (Hub)
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field

from rirag.constants import SEED
from rirag.generation.extractive import OBLIGATION_CUE
from rirag.io import atomic_write_json, portable_args
from rirag.scoring.constants import (
    AUTO_BATCH_SIZE,
    LOCAL_JUDGE_LABEL,
    LOCAL_NLI_JUDGE,
    LOCAL_OBLIGATION_CLASSIFIER,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
)

logger = logging.getLogger(__name__)

SHAPES = ("copied", "rewritten", "unrelated")
#: Sentences with one of these cues count as obligations when building ``copied`` answers (model-independent).
#: Paraphrase table for ``rewritten`` answers (modality is kept, so obligations stay obligations).
PARAPHRASES = (
    (r"\bin accordance with\b", "as set out in"), (r"\bprior to\b", "before"), (r"\bin relation to\b", "regarding"),
    (r"\bpursuant to\b", "under"), (r"\bensure that\b", "make sure that"), (r"\bsubject to\b", "depending on"),
    (r"\bin respect of\b", "for"), (r"\bfor the purposes of\b", "for"), (r"\bAuthorised Person\b", "authorised firm"),
    (r"\bRelevant Person\b", "relevant firm"), (r"\bthe Regulator\b", "the FSRA"), (r"\bcommence\b", "begin"),
    (r"\bobtain\b", "get"), (r"\bsufficient\b", "enough"), (r"\bappropriate\b", "suitable"),
)
GPU_NOT_MEASURED = "not measured (no GPU lent this session)"


@dataclass
class SpeedArguments:
    questions_path: str = field(default="../shared/data/obliqa/ObliQA_dev.json",
                                metadata={"help": "ObliQA questions with gold passages (dev: nothing is chosen here)."})
    n_answers: int = field(default=200, metadata={"help": "Answers to score (shapes in turn)."})
    min_passage_chars: int = field(default=150, metadata={
        "help": "Questions whose gold passages are shorter are skipped."})
    max_passage_chars: int = field(default=2500, metadata={
        "help": "... and longer (bounds the reference loop's time)."})
    nli_model: str = field(default=LOCAL_NLI_JUDGE, metadata={"help": "NLI model (E, C)."})
    coverage_model: str = field(default=LOCAL_NLI_JUDGE, metadata={"help": "Coverage NLI model."})
    obligation_model: str = field(default=LOCAL_OBLIGATION_CLASSIFIER, metadata={"help": "Obligation classifier."})
    batch_size: str = field(default=AUTO_BATCH_SIZE, metadata={"help": "Our scorer's batch size ('auto' or a number)."})
    threads: int = field(default=1, metadata={
        "help": "torch.set_num_threads for both implementations (1: on a shared 2-core machine two intra-op threads "
                "spin-wait on each other and measure the load, not the code)."})
    workers: str = field(default="1", metadata={
        "help": "Comma-separated worker counts to time ours with (RePASsConfig.workers; each worker runs 1 torch "
                "thread), e.g. '1,2'. The reference loop always runs in this process with --threads threads."})
    fast: bool = field(default=True, metadata={
        "help": "Also time the optional fast mode (precision='int8', the largest worker count) and report its drift "
                "from the reference loop."})
    time_ours_twice: bool = field(default=True, metadata={
        "help": "Time ours again after the reference loop (brackets load drift); the mean is reported."})
    device: str = field(default="cpu", metadata={"help": "Device for both implementations."})
    seed: int = field(default=SEED, metadata={"help": "Seed of the question sample and the answer construction."})
    output: str = field(default="benchmarks/results/repass_speed.json", metadata={"help": "Result JSON."})
    overwrite: bool = field(default=False, metadata={"help": "Replace an existing result file."})


def _rewrite(sentence: str) -> str:
    for pattern, repl in PARAPHRASES:
        sentence = re.sub(pattern, repl, sentence)
    return sentence


def build_answers(args: SpeedArguments) -> list[dict]:
    """Seeded answers of the three shapes over real ObliQA gold passages: dicts with answer, passages, shape."""
    from rirag.text.sentences import punkt_split

    if not os.path.exists(args.questions_path):
        raise FileNotFoundError(f"{args.questions_path}: ObliQA questions not found (set --questions_path)")
    with open(args.questions_path, encoding="utf-8") as f:
        questions = json.load(f)
    usable = []
    for q in questions:
        passages = [p.get("Passage", "").strip() for p in q.get("Passages", []) if p.get("Passage", "").strip()]
        total = sum(len(p) for p in passages)
        if passages and args.min_passage_chars <= total <= args.max_passage_chars:
            usable.append((q["QuestionID"], {p.get("DocumentID") for p in q["Passages"]}, passages))
    if len(usable) < args.n_answers + 1:
        raise ValueError(f"{args.questions_path}: only {len(usable)} questions with {args.min_passage_chars}-"
                         f"{args.max_passage_chars} characters of passages; need {args.n_answers + 1}")
    rng = random.Random(args.seed)
    sample = rng.sample(usable, args.n_answers)
    items = []
    for i, (qid, docs, passages) in enumerate(sample):
        shape = SHAPES[i % len(SHAPES)]
        sentences = [s for p in passages for s in punkt_split(p)]
        if shape == "copied":
            chosen = [s for s in sentences if OBLIGATION_CUE.search(s)] or sentences[:2]
        elif shape == "rewritten":
            chosen = [_rewrite(s) for s in sentences]
            rng.shuffle(chosen)
        else:
            others = [u for u in usable if not (u[1] & docs)]
            other = rng.choice(others)[2]
            other_sentences = [s for p in other for s in punkt_split(p)]
            chosen = rng.sample(other_sentences, min(len(other_sentences), rng.randint(1, 3)))
        items.append({"QuestionID": qid, "shape": shape, "answer": " ".join(chosen), "passages": passages})
    return items


class ForwardCounter:
    """Counts forward passes and tokens (padding included) of each model, through forward pre-hooks."""

    def __init__(self, models: dict[str, object]):
        self.counts = {name: {"forward_passes": 0, "tokens": 0} for name in models}
        self.handles = [model.register_forward_pre_hook(self._hook(name), with_kwargs=True)
                        for name, model in models.items()]

    def _hook(self, name):
        def hook(module, args, kwargs):
            ids = kwargs.get("input_ids", args[0] if args else None)
            self.counts[name]["forward_passes"] += 1
            self.counts[name]["tokens"] += int(ids.numel()) if ids is not None else 0
        return hook

    def take(self) -> dict:
        out = {k: dict(v) for k, v in self.counts.items()}
        for v in self.counts.values():
            v.update(forward_passes=0, tokens=0)
        return out

    def remove(self):
        for h in self.handles:
            h.remove()


def _check_models(args: SpeedArguments) -> None:
    """Fail before any work when a local model folder is missing, saying how to make it."""
    from rirag.scoring.models import MissingModelError, missing_model_message, resolve_model_path

    problems = []
    for name in dict.fromkeys((args.nli_model, args.coverage_model, args.obligation_model)):
        path = resolve_model_path(name)
        if os.path.isabs(path) or path.startswith(("artifacts", ".")):
            if not os.path.exists(os.path.join(path, "config.json")):
                problems.append(missing_model_message(name))
    if problems:
        raise MissingModelError("; ".join(problems))


def warm_workers(w: int, scorer) -> None:
    """Start the pool of ``w`` workers and make each load (and, for int8, quantise) every model of ``scorer``: tiny
    tasks, several per worker, so that the timed run measures forward passes, as in a long-lived process."""
    import numpy as np

    from rirag.scoring.workers import _forward, get_pool

    pool = get_pool(w)
    tiny = {"input_ids": np.array([[101, 102]], dtype=np.int64), "attention_mask": np.ones((1, 2), dtype=np.int64)}
    for c in scorer._classifiers.values():
        list(pool.map(_forward, [c.name] * 4 * w, [c.precision] * 4 * w, [[tiny]] * 4 * w))


def _means(rows: list[dict], keys) -> dict:
    return {k: (sum(r[k] for r in rows) / len(rows) if rows else None) for k in keys}


def main(args: SpeedArguments) -> dict:
    if os.path.exists(args.output) and not args.overwrite:
        raise FileExistsError(f"{args.output} exists; pass --overwrite true to replace it, or --output elsewhere")
    _check_models(args)

    import torch

    from rirag.scoring.classifier import PROBABILITY_CACHE, clear_caches
    from rirag.scoring.models import load_classifier, parameter_count, resolve_device
    from rirag.scoring.reference_impl import ReferenceRePASs
    from rirag.scoring.repass import SCORE_KEYS, RePASsConfig, RePASsScorer

    torch.set_num_threads(args.threads)
    items = build_answers(args)
    answers, contexts = [x["answer"] for x in items], [x["passages"] for x in items]
    device = resolve_device(args.device)
    names = dict(nli_model=args.nli_model, coverage_model=args.coverage_model, obligation_model=args.obligation_model)
    loaded = {role: load_classifier(name, device)[1] for role, name in names.items()}
    unique_models = {name: loaded[role] for role, name in names.items()}
    counter = ForwardCounter(unique_models)

    from rirag.scoring.workers import resolve_workers

    asked = [int(w) for w in args.workers.split(",") if w.strip()]
    if not asked or min(asked) < 1:
        raise ValueError(f"--workers must list positive worker counts, got {args.workers!r}")
    worker_counts = list(dict.fromkeys(resolve_workers(w, device) for w in asked))  # accelerators: one process
    args.fast = args.fast and device == "cpu"  # int8 dynamic quantisation is CPU-only
    reference = ReferenceRePASs(**names, device=device)
    scorers = {w: RePASsScorer(RePASsConfig(**names, batch_size=args.batch_size, device=device, mode="reference",
                                            show_progress=False, workers=w)) for w in worker_counts}
    fast_workers = max(worker_counts)
    fast_scorer = RePASsScorer(RePASsConfig(**names, batch_size=args.batch_size, device=device, mode="reference",
                                            show_progress=False, workers=fast_workers, precision="int8"))
    for scorer in [*scorers.values(), *([fast_scorer] if args.fast else [])]:
        scorer.load_models()
    counter.take()

    def run_ours(w, scorer=None):
        """Ours cold (no sentence split, label or pair cached from an earlier run); workers already started."""
        scorer = scorer or scorers[w]
        if w > 1:  # start the pool and load the models in every worker outside the timing
            warm_workers(w, scorer)
        clear_caches()
        before = {c.name + ":" + c.encoding: dict(c.work) for c in scorer._classifiers.values()}
        start = time.perf_counter()
        result = scorer.score(answers, contexts)
        seconds = time.perf_counter() - start
        work: dict[str, dict[str, int]] = {}
        for c in scorer._classifiers.values():
            old = before[c.name + ":" + c.encoding]
            entry = work.setdefault(c.name, {"forward_passes": 0, "tokens": 0})
            for k in entry:
                entry[k] += c.work[k] - old[k]
        return result, seconds, work

    from tqdm.auto import tqdm

    runs_before = {}
    for w in worker_counts:
        runs_before[w] = run_ours(w)
        logger.info("ours, %d worker(s) (cold, before the reference loop): %.1f s; work %s", w, runs_before[w][1],
                    runs_before[w][2])
    ours, _, work_ours = runs_before[worker_counts[0]]
    cache_stats = {"entries": len(PROBABILITY_CACHE), "hits": PROBABILITY_CACHE.hits,
                   "misses": PROBABILITY_CACHE.misses}
    counter.take()

    clear_caches()
    reference.sent_tokenize.cache_clear()
    start = time.perf_counter()
    ref_scores, reference_failed = [], []
    for i, (a, p) in enumerate(tqdm(list(zip(answers, contexts)), desc="reference loop")):
        try:
            ref_scores.append(reference.score_item(a, p))
        except (RuntimeError, IndexError) as err:  # e.g. a coverage input beyond an absolute position table
            ref_scores.append(None)
            reference_failed.append({"index": i, "shape": items[i]["shape"], "error": f"{type(err).__name__}: {err}"})
    ref_seconds = time.perf_counter() - start
    work_reference = counter.take()
    logger.info("reference loop: %.1f s; work %s", ref_seconds, work_reference)

    runs_after = {}
    if args.time_ours_twice:
        for w in reversed(worker_counts):
            runs_after[w] = run_ours(w)
    fast = None
    if args.fast:
        fast_result, fast_seconds, _ = run_ours(fast_workers, fast_scorer)
        fast_items = [{k: fast_result["per_item"][k][i] for k in SCORE_KEYS} for i in range(len(items))]
    counter.remove()
    seconds_by_workers = {}
    for w in worker_counts:
        timed = [runs_before[w][1]] + ([runs_after[w][1]] if w in runs_after else [])
        seconds_by_workers[w] = {"mean": sum(timed) / len(timed), "before_and_after_reference": timed}
    best = min(worker_counts, key=lambda w: seconds_by_workers[w]["mean"])
    ours_seconds = seconds_by_workers[best]["mean"]
    # every worker count and both timings must give the same scores as the first
    repeat_identical = all(r[0]["per_item"] == ours["per_item"]
                           for r in list(runs_before.values()) + list(runs_after.values()))
    per_item_ours = [{k: ours["per_item"][k][i] for k in SCORE_KEYS} for i in range(len(items))]
    compared = [i for i, r in enumerate(ref_scores) if r is not None]
    diffs = {k: max(abs(per_item_ours[i][k] - ref_scores[i][k]) for i in compared) for k in SCORE_KEYS}
    identical = sum(all(per_item_ours[i][k] == ref_scores[i][k] for k in SCORE_KEYS) for i in compared)
    if args.fast:
        fast = {"precision": "int8", "workers": fast_workers, "seconds": round(fast_seconds, 2),
                "speedup": round(ref_seconds / fast_seconds, 2),
                "max_abs_diff_vs_reference": {k: max(abs(fast_items[i][k] - ref_scores[i][k]) for i in compared)
                                              for k in SCORE_KEYS},
                "mean_abs_diff_vs_reference": {k: sum(abs(fast_items[i][k] - ref_scores[i][k]) for i in compared)
                                               / len(compared) for k in SCORE_KEYS},
                "identical_share": sum(all(fast_items[i][k] == ref_scores[i][k] for k in SCORE_KEYS)
                                       for i in compared) / len(compared),
                "mean_scores": _means([fast_items[i] for i in compared], SCORE_KEYS),
                "note": "optional fast mode, never the default: allowed to differ from the reference"}
    official = args.nli_model == OFFICIAL_NLI_MODEL and args.coverage_model == OFFICIAL_COVERAGE_MODEL
    per_shape = {}
    for shape in SHAPES:
        idx = [i for i, x in enumerate(items) if x["shape"] == shape]
        per_shape[shape] = {
            "n": len(idx),
            "mean_scores_ours": _means([per_item_ours[i] for i in idx], SCORE_KEYS),
            "share_with_obligation_coverage_above_0": sum(per_item_ours[i]["obligation_coverage"] > 0 for i in idx)
            / max(1, len(idx)),
        }
    result = {
        "metric_label": "RePASs" if official else LOCAL_JUDGE_LABEL,
        "n_answers": len(items),
        "n_compared": len(compared),
        "reference_failed": reference_failed,
        "max_abs_diff": diffs,
        "max_abs_diff_overall": max(diffs.values()),
        "identical_share": identical / len(compared),
        "mean_scores_ours": _means([per_item_ours[i] for i in compared], SCORE_KEYS),
        "mean_scores_ours_all_answers": _means(per_item_ours, SCORE_KEYS),
        "mean_scores_reference": _means([ref_scores[i] for i in compared], SCORE_KEYS),
        "per_shape": per_shape,
        "share_with_obligation_coverage_above_0": sum(r["obligation_coverage"] > 0 for r in per_item_ours) / len(items),
        "reference_seconds": round(ref_seconds, 2),
        "reference_threads": args.threads,
        "ours_workers": best,
        "ours_seconds": round(ours_seconds, 2),
        "speedup": round(ref_seconds / ours_seconds, 2),
        "by_workers": {str(w): {"seconds": round(v["mean"], 2),
                                "seconds_before_and_after_reference": [round(t, 2)
                                                                       for t in v["before_and_after_reference"]],
                                "speedup": round(ref_seconds / v["mean"], 2)} for w, v in seconds_by_workers.items()},
        "ours_repeat_identical": repeat_identical,
        "fast_mode": fast if fast is not None else "not measured (--fast false)",
        "work": {"reference": work_reference, "ours": work_ours},
        "ours_cache": cache_stats,
        "truncations_ours": ours["truncations"],
        "gpu": GPU_NOT_MEASURED if device == "cpu" else f"measured on {device}",
        "models": names,
        "model_parameters": {name: parameter_count(m) for name, m in unique_models.items()},
        "batch_size": args.batch_size,
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "cpu_cores": os.cpu_count(),
        "note": "the reference loop runs in this process with reference_threads torch threads; ours runs with "
                "each worker count of by_workers (1: in this process with the same threads; N > 1: N processes of "
                "1 torch thread, started before timing); ours timed cold (empty caches) before and, with "
                "--time_ours_twice, after the reference loop, and averaged; ours_seconds and speedup are the "
                "fastest worker count",
        "command": "python benchmarks/repass_speed.py " + " ".join(portable_args(sys.argv[1:])),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "config": asdict(args),
    }
    atomic_write_json(args.output, result)
    logger.info("%s: %d answers | reference loop %.1fs | ours %.1fs | speedup %.2fx | max |diff| %s | identical %.3f",
                result["metric_label"], len(items), ref_seconds, ours_seconds, result["speedup"], diffs,
                result["identical_share"])
    sys.stdout.write(json.dumps({k: result[k] for k in ("speedup", "max_abs_diff", "identical_share",
                                                        "mean_scores_ours")}, indent=2) + "\n")
    return result


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (speed_args,) = HfArgumentParser(SpeedArguments).parse_args_into_dataclasses()
    try:
        main(speed_args)
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        logger.error("%s", err)
        sys.exit(2)
