"""Which of the top 10 should the answerer see? The context filter (``--context-filter``,
:data:`rirag.retrieval.filtering.CONTEXT_FILTERS`), chosen on validation data only.

Three validation sets, each with its run (depth 100):

* ``obliqa-validation``: the leakage-free validation questions over ``benchmarks/runs/validation.best.trec.gz``
  (the generation benchmark's run); answers on its seeded 150-question sample (``benchmarks/generation.py``);
* ``obliqa-mp``: ObliQA-MP validation (2-6 gold passages; its test split is never used), ``--mp-run`` or BM25;
* ``pra-dev``: the 80 PRA development questions (a rule and the rule it cites) over ``rirag data ingest`` output,
  ``--pra-run`` or BM25.

For every filter of a grid (the paper's rule, ``min_score`` / ``max_drop``, over a normalisation depth of 10 or 100,
and the top 10 as ranked), over each set: the mean context size, the share of contexts holding every gold passage
(the ceiling of any answer), the context recall, and whether the context is the same from the run's top 10 as from
its top 100 (``depth_independent``). Then the focused answerer over the named candidates' contexts (``--answer-sets``;
default ObliQA validation, whose precision the rule reads): gold-citation precision, recall, cite-all share,
passages cited, words.

The rule (stated before measuring): among depth-independent filters, the default is the one with the highest mean
context-all share over the three sets whose focused answers keep ObliQA-validation gold-citation precision within
0.02 of the paper's filter; ties go to the smaller context.

Usage:

    rirag data ingest ../shared/data/pra_rulebook --out out/pra
    python benchmarks/context_filter.py --pra out/pra --out benchmarks/results/context_filter.json \\
        [--pra-run out/runs/pra_default.trec --mp-run out/runs/mp_default.trec]
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K, RUN_DEPTH, SEED
from rirag.data.splits import ANSWER_SAMPLE_SIZE
from rirag.retrieval.filtering import CONTEXT_FILTERS, ContextFilter

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
#: (min_score, max_drop) of the grid, at normalisation depths 10 and 100.
GRID = [(m, d) for m in (0.0, 0.1, 0.3, 0.5, 0.7) for d in (0.2, 0.3, 0.5, 1.0)]
DEPTHS = (EVAL_K, RUN_DEPTH)
PRECISION_SLACK = 0.02


@dataclass
class ContextFilterBenchArguments:
    pra: str = field(default="out/pra", metadata={"help": "The PRA corpus rirag data ingest wrote."})
    pra_questions: str = field(default="../shared/data/ukfin_xref/ukfin_dev_questions.json",
                               metadata={"help": "The 80 PRA development questions."})
    mp: str = field(default="../shared/data/obliqa_mp", metadata={"help": "The ObliQA-MP validation folder."})
    data: str = field(default="../shared/data/obliqa", metadata={"help": "The ObliQA folder."})
    run: str = field(default="benchmarks/runs/validation.best.trec.gz",
                     metadata={"help": "The ObliQA validation run (the generation benchmark's)."})
    pra_run: str | None = field(default=None, metadata={"help": "A depth-100 run of the PRA questions (else BM25)."})
    mp_run: str | None = field(default=None, metadata={"help": "A depth-100 run of ObliQA-MP (else BM25)."})
    answer: str = field(default="rirag,top-k,d10-m0.1-drop1.0,d10-m0.0-drop0.5",
                        metadata={"help": "Filters whose contexts the focused answerer answers from."})
    answer_sets: str = field(default="obliqa-validation", metadata={
        "help": "Sets whose questions are answered (the rule reads obliqa-validation's; benchmarks/passage_set.py "
                "answers all three over the top-k and rirag contexts)."})
    out: str = field(default="benchmarks/results/context_filter.json", metadata={"help": "Results JSON."})


def grid() -> dict[str, ContextFilter]:
    filters = dict(CONTEXT_FILTERS)
    for depth in DEPTHS:
        for m, d in GRID:
            name = f"d{depth}-m{m}-drop{d}"
            filters[name] = ContextFilter(name, m, d, depth)
    return filters


def bm25_run(corpus, questions) -> dict:
    from rirag.retrieval.bm25 import BM25Index

    texts = {pid: p.text for pid, p in corpus.items() if p.text.strip()}
    return BM25Index().index(list(texts), list(texts.values()), log=False).search(dict(questions), k=RUN_DEPTH)


def load_sets(args: ContextFilterBenchArguments) -> dict:
    """name -> (questions [(id, text)], gold {id: set}, run, corpus, answered question ids, retrieval label)."""
    from follow_references import mp_gold, ukfin_gold
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import seeded_sample, split_questions

    obliqa = load_obliqa(args.data)
    validation = split_questions(obliqa, "validation")
    run = read_trec(args.run)
    sample = {q.id for q in seeded_sample(validation, run, ANSWER_SAMPLE_SIZE, SEED)}
    sets = {"obliqa-validation": ([(q.id, q.text) for q in validation], {q.id: set(q.gold) for q in validation},
                                  run, obliqa.corpus, sample, args.run)}
    questions, gold = mp_gold(Path(args.mp))
    mp_run = read_trec(args.mp_run) if args.mp_run else bm25_run(obliqa.corpus, questions)
    sets["obliqa-mp"] = (questions, gold, mp_run, obliqa.corpus, {q for q, _ in questions}, args.mp_run or "bm25")
    pra = load_obliqa(args.pra)
    questions, gold = ukfin_gold(Path(args.pra), Path(args.pra_questions))
    pra_run = read_trec(args.pra_run) if args.pra_run else bm25_run(pra.corpus, questions)
    sets["pra-dev"] = (questions, gold, pra_run, pra.corpus, {q for q, _ in questions}, args.pra_run or "bm25")
    return sets


def context_row(f: ContextFilter, questions, gold, run) -> dict:
    from rirag.data.runs import ranked

    sizes, alls, recalls, same = [], [], [], []
    for qid, _ in questions:
        results = run.get(qid, {})
        ids = [pid for pid, _ in f.select(results, EVAL_K)]
        from_top10 = [pid for pid, _ in f.select(dict(ranked(results, EVAL_K)), EVAL_K)]
        g = gold[qid]
        sizes.append(len(ids))
        alls.append(g <= set(ids))
        recalls.append(len(g & set(ids)) / len(g))
        same.append(ids == from_top10)
    return {"context_passages": round(float(np.mean(sizes)), 3), "context_all_share": round(float(np.mean(alls)), 4),
            "context_recall": round(float(np.mean(recalls)), 4), "depth_independent": bool(all(same)),
            "same_from_top10_share": round(float(np.mean(same)), 4)}


def answer_row(f: ContextFilter, questions, gold, run, corpus, answered, generator) -> dict:
    from rirag.generation.pipeline import answer_items, select_passages
    from rirag.scoring.answer_quality import answer_quality

    chosen = [(qid, text) for qid, text in questions if qid in answered]
    items = [(qid, text, select_passages(run.get(qid, {}), corpus, EVAL_K, f, where=qid)) for qid, text in chosen]
    start = time.perf_counter()
    answers = answer_items(items, generator)
    seconds = time.perf_counter() - start
    q = answer_quality([a.text for a in answers], [[p.id for p in a.passages] for a in answers],
                       [sorted(gold[qid]) for qid, _ in chosen])
    keys = ("gold_citation_precision", "gold_citation_recall", "gold_citation_f1", "cite_all_share",
            "context_all_share", "cited_per_answer", "gold_per_question", "words_median", "words_p95",
            "words_per_cited_passage")
    return {"answers": len(answers), **{k: round(q[k], 4) if isinstance(q[k], float) else q[k] for k in keys},
            "seconds_per_answer": round(seconds / max(1, len(answers)), 3)}


def choose(rows: dict[str, dict]) -> str:
    """The rule of the module docstring over the answered filters."""
    paper = rows["rirag"]["answers"]["obliqa-validation"]["gold_citation_precision"]
    ok = [name for name, row in rows.items() if "answers" in row and row["depth_independent"]
          and row["answers"]["obliqa-validation"]["gold_citation_precision"] >= paper - PRECISION_SLACK]
    return max(ok, key=lambda n: (rows[n]["mean_context_all_share"], -rows[n]["mean_context_passages"]))


def main(args: ContextFilterBenchArguments) -> dict:

    from rirag.generation.focused import FocusedAnswerer
    from rirag.io import atomic_write_json, provenance

    sets = load_sets(args)
    filters = grid()
    rows: dict[str, dict] = {}
    for name, f in filters.items():
        per = {s: context_row(f, q, g, r) for s, (q, g, r, *_rest) in sets.items()}
        mean = {key: round(float(np.mean([v[key] for v in per.values()])), 4)
                for key in ("context_all_share", "context_passages")}
        rows[name] = {"min_score": f.min_score, "max_drop": f.max_drop if f.filters else None,
                      "depth": f.depth if f.filters else None, "contexts": per,
                      "depth_independent": all(v["depth_independent"] for v in per.values()),
                      "mean_context_all_share": mean["context_all_share"],
                      "mean_context_passages": mean["context_passages"]}
    from follow_references import Memo

    generator = FocusedAnswerer()
    memo = Memo(generator)  # the filters' contexts share their passages: each unit embedded and classified once
    generator._encode, generator._is_obligation = memo.encode, memo.is_obligation
    for name in [n.strip() for n in args.answer.split(",") if n.strip()]:
        f = filters[name]
        answer_sets = {x.strip() for x in args.answer_sets.split(",")}
        rows[name]["answers"] = {s: answer_row(f, q, g, r, c, a, generator) for s, (q, g, r, c, a, _) in sets.items()
                                 if s in answer_sets}
        logger.info("%s: %s", name, rows[name]["answers"])
    chosen = choose(rows)
    result = {"benchmark": "benchmarks/context_filter.py", **provenance(),
              "sets": {s: {"questions": len(q), "answered": len(a), "retrieval": label}
                       for s, (q, _g, _r, _c, a, label) in sets.items()},
              "rule": f"depth-independent; ObliQA-validation focused precision >= the paper filter's - "
                      f"{PRECISION_SLACK}; then the highest mean context-all share, the smaller context on ties",
              "chosen": chosen, "default": DEFAULT_CONTEXT_FILTER, "rows": rows}
    atomic_write_json(args.out, result)
    return result


if __name__ == "__main__":
    import sys

    from transformers import HfArgumentParser

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    (arguments,) = HfArgumentParser(ContextFilterBenchArguments).parse_args_into_dataclasses()
    out = main(arguments)
    logging.info("chosen: %s (default %s)", out["chosen"], out["default"])
