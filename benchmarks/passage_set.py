"""Does the passage-set decision (``--passage-set``, :mod:`rirag.generation.focused.passage_set`) make the focused
answer cite every passage the question needs, without citing ones it does not?

Rows, each the focused answerer over the same contexts (the top 10, ``--context-filter top-k``, the default):
``focused`` (the passage gate) and ``focused --passage-set`` (the decision, with the corpus's cross-reference graph
for its link feature and for quoting linked rules together); each of them with ``--follow-references`` (a cited
rule's reference followed to a retrieved rule, :mod:`rirag.generation.focused.follow`); and ``focused, rirag
filter`` (the former default: the paper's filter, then the gate); ``focused --follow-references, notes quoted as notes``
(``note_rules`` off: a passage quoted through a bare source note, "[Note: Art. 109 of the CRD]", as it was before
:func:`rirag.generation.focused.selection.rules_for_notes`). Sets:

* ``obliqa-validation``: the generation benchmark's seeded 150 leakage-free validation questions over
  ``benchmarks/runs/validation.best.trec.gz`` (never used to fit the decision);
* ``pra-dev``: the 80 PRA development questions over ``rirag data ingest`` output (``--pra-run``: a depth-100 run,
  else BM25), the graph ``PRA/xref``; transfer: nothing of the PRA Rulebook was used to fit the decision;
* ``obliqa-mp``: ObliQA-MP validation (``--mp-run``); in-sample for the frozen decision, which was fitted on it: the
  held-out figures are ``train/passage_set.py``'s folds (``benchmarks/results/passage_set.json``).

Per row: gold-citation precision, recall beside the context's recall (the share of gold passages the top 10 holds:
recall's ceiling) and F1, the cite-all share beside the context-all share (its ceiling),
passages cited and gold passages per question, words (median, p95) and words per cited passage, the share of
answers following a link and of answers quoting a bare source note, seconds per answer.
Twenty answers of each of PRA and ObliQA-MP, old default beside new, are written to ``--examples`` for reading.

Usage:

    python benchmarks/passage_set.py --pra out/pra --graph out/obliqa_xref --pra-run out/runs/pra_default.trec \\
        --mp-run out/runs/mp_bm25.trec --out benchmarks/results/passage_set_answers.json
"""

from __future__ import annotations

import logging
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rirag.constants import EVAL_K, SEED
from rirag.data.splits import ANSWER_SAMPLE_SIZE

logger = logging.getLogger(__name__)

#: Row -> (the answerer's context of the top 10, the switches on).
ROWS = {"focused, rirag filter": ("rirag", {}), "focused": ("top-k", {}),
        "focused --passage-set": ("top-k", {"passage_set": True}),
        "focused --follow-references": ("top-k", {"follow_references": True}),
        "focused --passage-set --follow-references": ("top-k", {"passage_set": True, "follow_references": True}),
        "focused --follow-references, notes quoted as notes": ("top-k", {"follow_references": True,
                                                                        "note_rules": False})}
KEYS = ("gold_citation_precision", "gold_citation_recall", "context_recall", "gold_citation_f1", "cite_all_share",
        "context_all_share", "cited_per_answer", "gold_per_question", "words_median", "words_p95",
        "words_per_cited_passage")


@dataclass
class PassageSetBenchArguments:
    data: str = field(default="../shared/data/obliqa", metadata={"help": "The ObliQA folder."})
    run: str = field(default="benchmarks/runs/validation.best.trec.gz", metadata={"help": "ObliQA validation run."})
    graph: str = field(default="out/obliqa_xref", metadata={"help": "ObliQA's graph folder (rirag data xref)."})
    pra: str = field(default="out/pra", metadata={"help": "The PRA corpus (rirag data ingest; PRA/xref its graph)."})
    pra_questions: str = field(default="../shared/data/ukfin_xref/ukfin_dev_questions.json",
                               metadata={"help": "The 80 PRA development questions."})
    pra_run: str | None = field(default=None, metadata={"help": "A depth-100 run of the PRA questions (else BM25)."})
    mp: str = field(default="../shared/data/obliqa_mp", metadata={"help": "The ObliQA-MP validation folder."})
    mp_run: str | None = field(default=None, metadata={"help": "A depth-100 run of ObliQA-MP (else BM25)."})
    sets: str = field(default="obliqa-validation,pra-dev,obliqa-mp", metadata={"help": "Sets to answer."})
    examples_per_set: int = field(default=20, metadata={"help": "Answers written out for reading, per set."})
    out: str = field(default="benchmarks/results/passage_set_answers.json", metadata={"help": "Results JSON."})
    examples: str = field(default="benchmarks/answers/passage_set_examples.json",
                          metadata={"help": "Old and new answers for reading by hand."})


def load_sets(args: PassageSetBenchArguments) -> dict:
    """name -> (questions [(id, text)], gold, run, corpus, graph folder, retrieval label)."""
    from context_filter import bm25_run
    from follow_references import mp_gold, ukfin_gold
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import seeded_sample, split_questions

    wanted = {s.strip() for s in args.sets.split(",") if s.strip()}
    obliqa = load_obliqa(args.data)
    sets = {}
    if "obliqa-validation" in wanted:
        run = read_trec(args.run)
        sample = seeded_sample(split_questions(obliqa, "validation"), run, ANSWER_SAMPLE_SIZE, SEED)
        sets["obliqa-validation"] = ([(q.id, q.text) for q in sample], {q.id: set(q.gold) for q in sample}, run,
                                     obliqa.corpus, args.graph, args.run)
    if "pra-dev" in wanted:
        pra = load_obliqa(args.pra)
        questions, gold = ukfin_gold(Path(args.pra), Path(args.pra_questions))
        run = read_trec(args.pra_run) if args.pra_run else bm25_run(pra.corpus, questions)
        sets["pra-dev"] = (questions, gold, run, pra.corpus, str(Path(args.pra) / "xref"), args.pra_run or "bm25")
    if "obliqa-mp" in wanted:
        questions, gold = mp_gold(Path(args.mp))
        run = read_trec(args.mp_run) if args.mp_run else bm25_run(obliqa.corpus, questions)
        sets["obliqa-mp"] = (questions, gold, run, obliqa.corpus, args.graph, args.mp_run or "bm25")
    return sets


def answer_row(answerer, questions, gold, run, corpus, context: str) -> tuple[dict, list]:
    from rirag.generation.pipeline import answer_items, select_passages
    from rirag.scoring.answer_quality import answer_quality
    from rirag.text.units import is_source_note

    items = [(qid, text, select_passages(run.get(qid, {}), corpus, EVAL_K, context, where=qid))
             for qid, text in questions]
    start = time.perf_counter()
    answers = answer_items(items, answerer)
    seconds = time.perf_counter() - start
    q = answer_quality([a.text for a in answers], [[p.id for p in a.passages] for a in answers],
                       [sorted(gold[qid]) for qid, _ in questions])
    row = {"answers": len(answers), **{k: round(q[k], 4) if isinstance(q[k], float) else q[k] for k in KEYS},
           "answers_following_a_link": round(sum(bool(a.draft and a.draft.followed) for a in answers)
                                             / max(1, len(answers)), 4),
           "answers_quoting_a_note": round(sum(any(is_source_note(p.text) for p in a.draft.parts) for a in answers
                                               if a.draft) / max(1, len(answers)), 4),
           "seconds_per_answer": round(seconds / max(1, len(answers)), 3)}
    return row, answers


def main(args: PassageSetBenchArguments) -> dict:
    from follow_references import Memo
    from rirag.generation.focused import FocusedAnswerer
    from rirag.io import atomic_write_json, provenance
    from rirag.xref.graph import ReferenceGraph

    answerer = FocusedAnswerer()
    memo = Memo(answerer)  # the rows answer from the same passages: each unit embedded and classified once
    answerer._encode, answerer._is_obligation = memo.encode, memo.is_obligation
    base = answerer.config
    results: dict = {}
    examples: dict = {}
    for name, (questions, gold, run, corpus, graph, label) in load_sets(args).items():
        answerer.attach_references(ReferenceGraph(graph=Path(graph) / "references.jsonl"), corpus)
        rows, texts = {}, {}
        for row, (context, switches) in ROWS.items():
            answerer.config = replace(base, **switches)
            rows[row], answers = answer_row(answerer, questions, gold, run, corpus, context)
            texts[row] = {a.question_id: a for a in answers}
            logger.info("%s / %s: %s", name, row, rows[row])
        answerer.config = base
        results[name] = {"questions": len(questions), "retrieval": label, "graph": graph, "rows": rows}
        chosen = random.Random(SEED).sample([q for q, _ in questions], min(args.examples_per_set, len(questions)))
        examples[name] = [{"QuestionID": q, "Question": texts["focused"][q].question, "Gold": sorted(gold[q]),
                           **{row: {"Answer": texts[row][q].text,
                                    "Cited": [p.id for p in texts[row][q].cited]} for row in ROWS}}
                          for q in chosen]
    out = {"benchmark": "benchmarks/passage_set.py", **provenance(), "obligations": answerer.obligation_source,
           "sets": results}
    atomic_write_json(args.out, out)
    atomic_write_json(args.examples, examples)
    return out


if __name__ == "__main__":
    from transformers import HfArgumentParser

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    (arguments,) = HfArgumentParser(PassageSetBenchArguments).parse_args_into_dataclasses()
    main(arguments)
