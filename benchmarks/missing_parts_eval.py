"""Precision and recall of the focused answerer's missing-part sentences on the labelled set
(``benchmarks/missing_parts/labels.jsonl``: leakage-free validation questions outside the answer benchmark's 150,
each with its given passages and the parts they leave unanswered).

Each labelled question is answered by the focused answerer with its missing-part sentences on (``--say-missing``;
off by default) from its given passages (selected from the context run as the answer path does; they must equal the
labels' ``passage_ids``). Each "The retrieved provisions do not state <part>." sentence names a kind
(:data:`rirag.text.missing_parts.PARTS`); it is *right* when the question has an unanswered labelled part of that kind
not yet matched (one sentence matches one part). Precision: right sentences over sentences; recall: matched
unanswered parts over unanswered parts. Reported over all labelled questions, over the draw-rank blocks (the cues were
written reading ranks 100-249; ranks 0-99 are the held-out report), without the borderline parts, and by kind.

The model-based decision (``learned``) is scored beside the cues: a classifier of the kinds a question asks
(one logistic regression a kind, on the question's TF-IDF or on the answerer's sentence-encoder embedding), trained
on the tuning block's labelled parts only; a kind it predicts is said missing when the answer is addressed and, with
``evidence: cues``, no kept unit or given passage has the kind's evidence cue. Its settings (features, C, threshold,
evidence) are chosen by five-fold cross-validation within the tuning block (precision first, at least 10 sentences,
then recall); the chosen one, fitted on the whole tuning block, is scored once on the held-out block. The NLI judge
(``artifacts/nli_judge``, one hypothesis a kind) is not part of it: it was not built on the 2-core machine these
numbers come from (``make models`` stage ``nli-judge``, about an hour). In its place (``encoder_hypotheses``): the
cues' asked parts, a part stated when a unit of the given passages is within a cosine threshold of the kind's
hypothesis (:data:`HYPOTHESES`) by the answerer's sentence encoder; the threshold chosen on the tuning block.

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
    tune_ranks: str = field(default="100-249", metadata={
        "help": "Draw ranks the cues were written on and the learned decision is trained on."})
    learned_grid: str = field(default="tfidf,encoder;1,10;0.5,0.7;none,cues", metadata={
        "help": "The learned decision's settings, chosen by cross-validation on the tuning block: features; C; "
                "threshold; evidence (each a comma list, ';' between them)."})
    flag_thresholds: str = field(default="0.9,0.95,0.97,0.98", metadata={
        "help": "Answerability thresholds the flag is also scored at (besides the scorer's own)."})
    hypothesis_thresholds: str = field(default="0.2,0.3,0.4,0.5,0.6", metadata={
        "help": "Cosines at which a unit states a kind's hypothesis (encoder_hypotheses), chosen on the tuning block."})
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


@dataclass
class Answered:
    """What the focused answerer made of the labelled questions, by question id: the kinds its missing-part sentences
    name, its answerability, whether it is addressed, the texts a part's evidence is read in (kept units and given
    passages) and the question's embedding; and the answerer's answerability threshold."""

    said: dict[str, list[str]]
    answerability: dict[str, float]
    addressed: dict[str, bool]
    evidence_texts: dict[str, list[str]]
    embedding: dict[str, object]
    threshold: float
    #: question id -> the embeddings of its given passages' units; the hypotheses' embeddings, by kind
    unit_embeddings: dict[str, object] = field(default_factory=dict)
    hypothesis_embeddings: dict[str, object] = field(default_factory=dict)


def answer_labelled(records: list[dict], args: MissingPartsEvalArguments) -> Answered:
    """The focused answerer's answers to the labelled questions, missing-part sentences on (its passages selected
    from the run as the answer path selects them; they must be the labels' given passages)."""
    from rirag.constants import EVAL_K
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.generation.focused import FocusedAnswerer
    from rirag.generation.pipeline import select_passages
    from rirag.text.missing_parts import stated_kinds

    obliqa = load_obliqa(args.data)
    run = read_trec(args.run)
    answerer = FocusedAnswerer(classifier=args.obligation_model, say_missing=True)
    given = [select_passages(run.get(r["QuestionID"], {}), obliqa.corpus, EVAL_K, True, where=r["QuestionID"])
             for r in records]
    for r, passages in zip(records, given):
        if [p.id for p in passages] != r["passage_ids"]:
            raise ValueError(f"{args.labels}: question {r['QuestionID']} (draw rank {r['draw_rank']}): its passages "
                             f"in {args.run} differ from the labelled passage_ids")
    answers = answerer.answer_many([r["Question"] for r in records], [[p.text for p in ps] for ps in given],
                                   [[p.score for p in ps] for ps in given])
    ids = [r["QuestionID"] for r in records]
    embeddings = answerer.encode([r["Question"] for r in records])
    units = {q: answerer.encode([u.text for u in answerer.units([p.text for p in ps])]) for q, ps in zip(ids, given)}
    hypotheses = dict(zip(HYPOTHESES, answerer.encode(list(HYPOTHESES.values()))))
    return Answered({q: stated_kinds(a.text) for q, a in zip(ids, answers)},
                    {q: a.answerability for q, a in zip(ids, answers)},
                    {q: a.addressed for q, a in zip(ids, answers)},
                    {q: [*(k.unit.text for k in a.kept), *(p.text for p in ps)]
                     for q, a, ps in zip(ids, answers, given)},
                    dict(zip(ids, embeddings)), answerer._option("answerable_threshold"), units, hypotheses)


#: One hypothesis a kind: what a provision stating that part says, in general words (written once, not tuned).
HYPOTHESES = {
    "examples": "For example, such cases include the following examples.",
    "consequences": "Failure to comply will result in a penalty, sanction or withdrawal of the licence.",
    "circumstances": "This applies only in the following circumstances or if the following conditions are met.",
    "contents": "The document must include the following information and details.",
    "when": "This must be done within a number of days, before an event, or at a stated frequency.",
    "threshold": "The amount, limit or percentage is set at a stated figure.",
    "who": "The person responsible for this is the named officer or body.",
}


def hypothesis_said(records: list[dict], answered: Answered, threshold: float) -> dict[str, list[str]]:
    """question id -> the kinds the question's cues ask and no unit of its given passages states, a unit stating a
    kind when its sentence-encoder cosine with the kind's hypothesis (:data:`HYPOTHESES`) reaches ``threshold``."""
    from rirag.text.missing_parts import asked_parts

    said = {}
    for r in records:
        q, units = r["QuestionID"], answered.unit_embeddings[r["QuestionID"]]
        said[q] = [p.kind for p in asked_parts(r["Question"]) if answered.addressed[q]
                   and not (len(units) and float((units @ answered.hypothesis_embeddings[p.kind]).max()) >= threshold)]
    return said


def hypothesis_decision(tune: list[dict], held: list[dict], answered: Answered, thresholds: str) -> dict:
    """The encoder's stand-in for the NLI judge: the cues' asked parts, stated by a unit close to the kind's
    hypothesis; its threshold chosen on the tuning block (precision first, at least 10 sentences, then recall) and
    scored once on the held-out block."""
    grid = [{"threshold": float(t), **{k: v for k, v in score(tune, hypothesis_said(tune, answered, float(t))).items()
                                       if k != "by_kind"}} for t in thresholds.split(",")]
    usable = [g for g in grid if g["precision"] is not None and g["sentences"] >= 10] or grid
    best = max(usable, key=lambda g: (round(g["precision"] or 0.0, 3), g["recall"] or 0.0))
    return {"tuning_block": grid, "chosen": best["threshold"],
            "held_out": score(held, hypothesis_said(held, answered, best["threshold"]))}


def kind_probabilities(train: list[dict], test: list[dict], answered: Answered, features: str, c: float
                       ) -> dict[str, list[float]]:
    """kind -> the probability that each ``test`` question asks a part of that kind, by one logistic regression a
    kind (balanced classes) fitted on ``train``'s labelled parts, over the question's TF-IDF (word 1-2 grams) or its
    sentence-encoder embedding (``features``: tfidf | encoder). Kinds the answer can say only
    (:data:`rirag.text.missing_parts.PARTS`); a kind with fewer than 2 questions in ``train`` is never predicted."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from rirag.text.missing_parts import PARTS

    if features == "tfidf":
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit([r["Question"] for r in train])
        x_train, x_test = (vectorizer.transform([r["Question"] for r in rs]) for rs in (train, test))
    elif features == "encoder":
        x_train, x_test = (np.stack([answered.embedding[r["QuestionID"]] for r in rs]) for rs in (train, test))
    else:
        raise ValueError(f"learned_grid: features must be tfidf or encoder, got {features!r}")
    out = {}
    for part in PARTS:
        y = np.array([any(p["kind"] == part.kind for p in r["parts"]) for r in train])
        if y.sum() >= 2:
            model = LogisticRegression(C=c, class_weight="balanced", max_iter=3000).fit(x_train, y)
            out[part.kind] = model.predict_proba(x_test)[:, 1].tolist()
    return out


def learned_said(train: list[dict], test: list[dict], answered: Answered, setting: dict) -> dict[str, list[str]]:
    """question id -> the kinds the learned decision says missing for ``test`` (trained on ``train``)."""
    from rirag.text.missing_parts import PARTS, is_stated

    by_kind = {p.kind: p for p in PARTS}
    probabilities = kind_probabilities(train, test, answered, setting["features"], setting["C"])
    said = {}
    for i, r in enumerate(test):
        q = r["QuestionID"]
        said[q] = [k for k, p in probabilities.items() if answered.addressed[q] and p[i] >= setting["threshold"]
                   and not (setting["evidence"] == "cues" and is_stated(by_kind[k], answered.evidence_texts[q]))]
    return said


def learned_decision(tune: list[dict], held: list[dict], answered: Answered, grid: str) -> dict:
    """The learned decision's settings scored by five-fold cross-validation within the tuning block, the chosen one
    (precision first, at least 10 sentences, then recall) and its score on the held-out block, trained on the whole
    tuning block."""
    import itertools

    from sklearn.model_selection import KFold

    axes = [v.split(",") for v in grid.split(";")]
    settings = [{"features": f, "C": float(c), "threshold": float(t), "evidence": e}
                for f, c, t, e in itertools.product(*axes)]
    folds = list(KFold(5, shuffle=True, random_state=0).split(tune))
    cv = []
    for setting in settings:
        said = {}
        for train, test in folds:
            said.update(learned_said([tune[i] for i in train], [tune[i] for i in test], answered, setting))
        cv.append({**setting, **{k: v for k, v in score(tune, said).items() if k != "by_kind"}})
    usable = [c for c in cv if c["precision"] is not None and c["sentences"] >= 10] or cv
    best = max(usable, key=lambda c: (round(c["precision"] or 0.0, 3), c["recall"] or 0.0))
    chosen = {k: best[k] for k in ("features", "C", "threshold", "evidence")}
    held_out = score(held, learned_said(tune, held, answered, chosen))
    return {"cv_tuning_block": cv, "chosen": chosen, "held_out": held_out}


def main(args: MissingPartsEvalArguments) -> dict:
    from rirag.io import atomic_write_json

    with open(args.labels, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    answered = answer_labelled(records, args)
    said, answerability, threshold = answered.said, answered.answerability, answered.threshold
    low, high = (int(v) for v in args.tune_ranks.split("-"))
    tune = [r for r in records if low <= r["draw_rank"] <= high]
    held = [r for r in records if not low <= r["draw_rank"] <= high]
    with open(args.labels, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    results = {"benchmark": "benchmarks/missing_parts_eval.py", "labels": args.labels, "labels_sha256": digest,
               "run": args.run,
               "cues_written_on_ranks": args.tune_ranks, "say_missing_default": False,
               "all": score(records, said), "held_out": score(held, said), "tuning_block": score(tune, said),
               "held_out_without_borderline": score(held, said, skip_borderline=True),
               "all_without_borderline": score(records, said, skip_borderline=True),
               "answers_with_a_sentence": sum(bool(v) for v in said.values()),
               # the model-based decision, trained on the tuning block only, beside the cues
               "learned": learned_decision(tune, held, answered, args.learned_grid),
               # the sentence encoder, one hypothesis a kind, in the NLI judge's place (not built here)
               "encoder_hypotheses": hypothesis_decision(tune, held, answered, args.hypothesis_thresholds),
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
    learned = results["learned"]
    logger.info("learned (%s)  held out: sentences %d  right %d  precision %s  recall %.3f", learned["chosen"],
                learned["held_out"]["sentences"], learned["held_out"]["right"],
                f"{learned['held_out']['precision']:.3f}" if learned["held_out"]["precision"] is not None else "n/a",
                learned["held_out"]["recall"])
    hyp = results["encoder_hypotheses"]
    logger.info("encoder hypotheses (cosine %.2f)  held out: sentences %d  right %d  recall %.3f", hyp["chosen"],
                hyp["held_out"]["sentences"], hyp["held_out"]["right"], hyp["held_out"]["recall"])
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
