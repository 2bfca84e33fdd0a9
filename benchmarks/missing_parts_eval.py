"""Precision and recall of the focused answerer's missing-part sentences on the labelled set
(``benchmarks/missing_parts/labels.jsonl``: leakage-free validation questions outside the answer benchmark's 150,
each with its given passages and the parts they leave unanswered).

Each labelled question is answered by the default (focused) answerer from its given passages (selected from the
context run as the answer path does; they must equal the labels' ``passage_ids``). Each "The retrieved provisions
do not state <part>." sentence names a kind (:data:`rirag.text.missing_parts.PARTS`); it is *right* when the question
has an
unanswered labelled part of that kind not yet matched (one sentence matches one part). Precision: right sentences
over sentences; recall: matched unanswered parts over unanswered parts. Reported over all labelled questions, over
the draw-rank blocks (the cues were written reading ranks 100-249; ranks 0-99 are the held-out report), without the
borderline parts, and by kind; the parts found missing but not said (``Part.said`` off: the method) are scored
the same, as if said, per block (``not_said_*``).

The whole-answer flag (:data:`rirag.text.units.NOT_ADDRESSED`, below the answerability threshold) is scored on the
same labels: a question is *not addressed* by its passages when none of its labelled parts is stated. Reported: the
flag's precision and recall per block, and the same at other answerability thresholds (``flag_thresholds``), so the
threshold's trade-off is on record (the threshold itself is chosen by ``train/focused_scorer.py``, not here).

Usage:

    python benchmarks/missing_parts_eval.py --labels benchmarks/missing_parts/labels.jsonl
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass
class MissingPartsEvalArguments:
    labels: str = field(default="benchmarks/missing_parts/labels.jsonl", metadata={"help": "The labelled set."})
    run: str = field(default="benchmarks/runs/validation.best.trec.gz", metadata={
        "help": "The context run (the passages' retrieval scores)."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder (default: $RIRAG_DATA_DIR)."})
    obligation_model: str | None = field(default=None, metadata={
        "help": "Obligation classifier of the answerer (default: the answerer's)."})
    tune_ranks: str = field(default="100-249", metadata={"help": "Draw ranks the cues were written on."})
    flag_thresholds: str = field(default="0.9,0.95,0.97,0.98", metadata={
        "help": "Answerability thresholds the flag is also scored at (besides the scorer's own)."})
    results: str = field(default="benchmarks/results/missing_parts.json", metadata={"help": "Results JSON."})


def score(records: list[dict], said: dict[str, list[str]], skip_borderline: bool = False) -> dict:
    """Precision and recall of the sentences ``said`` (question id -> kinds) against the records' unanswered parts
    (borderline parts left out of both sides when ``skip_borderline``: a sentence matching one is not counted)."""
    right = wrong = unanswered = 0
    by_kind: Counter = Counter()
    for r in records:
        open_parts = [p["kind"] for p in r["parts"] if not p["stated"] and not (skip_borderline and p["borderline"])]
        ignored = [p["kind"] for p in r["parts"] if skip_borderline and p["borderline"]]
        unanswered += len(open_parts)
        for kind in said.get(r["QuestionID"], []):
            if kind in open_parts:
                open_parts.remove(kind)
                right += 1
                by_kind[kind, "right"] += 1
            elif kind in ignored:
                ignored.remove(kind)
            else:
                wrong += 1
                by_kind[kind, "wrong"] += 1
    stated = right + wrong
    return {"questions": len(records), "sentences": stated, "right": right, "unanswered_parts": unanswered,
            "precision": right / stated if stated else None, "recall": right / unanswered if unanswered else None,
            "by_kind": {f"{k}:{v}": n for (k, v), n in sorted(by_kind.items())}}


def not_addressed(record: dict) -> bool:
    """Whether a labelled question's given passages state none of its parts."""
    return not any(p["stated"] for p in record["parts"])


def score_flag(records: list[dict], answerability: dict[str, float], threshold: float) -> dict:
    """Precision and recall of flagging (answerability below ``threshold``) the questions whose passages state none
    of their labelled parts."""
    flagged = [r for r in records if answerability[r["QuestionID"]] < threshold]
    right = sum(not_addressed(r) for r in flagged)
    positives = sum(not_addressed(r) for r in records)
    return {"threshold": threshold, "questions": len(records), "not_addressed": positives, "flagged": len(flagged),
            "right": right, "precision": right / len(flagged) if flagged else None,
            "recall": right / positives if positives else None}


def answer_labelled(records: list[dict], args: MissingPartsEvalArguments
                    ) -> tuple[dict[str, list[str]], dict[str, list[str]], dict, float]:
    """question id -> the kinds the focused answerer's missing-part sentences name (its passages selected from the
    run as the answer path selects them; they must be the labels' given passages); question id -> the kinds it finds
    missing but does not say (:attr:`rirag.text.missing_parts.Part.said` off), so their sentences stay measured;
    question id -> the answer's answerability; the answerer's answerability threshold."""
    from rirag.constants import EVAL_K
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.generation.focused import FocusedAnswerer
    from rirag.generation.pipeline import select_passages
    from rirag.text.missing_parts import missing_parts, stated_kinds

    obliqa = load_obliqa(args.data)
    run = read_trec(args.run)
    answerer = FocusedAnswerer(classifier=args.obligation_model)
    given = [select_passages(run.get(r["QuestionID"], {}), obliqa.corpus, EVAL_K, True, where=r["QuestionID"])
             for r in records]
    for r, passages in zip(records, given):
        if [p.id for p in passages] != r["passage_ids"]:
            raise ValueError(f"{args.labels}: question {r['QuestionID']} (draw rank {r['draw_rank']}): its passages "
                             f"in {args.run} differ from the labelled passage_ids")
    answers = answerer.answer_many([r["Question"] for r in records], [[p.text for p in ps] for ps in given],
                                   [[p.score for p in ps] for ps in given])
    unsaid = {r["QuestionID"]: [p.kind for p in missing_parts(r["Question"], [*(k.unit.text for k in a.kept),
                                                                                *(p.text for p in ps)], unsaid=True)
                                if not p.said] if a.addressed else []
              for r, a, ps in zip(records, answers, given)}
    return ({r["QuestionID"]: stated_kinds(a.text) for r, a in zip(records, answers)}, unsaid,
            {r["QuestionID"]: a.answerability for r, a in zip(records, answers)},
            answerer._option("answerable_threshold"))


def main(args: MissingPartsEvalArguments) -> dict:
    from rirag.io import atomic_write_json

    with open(args.labels, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    said, unsaid, answerability, threshold = answer_labelled(records, args)
    low, high = (int(v) for v in args.tune_ranks.split("-"))
    tune = [r for r in records if low <= r["draw_rank"] <= high]
    held = [r for r in records if not low <= r["draw_rank"] <= high]
    with open(args.labels, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    results = {"benchmark": "benchmarks/missing_parts_eval.py", "labels": args.labels, "labels_sha256": digest,
               "run": args.run,
               "cues_written_on_ranks": args.tune_ranks,
               "all": score(records, said), "held_out": score(held, said), "tuning_block": score(tune, said),
               "held_out_without_borderline": score(held, said, skip_borderline=True),
               "all_without_borderline": score(records, said, skip_borderline=True),
               "answers_with_a_sentence": sum(bool(v) for v in said.values()),
               # the parts found missing but not said, scored as if said: the evidence for not saying them
               "not_said_held_out": score(held, unsaid), "not_said_tuning_block": score(tune, unsaid),
               "flag_held_out": score_flag(held, answerability, threshold),
               "flag_tuning_block": score_flag(tune, answerability, threshold),
               "flag_held_out_at": [score_flag(held, answerability, float(t)) for t in args.flag_thresholds.split(",")]}
    atomic_write_json(args.results, results)
    for key in ("all", "held_out", "tuning_block", "held_out_without_borderline", "all_without_borderline"):
        r = results[key]
        logger.info("%-28s questions %3d  sentences %3d  right %3d  unanswered %3d  precision %s  recall %s", key,
                    r["questions"], r["sentences"], r["right"], r["unanswered_parts"],
                    f"{r['precision']:.3f}" if r["precision"] is not None else "n/a",
                    f"{r['recall']:.3f}" if r["recall"] is not None else "n/a")
    for key in ("flag_held_out", "flag_tuning_block"):
        r = results[key]
        logger.info("%-28s threshold %.3f  not addressed %3d  flagged %3d  right %3d  precision %s  recall %s", key,
                    r["threshold"], r["not_addressed"], r["flagged"], r["right"],
                    f"{r['precision']:.3f}" if r["precision"] is not None else "n/a",
                    f"{r['recall']:.3f}" if r["recall"] is not None else "n/a")
    return results


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (arguments,) = HfArgumentParser(MissingPartsEvalArguments).parse_args_into_dataclasses()
    main(arguments)
