"""``rirag evaluate retrieval`` (Recall/MAP/MRR/nDCG@k of a TREC run, over :mod:`rirag.data.runs`) and
``rirag evaluate answers`` (RePASs and the answer metrics of a shared-task answer file, over
:mod:`rirag.scoring.answers`)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from rirag import validation as check
from rirag.cli import checks
from rirag.cli.options import (
    Parser,
    add_data_option,
    add_k_option,
    add_max_input_option,
    add_split_option,
    auto_or,
    bounded_int,
)
from rirag.cli.output import format_table
from rirag.cli.runner import checked
from rirag.constants import EVAL_K
from rirag.data.obliqa import load_obliqa
from rirag.data.runs import read_trec
from rirag.data.splits import qrels_of, split_questions
from rirag.errors import UsageError
from rirag.exit_codes import EXIT_OK, EXIT_USAGE
from rirag.io import atomic_write_json
from rirag.retrieval.metrics import evaluate_run, metric_names, pair_metric_names, pair_metrics
from rirag.scoring.constants import (
    AUTO_BATCH_SIZE,
    AUTO_WORKERS,
    DEFAULT_BATCH_SIZE,
    HUB_OBLIGATION_MODEL,
    LOCAL_NLI_JUDGE,
    LOCAL_OBLIGATION_CLASSIFIER,
    MAX_ANSWER_CHARS,
    MODES,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    TRAIN_COMMANDS,
)
from rirag.scoring.models import MissingModelError

logger = logging.getLogger(__name__)


# -- rirag evaluate retrieval -------------------------------------------------------------------------------------


def cmd_evaluate_retrieval(args) -> int:
    checks.split_or_questions(args)
    checks.input_path(args.run, "--run")
    for option, path in (("--json", args.json), ("--per-query", args.per_query)):
        if path:
            check.output_file(path, option)
    run = read_trec(args.run)
    obliqa = load_obliqa(args.data)
    check.k_within_corpus(args.k, len(obliqa.corpus))  # a k given above the corpus is refused, the default is not
    mapping = None
    if args.split:
        questions = split_questions(obliqa, args.split, args.seed)
        items = {q.id: q.gold for q in questions}
        label = args.split
    else:
        from rirag.data.questions import load_questions
        from rirag.retrieval.gold_index import bm25_candidates

        qset = load_questions(args.questions, obliqa, bm25_candidates)
        questions, items, label = qset.questions, qset.items, Path(args.questions).name
        mapping = qset.report()
        sys.stdout.write(f"gold passages of {args.questions}: {mapping['gold_mapped']} of {mapping['gold_items']} "
                         f"mapped to the corpus ({mapping['by']})\n")
        if not mapping["gold_mapped"]:  # not a split mismatch: the file's gold is of another corpus
            raise UsageError(f"--questions {args.questions}: none of its {mapping['gold_items']} gold passages maps "
                             f"to the corpus of --data ({mapping['by']}): questions of another corpus?")
    qrels = qrels_of(questions)
    checks.run_matches(run, obliqa.corpus, qrels, args.run, label)
    result = evaluate_run(qrels, run, k=args.k, per_query=bool(args.per_query))
    # pair-aware recall over the questions that need two passages (scored on every gold item, mapped or not)
    pairs = pair_metrics({q: its for q, its in items.items() if q in qrels}, run, k=args.k)
    names = metric_names(args.k)
    row = {"run": Path(args.run).name, "split": label, "questions": result["n_questions"],
           **{n: result[n] for n in names}}
    if pairs["pair_questions"]:
        row |= {"pairs": pairs["pair_questions"], **{n: pairs[n] for n in pair_metric_names(args.k)}}
    sys.stdout.write(format_table([row], list(row)) + "\n")
    if args.json:
        extra = {"run": str(args.run), "split": label, **pairs}
        if mapping is not None:
            extra |= {"questions": str(args.questions), "gold_mapping": mapping}
        atomic_write_json(args.json, {k: v for k, v in result.items() if k != "per_query"} | extra)
    if args.per_query:
        atomic_write_json(args.per_query, result["per_query"])
    return EXIT_OK


# -- rirag evaluate answers ---------------------------------------------------------------------------------------


#: The models each model-based metric of ``rirag evaluate answers`` needs (its ``args`` names).
REPASS_NEEDS = ("obligation_model", "nli_model", "coverage_model")
ATTRIBUTION_NEEDS = ("nli_model",)


def _skipped(metric: str, needs: tuple[str, ...], missing: dict[str, str], args: Any) -> str | None:
    """One line saying that ``metric`` is skipped, naming each missing model it needs and how to get it; ``None``
    when none is missing."""
    lacking = [o for o in needs if o in missing]
    if not lacking:
        return None
    official = any(getattr(args, o) in (OFFICIAL_NLI_MODEL, OFFICIAL_COVERAGE_MODEL) for o in lacking)
    return (f"skipped {metric}: {'; '.join(dict.fromkeys(missing[o] for o in lacking))}"
            + (LOCAL_JUDGE_HINT if official else ""))


#: How to score offline when the official Hub models are not cached.
LOCAL_JUDGE_HINT = (f"; offline, use the local judge: --nli-model {LOCAL_NLI_JUDGE} --coverage-model {LOCAL_NLI_JUDGE} "
                    f"after `make models ONLY=nli-judge` (or `{TRAIN_COMMANDS[LOCAL_NLI_JUDGE]}`)")


def run_answers(args: Any) -> dict[str, Any] | int:
    """Entry point of ``rirag evaluate answers``: score, write the CSV, print the averages table.

    The model-free answer metrics (:func:`~rirag.scoring.answers.answer_quality_of`: gold-citation precision and
    recall, length, shared answers, flags) are always computed, printed and written (``a.quality.json`` beside
    ``a.repass.csv``, named without it: :func:`~rirag.scoring.answers.metrics_path`). Each model-based metric
    (RePASs; with ``--attribution``, NLI citation support) whose model is missing is skipped with one line naming the
    model and how to get it, and the command exits 0; with ``--require-all`` a missing model is an error (one line,
    exit 2) before anything is written.
    """
    # lazy: the scorers import numpy at their top; `rirag --help` loads no numpy (tests/test_light_imports.py)
    from rirag.data.answers import read_answers
    from rirag.retrieval.gold_index import bm25_candidates
    from rirag.scoring.answer_quality import format_quality
    from rirag.scoring.answers import (
        answer_quality_of,
        failures_path,
        format_summary,
        input_warnings,
        is_official,
        metrics_path,
        score_answers_file,
    )
    from rirag.scoring.repass import RePASsConfig, RePASsScorer

    out = args.out or os.path.splitext(args.answers)[0] + ".repass.csv"
    require_all = getattr(args, "require_all", False)
    # {option: why its model cannot load}, found by the command's checks before any work (checks.answers_args)
    missing = getattr(args, "missing_models", None) or {}
    scorer = RePASsScorer(RePASsConfig(nli_model=args.nli_model, coverage_model=args.coverage_model,
                                       obligation_model=args.obligation_model, batch_size=args.batch_size,
                                       device=args.device, mode=args.mode,
                                       workers=getattr(args, "workers", 1)))
    records = read_answers(args.answers)  # bad input is reported before models load
    quality = answer_quality_of(records, getattr(args, "data", None), getattr(args, "questions", None),
                                bm25_candidates)
    for line in input_warnings(quality["input_checks"], str(args.answers)):  # model or not
        logger.warning("%s", line)
    atomic_write_json(metrics_path(out, "quality"), quality)
    sys.stdout.write(format_quality(quality) + f"\nper-answer quality: {metrics_path(out, 'quality')}\n")
    result: dict[str, Any] = {"skipped": {}}
    skip = _skipped("RePASs", REPASS_NEEDS, missing, args)
    if skip is None:
        try:
            scorer.load_models()
        except MissingModelError as err:
            if require_all:
                logger.error("%s", err)
                return EXIT_USAGE
            skip = f"skipped RePASs: {checks.one_line(err)}"
    max_chars = getattr(args, "max_answer_chars", MAX_ANSWER_CHARS)
    if skip is None:
        result = score_answers_file(args.answers, out, scorer, chunk_size=args.chunk_size,
                                    strip_citation_markers=not getattr(args, "keep_citation_markers", False),
                                    max_answer_chars=max_chars) | {"skipped": {}}
        sys.stdout.write(format_summary(result, is_official(args)) + f"\nper-question scores: {out}\n"
                         + (f"not scored: {failures_path(out)}\n" if result["failed"] else ""))
    else:
        result["skipped"]["repass"] = skip
        sys.stdout.write(skip + "\n")
    if getattr(args, "attribution", False) and _attribution_part(args, out, max_chars, missing, result) is not None:
        return EXIT_USAGE
    result["quality"] = {k: v for k, v in quality.items() if k != "per_question"}
    return result


def _attribution_part(args: Any, out: str, max_chars: int | None, missing: dict[str, str],
                      result: dict[str, Any]) -> int | None:
    """``--attribution`` into ``result`` (its scores, or why it was skipped); :data:`EXIT_USAGE` when a model is
    missing under ``--require-all``."""
    skip = _skipped("NLI citation support (--attribution)", ATTRIBUTION_NEEDS, missing, args)
    if skip is None:
        try:
            result["attribution"] = _attribution(args, out, max_chars)
        except MissingModelError as err:
            if getattr(args, "require_all", False):
                logger.error("%s", err)
                return EXIT_USAGE
            skip = f"skipped NLI citation support (--attribution): {checks.one_line(err)}"
    if skip is not None:
        result["skipped"]["attribution"] = skip
        sys.stdout.write(skip + "\n")
    return None


def _attribution(args: Any, out: str, max_chars: int | None) -> dict[str, Any]:
    """``--attribution``: citation precision/recall and the rest, written to ``a.attribution.json`` and printed;
    returns them without the per-question part."""
    # lazy, as in run_answers: the scorers import numpy at their top
    from rirag.scoring.answers import metrics_path, within_length
    from rirag.scoring.attribution import AttributionConfig, AttributionScorer, format_attribution
    from rirag.scoring.attribution import score_answers_file as attribution_of_file

    config = AttributionConfig(nli_model=args.nli_model, batch_size=args.batch_size, device=args.device,
                               workers=getattr(args, "workers", 1))
    with within_length(args.answers, max_chars) as answers_path:  # the over-long ones would take days
        attribution = attribution_of_file(answers_path, AttributionScorer(config))
    atomic_write_json(metrics_path(out, "attribution"), attribution)
    sys.stdout.write(format_attribution(attribution)
                     + f"\nper-question attribution: {metrics_path(out, 'attribution')}\n")
    return {k: v for k, v in attribution.items() if k != "per_question"}


def add_answers_parser(subparsers: Any) -> Any:
    """Register ``answers`` (``rirag evaluate answers``) on an argparse subparsers object."""
    limits = check.LIMITS
    p = subparsers.add_parser("answers", help="RePASs for a shared-task answer JSON → per-question CSV (resumable)")
    p.add_argument("--answers", required=True, help="answer JSON (QuestionID, RetrievedPassages, Answer, ...)")
    p.add_argument("--out", default=None, help="CSV to write/resume (default: <answers>.repass.csv)")
    add_data_option(p, help="ObliQA folder whose gold passages give the gold-citation metrics (default: "
                            "$RIRAG_DATA_DIR; without either, those metrics are n/a)")
    p.add_argument("--questions", default=None, metavar="FILE",
                   help="questions whose gold passages (by id or by text) give the gold-citation and passage-set "
                        "metrics, mapped to the corpus of --data (e.g. ukfin_xref over `rirag data ingest` output); "
                        "default: the gold of the corpus's own splits")
    p.add_argument("--mode", choices=MODES, default="reference")
    p.add_argument("--nli-model", default=OFFICIAL_NLI_MODEL)
    p.add_argument("--coverage-model", default=OFFICIAL_COVERAGE_MODEL)
    p.add_argument("--obligation-model", default=LOCAL_OBLIGATION_CLASSIFIER,
                   help="obligation classifier (default: the local one, as the reference loads a local folder; the "
                        f"published one is {HUB_OBLIGATION_MODEL})")
    p.add_argument("--batch-size", default=DEFAULT_BATCH_SIZE, type=auto_or(AUTO_BATCH_SIZE, "encoder_batch_size"),
                   help=f"inputs per forward pass (1 to {limits['encoder_batch_size'][0]}), or 'auto' (a token "
                        "budget per pass; the default)")
    p.add_argument("--chunk-size", type=bounded_int("chunk_size"), default=32,
                   help=f"answers scored (and flushed) together (1 to {limits['chunk_size'][0]})")
    p.add_argument("--max-answer-chars", type=bounded_int("max_answer_chars"), default=MAX_ANSWER_CHARS,
                   help=f"longer answers are not scored but listed in <csv>.failures.json (default "
                        f"{MAX_ANSWER_CHARS}, at most {limits['max_answer_chars'][0]})")
    p.add_argument("--workers", type=auto_or(AUTO_WORKERS, "workers"), default=AUTO_WORKERS,
                   help="CPU processes for the forward passes (1 torch thread each; at most the CPU cores); 'auto' "
                        "(the default): one per core; the scores do not depend on the count")
    p.add_argument("--device", default=None)
    add_max_input_option(p)
    p.add_argument("--keep-citation-markers", action="store_true",
                   help="score answers with their [n] citation markers (default: removed before RePASs, since they "
                        "are references, not claims; answers without markers are unaffected)")
    p.add_argument("--attribution", action="store_true",
                   help="also citation precision/recall, uncited share, invalid citations and copy ratio "
                        "(judged by --nli-model), written to <answers>.attribution.json beside the CSV")
    p.add_argument("--require-all", action="store_true",
                   help="a missing model is an error (exit 2, nothing written); without it, the metrics that need "
                        "no model (gold citations, length, shared answers, flags) are printed and each model-based "
                        "one whose model is missing is skipped with one line saying how to get it")
    p.set_defaults(func=run_answers)
    return p


# -- parsers ------------------------------------------------------------------------------------------------------


def add_parsers(sub: Any) -> None:
    """Register ``evaluate retrieval`` and (when the scoring modules are installed) ``evaluate answers``."""
    ev = sub.add_parser("evaluate", help="evaluate runs or answers").add_subparsers(dest="eval_command", required=True,
                                                                                    parser_class=Parser)
    e = ev.add_parser("retrieval", help="Recall/MAP/MRR/nDCG@k of a TREC run, and Both/one-only/Neither@k over "
                                        "questions with two gold passages")
    add_data_option(e)
    add_split_option(e, required=False, extra="; or --questions")
    e.add_argument("--questions", default=None, metavar="FILE",
                   help="questions with gold passages given by passage id or by text ({QuestionID, Question, "
                        "Gold: [{text, page?} | ID]}), mapped to the corpus of --data, instead of --split")
    e.add_argument("--run", required=True, help="TREC run file")
    add_k_option(e, EVAL_K, "metric cut-off (1 to the corpus size)")
    e.add_argument("--json", default=None, help="write the metrics here")
    e.add_argument("--per-query", default=None, metavar="FILE", help="write per-question metrics here (JSON)")
    add_max_input_option(e)
    e.set_defaults(func=cmd_evaluate_retrieval)
    p = add_answers_parser(ev)
    p.set_defaults(func=checked(checks.answers_args, p.get_default("func")))
