"""Answer generation benchmark: one row per system on a fixed, seeded sample of leakage-free validation questions.

Context: the committed best run (``benchmarks/runs/validation.best.trec.gz``), top 10, RIRAG score filtering. Rows
(:data:`SYSTEMS`): the question-focused answerer (the default); the extractive composer ("all obligations", the
question-blind baseline); the base generator zero-shot, few-shot and few-shot + CoT; the
RAFT-LoRA adapter on the same base; and the closed-book control of the zero-shot and RAFT models (the question
alone; their answers are scored against the same retrieved passages, which they never saw, as in the second seed
paper's section 4.5).

Stages, each resumable and restartable per row:

* ``generate``: answers every sampled question not yet answered (each answer flushed as written, see
  ``rirag.data.answers.AnswersFile``) into ``benchmarks/answers/<row>.json.gz`` (the shared-task layout plus
  ``Citations``) and records seconds per answer and generated tokens/s;
* ``quality``: the answer metrics that copying cannot game (``rirag.scoring.answer_quality``: gold-citation
  precision and recall against the questions' qrels, words, answers shared by questions with different gold, broken
  units, the flag rate, answers citing two or more passages, the share of questions whose gold passage was given
  below rank 1 that cite it, the missing-part statement rate), and for the passage generators (focused,
  extractive) the mismatched-context test: each question answered from another question's passages, and the share
  of those answers that say so; no model needed beyond the generator;
* ``score``: ``quality``, then RePASs with the local judge (E, C, OC, composite, and the signature of the scorer in
  ``repass_signature``: its models, mode, precision, splitter; ``rirag.scoring.signature``), the attribution metrics
  (citation precision and recall, copy ratio; ``rirag.scoring.attribution``) and the mean answer length, over the
  answers present. Rows scored before signatures were recorded have none (``docs/build_results.py`` says so).

Results are merged into ``benchmarks/results/generation.json`` (``rows``: system name -> metrics); other rows are
kept. A row measured on fewer questions than the sample (``--limit``, or generation not finished) says so in its
``questions`` and ``complete`` fields.

Usage:

    python benchmarks/generation.py --stage generate --rows zero-shot,raft --limit 20 --threads 2
    python benchmarks/generation.py --stage score                  # needs artifacts/nli_judge + obligation_classifier
    python benchmarks/generation.py                                # both stages, every row, all 150 questions
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K, SEED
from rirag.data.splits import ANSWER_SAMPLE_SIZE
from rirag.generation.base import BATCH_SIZE, EXTRACTIVE, FOCUSED, MAX_NEW_TOKENS
from rirag.generation.focused.config import command_defaults
from rirag.generation.prompts import CLOSED_BOOK, FEW_SHOT, FEW_SHOT_COT, RAFT, ZERO_SHOT
from rirag.generation.registry import PASSAGE_GENERATORS
from rirag.io import portable_args
from rirag.scoring.constants import LOCAL_JUDGE_LABEL, LOCAL_NLI_JUDGE, LOCAL_OBLIGATION_CLASSIFIER
from rirag.scoring.signature import ROW_KEY

logger = logging.getLogger(__name__)

#: Row name -> (model: "focused" | "extractive" | "base" | "raft", prompting strategy). "extractive" is the
#: question-blind "all obligations" baseline.
SYSTEMS: dict[str, tuple[str, str]] = {
    "focused": (FOCUSED, ZERO_SHOT),
    "focused-lists": (FOCUSED, ZERO_SHOT),
    "focused-rirag": (FOCUSED, ZERO_SHOT),
    "focused-passage-set": (FOCUSED, ZERO_SHOT),
    "focused-answer-parts": (FOCUSED, ZERO_SHOT),
    "extractive": (EXTRACTIVE, ZERO_SHOT),
    "zero-shot": ("base", ZERO_SHOT),
    "few-shot": ("base", FEW_SHOT),
    "few-shot-cot": ("base", FEW_SHOT_COT),
    "raft": ("raft", RAFT),
    "zero-shot-closed-book": ("base", CLOSED_BOOK),
    "raft-closed-book": ("raft", CLOSED_BOOK),
}
#: Generator options of a row beyond its model's defaults (as the CLI flag of the same name sets them). ``focused`` is
#: the commands' default answerer: the switches they turn on by default (following cross-references).
ROW_GENERATOR_OPTIONS: dict[str, dict] = {"focused": {k: True for k, on in command_defaults().items() if on},
                                          "focused-lists": {"focus_lists": True},
                                          "focused-passage-set": {"passage_set": True},
                                          # the default with each part of the question answered (issue 64, point 2)
                                          "focused-answer-parts": {**{k: True for k, on in command_defaults().items()
                                                                      if on}, "answer_parts": True}}
#: The context filter of a row (``--context-filter``; rirag.retrieval.filtering.CONTEXT_FILTERS): the focused rows
#: answer from what the commands give them by default; the language-model and extractive rows, and
#: ``focused-rirag``, from the paper's RIRAG filter they were measured with (a 135M model's prompt stays short).
ROW_CONTEXT_FILTER: dict[str, str] = {"focused": DEFAULT_CONTEXT_FILTER, "focused-lists": DEFAULT_CONTEXT_FILTER,
                                      "focused-passage-set": DEFAULT_CONTEXT_FILTER,
                                      "focused-answer-parts": DEFAULT_CONTEXT_FILTER}
PAPER_CONTEXT_FILTER = "rirag"
#: Metric keys every scored row carries: RePASs and its parts (local judge), NLI citation support, copying.
QUALITY_KEYS = ("repass", "entailment", "contradiction", "obligation_coverage", "citation_precision",
                "citation_recall", "copy_ratio")
#: Metrics that copying cannot game (rirag.scoring.answer_quality), computed without any model.
ANSWER_KEYS = ("gold_citation_precision", "gold_citation_recall", "gold_citation_f1", "cite_all_share",
               "context_all_share", "context_recall", "cited_per_answer", "gold_per_question",
               "words_per_cited_passage", "words_median", "words_p95", "words_max",
               "shared_answers", "broken_units", "answers_with_broken_units", "flag_rate", "cites_two_or_more",
               "gold_below_rank1_cited", "gold_below_rank1_questions", "missing_part_rate")
SAMPLE_SIZE = ANSWER_SAMPLE_SIZE


@dataclass
class GenerationBenchArguments:
    stage: str = field(default="all", metadata={
        "help": "generate | quality (the model-free answer metrics, and the mismatched-context test of passage "
                "generators) | score (quality + RePASs and attribution with the local judge) | all"})
    rows: str = field(default=",".join(SYSTEMS), metadata={"help": "Comma-separated rows to run."})
    limit: int | None = field(default=None, metadata={
        "help": "Only the first N questions of the fixed sample (the row records how many it covers)."})
    sample_size: int = field(default=SAMPLE_SIZE, metadata={"help": "Questions in the fixed sample."})
    sample_seed: int = field(default=SEED, metadata={"help": "Seed of the sample."})
    split: str = field(default="validation", metadata={"help": "Leakage-free validation questions."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder or Hub id (default: $RIRAG_DATA_DIR)."})
    run: str = field(default="benchmarks/runs/validation.best.trec.gz", metadata={"help": "The context run."})
    base_model: str = field(default="artifacts/models/smollm2-135m-instruct", metadata={
        "help": "The prompted generator (a folder, a Hub id, or smollm2-135m-instruct for the GGUF)."})
    raft_adapter: str = field(default="artifacts/raft/smollm2-135m-raft", metadata={
        "help": "The RAFT LoRA adapter stacked on base_model (train/raft.py)."})
    obligation_model: str = field(default=LOCAL_OBLIGATION_CLASSIFIER, metadata={
        "help": "Obligation classifier (extractive composer and RePASs)."})
    nli_model: str = field(default=LOCAL_NLI_JUDGE, metadata={"help": "NLI judge (RePASs E, C, OC; attribution)."})
    answers_dir: str = field(default="benchmarks/answers", metadata={"help": "Where the answers files go."})
    graph: str = field(default="", metadata={
        "help": "The corpus's cross-reference graph folder (rirag data xref), given to the rows that read references "
                "(focused, which follows them, and focused-passage-set); empty: the corpus folder's, as rirag ask "
                "reads it (its xref/ when written, else resolved on the fly)."})
    results: str = field(default="benchmarks/results/generation.json", metadata={"help": "Results JSON."})
    batch_size: int = field(default=BATCH_SIZE, metadata={"help": "Questions per generation call."})
    max_new_tokens: int = field(default=MAX_NEW_TOKENS, metadata={"help": "New tokens per answer."})
    threads: int | None = field(default=None, metadata={"help": "torch threads (default: torch's choice)."})
    score_workers: str = field(default="auto", metadata={
        "help": "RePASs/attribution worker processes for the score stage (RePASsConfig.workers; "
                "'auto': one per core)."})


# -- the sample and its context ---------------------------------------------------------------------------------


def sample_questions(questions, run: dict, size: int, seed: int) -> list:
    """The benchmark's fixed, seeded sample (:func:`rirag.data.splits.seeded_sample`)."""
    from rirag.data.splits import seeded_sample

    return seeded_sample(questions, run, size, seed)


def answers_path(args: GenerationBenchArguments, row: str) -> Path:
    return Path(args.answers_dir) / f"{row}.json"


def read_answers(args: GenerationBenchArguments, row: str) -> list[dict]:
    """The row's answer records (gzipped file, or the plain file / journal of an interrupted run)."""
    from rirag.data.answers import AnswersFile

    plain, packed = answers_path(args, row), Path(f"{answers_path(args, row)}.gz")
    if packed.exists() and not plain.exists():
        with gzip.open(packed, "rt", encoding="utf-8") as f:
            return json.load(f)
    return list(AnswersFile(plain).records.values()) if plain.exists() or Path(f"{plain}.partial.jsonl").exists() \
        else []


def _unpack(plain: Path) -> None:
    """Resume from a committed ``.json.gz``: unpack it so that AnswersFile skips what it holds."""
    packed = Path(f"{plain}.gz")
    if packed.exists() and not plain.exists():
        with gzip.open(packed, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)


def _pack(plain: Path) -> Path:
    """Gzip ``plain`` into ``plain.gz`` atomically (deterministic: no timestamp) and remove ``plain``."""
    from rirag.io import atomic_write_bytes

    packed = Path(f"{plain}.gz")
    atomic_write_bytes(packed, gzip.compress(plain.read_bytes(), mtime=0))
    plain.unlink()
    return packed


def row_options(args: GenerationBenchArguments, row: str):
    """The row's :class:`~rirag.generation.pipeline.AnswerOptions` (as ``rirag answer --run`` resolves them): its
    generator, its strategy, the top :data:`EVAL_K` passages of the run, its context filter."""
    from rirag.generation.base import GeneratorSpec
    from rirag.generation.pipeline import AnswerOptions

    model, strategy = SYSTEMS[row]
    if model in PASSAGE_GENERATORS:
        spec = GeneratorSpec(model, args.obligation_model, dict(ROW_GENERATOR_OPTIONS.get(row, {})))
    else:
        options = {"max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size}
        if model == "raft":
            if not Path(args.raft_adapter).exists():
                raise FileNotFoundError(f"RAFT adapter not found: {args.raft_adapter} (train it with train/raft.py)")
            options["adapter"] = args.raft_adapter
        spec = GeneratorSpec(args.base_model, None, options)
    return AnswerOptions(spec, None, strategy, EVAL_K, context_filter=row_context_filter(row))


def row_context_filter(row: str) -> str:
    return ROW_CONTEXT_FILTER.get(row, PAPER_CONTEXT_FILTER)


def build_row_generator(args: GenerationBenchArguments, row: str):
    from rirag.generation.registry import build_generator

    return build_generator(row_options(args, row).generator)


# -- stages -----------------------------------------------------------------------------------------------------


def generate_row(args: GenerationBenchArguments, row: str, questions, run: dict, corpus, generator=None,
                 root: str | Path | None = None) -> dict:
    """Answer the row's missing questions (resumable); returns the generation stats of this call."""
    from rirag.data.answers import AnswersFile
    from rirag.generation.pipeline import answer_all, prepare_questions

    options = row_options(args, row)
    plain = answers_path(args, row)
    plain.parent.mkdir(parents=True, exist_ok=True)
    _unpack(plain)
    generator = generator or build_row_generator(args, row)
    if (args.graph or root) and any(options.generator.options.get(k) for k in ("passage_set", "follow_references")):
        from rirag.xref.graph import ReferenceGraph

        # the graph given, else the corpus folder's (its xref/ when written, else resolved on the fly: as rirag ask)
        graph = (ReferenceGraph(graph=Path(args.graph) / "references.jsonl") if args.graph
                 else ReferenceGraph(root, corpus=corpus))
        generator.attach_references(graph, corpus)
    load_seconds = None
    if hasattr(generator, "load"):  # load the model outside the timed loop
        start = time.time()
        generator.load()
        load_seconds = round(time.time() - start, 2)
    tokens_before = getattr(generator, "generated_tokens", None)
    start = time.time()
    summary = answer_all(prepare_questions((q.id, q.text) for q in questions), run, corpus, generator,
                         options.strategy, AnswersFile(plain), k=options.k, context=options.context,
                         batch_size=args.batch_size, where=args.run)
    seconds = time.time() - start
    _pack(plain)
    stats = {"answered_now": summary["answered"], "generate_seconds_now": round(seconds, 2),
             "load_seconds": load_seconds if load_seconds is not None else "inside generate_seconds_now",
             "warnings": summary["warnings"]}
    if summary["answered"]:
        stats["seconds_per_answer"] = round(seconds / summary["answered"], 3)
        if tokens_before is not None:
            tokens = generator.generated_tokens - tokens_before
            stats["generated_tokens_now"] = tokens
            stats["generated_tokens_per_second"] = round(tokens / seconds, 2) if seconds > 0 else None
    return stats


def score_row(records: list[dict], repass_scorer, attribution_scorer) -> dict:
    """Quality metrics of one row's answers: ``repass_scorer`` (:class:`rirag.scoring.repass.RePASsScorer`) and
    ``attribution_scorer`` (:class:`rirag.scoring.attribution.AttributionScorer`), each ``.score(answers,
    passages)``, plus answer length."""
    from rirag.scoring.answers import repass_text

    answers = [r.get("Answer") or "" for r in records]
    passages = [r["RetrievedPassages"] for r in records]
    result = repass_scorer.score([repass_text(a) for a in answers], passages)  # citation markers are not claims
    metrics = {k: result[k] for k in ("repass", "entailment", "contradiction", "obligation_coverage")}
    # what made those numbers (None from a scorer that records none: a merged row never keeps an older signature)
    metrics[ROW_KEY] = result.get("signature")
    attribution = attribution_scorer.score(answers, passages)
    metrics |= {k: attribution[k] for k in ("citation_precision", "citation_recall", "uncited_share", "copy_ratio",
                                           "invalid_citations_total")}
    metrics["abstained_answers"] = len(attribution["abstained"])
    metrics["scored_answers"] = result["n_scored"]
    metrics["empty_answers"] = sum(not (repass_text(a) or "").strip() for a in answers)  # markers only: empty too
    metrics["mean_answer_words"] = round(sum(len(a.split()) for a in answers) / len(answers), 1) if answers else None
    return metrics


def quality_row(records: list[dict], golds: dict[str, list[str]]) -> dict:
    """The model-free answer metrics of one row (:func:`rirag.scoring.answer_quality.answer_quality`) against the
    questions' gold passages."""
    from rirag.scoring.answer_quality import answer_quality

    result = answer_quality([r.get("Answer") or "" for r in records], [r["RetrievedIDs"] for r in records],
                            [golds[r["QuestionID"]] for r in records])
    return {k: result[k] for k in ANSWER_KEYS}


def mismatched_flag_rate(records: list[dict], golds: dict[str, list[str]], generator, seed: int) -> dict:
    """Answer each question from another question's passages (:func:`rirag.scoring.answer_quality.mismatched_partners`)
    and measure how often the answer says they do not address it (a passage generator: no sampling, seconds)."""
    from rirag.generation.pipeline import RetrievedPassage, answer_items
    from rirag.scoring.answer_quality import is_flagged, mismatched_partners

    partner = mismatched_partners([golds[r["QuestionID"]] for r in records], [r["RetrievedIDs"] for r in records],
                                  seed)
    items = []
    for r, j in zip(records, partner):
        other = records[j]
        # the other question's passages with rank-order scores (their own retrieval scores are not in the record)
        passages = [RetrievedPassage(pid, text, 1.0 - 0.01 * n)
                    for n, (pid, text) in enumerate(zip(other["RetrievedIDs"], other["RetrievedPassages"]))]
        items.append((r["QuestionID"], r["Question"], passages))
    answers = answer_items(items, generator, ZERO_SHOT)
    return {"flag_rate_mismatched": float(sum(is_flagged(a.text) for a in answers) / len(answers)),
            "mismatched_questions": len(answers), "mismatched_seed": seed}


def merge_results(path: str, rows: dict[str, dict], meta: dict, replace: set[str] | frozenset = frozenset()) -> dict:
    """Merge ``rows`` into the results JSON (other rows kept; a row's keys updated), atomically. A row in
    ``replace`` is written anew: its answers changed, so nothing measured on the old ones is kept."""
    from rirag.io import atomic_write_json, with_fingerprints

    rows = dict(zip(rows, with_fingerprints(list(rows.values()))))  # the weights each row was measured on
    results = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    results.update({k: v for k, v in meta.items() if k != "rows"})
    merged = results.setdefault("rows", {})
    for name, values in rows.items():
        merged[name] = {**({} if name in replace else merged.get(name, {})), **values}
    atomic_write_json(path, results)
    return results


def main(args: GenerationBenchArguments) -> dict:
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import split_questions

    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown row(s) {unknown}; choose from {', '.join(SYSTEMS)}")
    if args.stage not in ("generate", "quality", "score", "all"):
        raise ValueError(f"--stage must be generate, quality, score or all, got {args.stage!r}")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    obliqa = load_obliqa(args.data)
    run = read_trec(args.run)
    sample = sample_questions(split_questions(obliqa, args.split), run, args.sample_size, args.sample_seed)
    questions = sample[:args.limit] if args.limit else sample
    ids = [q.id for q in questions]
    golds = {q.id: list(q.gold) for q in sample}
    meta = {"benchmark": "benchmarks/generation.py", "split": args.split, "context_run": args.run,
            "context": f"top {EVAL_K}, each row's context filter (its context_filter)", "sample_size": args.sample_size,
            "sample_seed": args.sample_seed, "judge": f"{LOCAL_JUDGE_LABEL}: {args.nli_model}",
            "repass_input": "each answer without its [n] citation markers (rirag.scoring.answers.repass_text); "
                            "the citations are judged by the attribution metrics",
            "base_model": args.base_model, "raft_adapter": args.raft_adapter}
    if args.stage in ("score", "all"):  # RePASs's obligation model; a passage generator's own is in its row
        meta["obligation_model"] = args.obligation_model
    command = "python benchmarks/generation.py " + " ".join(portable_args(sys.argv[1:]))
    out: dict[str, dict] = {}
    for row in rows:
        model, strategy = SYSTEMS[row]
        values: dict = {"model": model if model in PASSAGE_GENERATORS else
                        (args.base_model + (f" + {args.raft_adapter}" if model == "raft" else "")),
                        "strategy": strategy, "context_filter": row_context_filter(row)}
        replace = set()
        if args.stage in ("generate", "all"):
            stats = generate_row(args, row, questions, run, obliqa.corpus, root=obliqa.root)
            if stats["answered_now"]:  # new answers: the row's old metrics describe other answers
                replace.add(row)
            done = {r["QuestionID"] for r in read_answers(args, row)}
            stats["answered_in_sample"] = sum(q.id in done for q in sample)
            values["generation"] = stats | {"command": command, "threads": args.threads or "torch default"}
            if model in PASSAGE_GENERATORS:
                values["obligation_model"] = args.obligation_model
            if "seconds_per_answer" in stats:
                values["seconds_per_answer"] = stats["seconds_per_answer"]
                values["generated_tokens_per_second"] = stats.get("generated_tokens_per_second")
        if args.stage in ("quality", "score", "all"):
            records = [r for r in read_answers(args, row) if r["QuestionID"] in set(ids)]
            if not records:
                raise FileNotFoundError(f"row {row}: no answers for the selected questions; run --stage generate")
            values |= quality_row(records, golds)
            if model in PASSAGE_GENERATORS:
                values |= mismatched_flag_rate(records, golds, build_row_generator(args, row), args.sample_seed)
            values["quality_command"] = command
            values["questions"] = len(records)
            values["complete"] = len(records) == args.sample_size
        if args.stage in ("score", "all"):
            from rirag.scoring.attribution import AttributionConfig, AttributionScorer
            from rirag.scoring.repass import RePASsScorer

            scorer = RePASsScorer(nli_model=args.nli_model, coverage_model=args.nli_model,
                                  obligation_model=args.obligation_model, workers=args.score_workers)
            attribution = AttributionScorer(AttributionConfig(nli_model=args.nli_model,
                                                              workers=scorer.config.workers))
            values |= score_row(records, scorer, attribution)
            values["score_command"] = command
        merge_results(args.results, {row: values}, meta, replace)  # each row lands as soon as it is done
        out[row] = values
        logger.info("%s: %s", row, {k: v for k, v in values.items() if k in QUALITY_KEYS + ANSWER_KEYS})
    return out


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (arguments,) = HfArgumentParser(GenerationBenchArguments).parse_args_into_dataclasses()
    main(arguments)
