"""The pool and the seeded draw of the missing-parts labelled set (issue 32, item 2).

Pool: the leakage-free ``validation`` questions that have a ranking in the best run, minus the answer benchmark's
fixed, seeded sample (``benchmarks/generation.py``: :func:`rirag.data.splits.seeded_sample`, ``ANSWER_SAMPLE_SIZE``
questions under ``rirag.constants.SEED``). Draw: ``size`` questions of the pool (sorted by id) under ``seed``,
``random.Random(seed).sample``; the order of the draw is the labelling order, so any prefix is itself a random draw.
Given passages: the question's top ``EVAL_K`` of the run after the RIRAG score filter, exactly as the answer
benchmark builds a context (:func:`rirag.generation.pipeline.select_passages`).

Writes ``draw.json`` (ids only: the data never goes into the repo); ``--dump PATH`` also writes the questions and the
full passage texts, for reading, to a file outside the repo; ``--check`` verifies that ``labels.jsonl`` labels drawn
questions with their given passages in rank order (evidence among them) and prints the set's counts.

Usage:

    python benchmarks/missing_parts/build_pool.py                          # writes benchmarks/missing_parts/draw.json
    python benchmarks/missing_parts/build_pool.py --dump out/draw_text.jsonl
    python benchmarks/missing_parts/build_pool.py --check
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Config:
    data: str | None = None
    run: str = "benchmarks/runs/validation.best.trec.gz"
    split: str = "validation"
    size: int = 250
    seed: int = 32  # the number; any seed other than the sample's would do, the pool excludes the sample
    out: str = str(HERE / "draw.json")
    dump: str | None = None
    check: bool = False
    labels: str = str(HERE / "labels.jsonl")


def draw(config: Config) -> tuple[dict, list[dict]]:
    from rirag.constants import EVAL_K, SEED
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import read_trec
    from rirag.data.splits import ANSWER_SAMPLE_SIZE, seeded_sample, split_questions
    from rirag.generation.pipeline import select_passages

    obliqa = load_obliqa(config.data)
    run = read_trec(config.run)
    questions = split_questions(obliqa, config.split)
    sample = {q.id for q in seeded_sample(questions, run, ANSWER_SAMPLE_SIZE, SEED)}
    pool = sorted((q for q in questions if q.id in run and q.id not in sample), key=lambda q: q.id)
    drawn = random.Random(config.seed).sample(pool, config.size)
    items = []
    for q in drawn:
        given = select_passages(run[q.id], obliqa.passages, EVAL_K, "rirag", where=f"{config.run}, {q.id}")
        items.append({"QuestionID": q.id, "Question": q.text, "gold": list(q.gold),
                      "passages": [{"id": p.id, "score": round(p.score, 4), "DocumentID": p.document_id,
                                    "PassageID": p.passage_id, "text": p.text} for p in given]})
    meta = {"split": config.split, "split_questions": len(questions),
            "with_ranking": sum(q.id in run for q in questions), "benchmark_sample": len(sample),
            "pool": len(pool), "draw_size": config.size, "draw_seed": config.seed, "run": config.run,
            "context": f"top {EVAL_K}, RIRAG score filter (rirag.generation.pipeline.select_passages)"}
    return meta, items


def _flat(text: str) -> str:
    """Text compared for quotes: whitespace collapsed, left-to-right marks dropped, lower case."""
    return re.sub(r"\s+", " ", text.replace("\u200e", "")).strip().lower()


def check(config: Config, items: list[dict]) -> list[str]:
    given = {it["QuestionID"]: [p["id"] for p in it["passages"]] for it in items}
    texts = {p["id"]: _flat(p["text"]) for it in items for p in it["passages"]}
    problems = []
    for n, line in enumerate(Path(config.labels).read_text(encoding="utf-8").splitlines(), 1):
        rec = json.loads(line)
        qid = rec.get("QuestionID")
        if qid not in given:
            problems.append(f"{config.labels}:{n}: QuestionID {qid!r} is not in the draw")
        elif rec.get("passage_ids") != given[qid]:
            problems.append(f"{config.labels}:{n}: passage_ids differ from the given passages of {qid}")
        for part in rec.get("parts", []):
            extra = set(part.get("evidence_passage_ids", [])) - set(given.get(qid, []))
            if extra:
                problems.append(f"{config.labels}:{n}: evidence {sorted(extra)} is not among the given passages")
            evidence, quote = part.get("evidence_passage_ids", []), part.get("evidence_quote", "")
            if bool(part.get("stated")) != bool(evidence) or bool(evidence) != bool(quote):
                problems.append(f"{config.labels}:{n}: part {part.get('part')!r}: stated, evidence and quote disagree")
            elif evidence and not extra and _flat(quote) not in texts[evidence[0]]:
                problems.append(f"{config.labels}:{n}: part {part.get('part')!r}: the quote is not in {evidence[0]}")
    return problems


def counts(path: str) -> dict:
    """The labelled set's counts: questions, parts, unanswered parts, questions with at least one."""
    records = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    parts = [p for r in records for p in r["parts"]]
    return {"questions": len(records), "parts": len(parts),
            "unanswered_parts": sum(not p["stated"] for p in parts),
            "questions_with_unanswered": sum(any(not p["stated"] for p in r["parts"]) for r in records),
            "questions_fully_answered": sum(all(p["stated"] for p in r["parts"]) for r in records),
            "borderline_parts": sum(bool(p.get("borderline")) for p in parts),
            "borderline_unanswered": sum(bool(p.get("borderline")) and not p["stated"] for p in parts)}


def main(config: Config) -> int:
    meta, items = draw(config)
    if config.check:
        problems = check(config, items)
        for p in problems:
            sys.stderr.write(p + "\n")
        if not problems:
            sys.stdout.write(json.dumps(counts(config.labels)) + "\n")
        return 2 if problems else 0
    Path(config.out).write_text(json.dumps(
        {"meta": meta, "questions": [{"QuestionID": it["QuestionID"], "gold": it["gold"],
                                      "passage_ids": [p["id"] for p in it["passages"]]} for it in items]},
        indent=1) + "\n", encoding="utf-8")
    if config.dump:
        with open(config.dump, "w", encoding="utf-8") as f:
            for it in items:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
    logging.getLogger(__name__).info("%s", meta)
    return 0


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Config()).items():
        if isinstance(default, bool):
            p.add_argument(f"--{name}", action="store_true")
        else:
            p.add_argument(f"--{name}", default=default, type=type(default) if default is not None else str)
    return Config(**vars(p.parse_args(argv)))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main(parse_args()))
