"""End-to-end demo on the offline defaults: build the datasets, retrieve with BM25, evaluate, show answers' sources.

Usage:
    python scripts/demo.py [--data DIR] [--artifacts artifacts]      (what `make demo` runs)

Steps: (1) build ObliQA in both split schemes with the overlap audit; (2) BM25 on the leakage-free validation
split and the original test split, TREC runs written to ARTIFACTS/runs, and the metric table; (3) the top 3
passages (document title and PassageID) for three questions of RIRAG_Unseen_Questions.json; (4) one of those
questions answered with citations by the focused answerer (the passage units that answer the question; the wheel's
MiniLM and, for obligation-ness, ARTIFACTS/obligation_classifier when it is trained, else deontic cues: no trained
model needed), so a fresh clone ends with a cited answer in seconds. ``--answer-generator smollm2-135m-instruct``
answers with the offline LM instead (about a minute on 2 cores; at 135M parameters it often cites nothing).
"""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from rirag.cli import format_table
from rirag.cli.answers import format_answer
from rirag.constants import DEFAULT_CONTEXT_FILTER, EVAL_K, RUN_DEPTH, SEED
from rirag.data.obliqa import load_obliqa
from rirag.data.questions import unseen_questions
from rirag.data.runs import write_trec
from rirag.data.splits import qrels_of, split_questions
from rirag.generation.base import DEFAULT_GENERATOR, GeneratorSpec
from rirag.generation.extractive import MODAL_CUES
from rirag.generation.pipeline import answer_question
from rirag.generation.prompts import FEW_SHOT
from rirag.generation.registry import PASSAGE_GENERATORS, build_generator
from rirag.hub.dataset_build import BuildConfig, build
from rirag.retrieval.metrics import evaluate_run, metric_names
from rirag.retrieval.registry import RetrieverSpec, build_retriever


@dataclass
class DemoConfig:
    data: str | None = None
    artifacts: str = "artifacts"
    splits: tuple[str, ...] = ("validation", "original-test")
    retriever: str = "bm25"
    unseen_questions: int = 3
    top: int = 3
    seed: int = SEED
    #: step 4: "auto" = the focused answerer (trained obligation classifier, else deontic cues); or a generator
    answer_generator: str = "auto"
    answer_strategy: str = FEW_SHOT
    answer_max_new_tokens: int = 128


def main(config: DemoConfig) -> None:
    out = sys.stdout.write
    artifacts = Path(config.artifacts)

    out("# 1. Datasets (original + leakage-free re-split, overlap audit)\n")
    obliqa = load_obliqa(config.data)
    summary = build(BuildConfig(data=config.data, out=str(artifacts / "datasets" / "obliqa"), seed=config.seed), obliqa)
    for scheme, info in summary.items():
        out(f"\n{scheme} → {info['path']}\n" + format_table(info["statistics"], list(info["statistics"][0])) + "\n")
        if "audit" in info:
            a = info["audit"]
            sem = a["semantic"].get("pairs", "skipped")
            out(f"overlap audit (train vs validation+test): exact {a['exact']['pairs']}, "
                f"fuzzy≥85 {a['fuzzy']['pairs']}, "
                f"cosine≥0.85 {sem}  (details: {info['path']}/audit.json)\n")

    out(f"\n# 2. Retrieval: {config.retriever}\n")
    retriever = build_retriever(obliqa.corpus, RetrieverSpec(config.retriever))
    rows = []
    for split in config.splits:
        questions = split_questions(obliqa, split, config.seed)
        run = retriever.search({q.id: q.text for q in questions}, k=RUN_DEPTH)
        path = write_trec(run, artifacts / "runs" / f"{split}.{config.retriever}.trec", system=config.retriever)
        metrics = evaluate_run(qrels_of(questions), run)
        rows.append({"retriever": config.retriever, "split": split, "questions": metrics["n_questions"],
                     **{m: metrics[m] for m in metric_names(EVAL_K)}, "run": str(path)})
    out(format_table(rows, list(rows[0])) + "\n")

    out(f"\n# 3. Unseen questions (RIRAG_Unseen_Questions.json): top {config.top} passages\n")
    unseen = unseen_questions(obliqa)
    for q in unseen[: config.unseen_questions]:
        out(f"\nQ: {q.text}\n")
        hits = retriever.search({q.id: q.text}, k=config.top)[q.id]
        for rank, (pid, score) in enumerate(sorted(hits.items(), key=lambda kv: -kv[1]), start=1):
            p = obliqa.passages[pid]
            snippet = textwrap.shorten(p.text, 160, placeholder=" …")
            out(f"  {rank}. [{obliqa.title(p.document_id)} · {p.passage_id}] ({score:.2f}) {snippet}\n")

    classifier = artifacts / "obligation_classifier"
    name = config.answer_generator
    if name == "auto":
        name = DEFAULT_GENERATOR
    if name in PASSAGE_GENERATORS:
        detector = str(classifier) if (classifier / "config.json").exists() else MODAL_CUES
        generator = build_generator(GeneratorSpec(name, detector))
        name = f"{name}, obligations by {'the trained classifier' if detector != MODAL_CUES else 'deontic cues'}"
    else:
        generator = build_generator(GeneratorSpec(name, options={"max_new_tokens": config.answer_max_new_tokens}))
    question = unseen[0]
    out(f"\n# 4. A cited answer ({name}, {config.retriever} passages, context filter {DEFAULT_CONTEXT_FILTER})"
        f"\n\nQ: {question.text}\n")
    answer = answer_question(question.text, retriever, generator, config.answer_strategy, corpus=obliqa.corpus,
                             question_id=question.id)
    out(format_answer(answer, obliqa.titles))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--artifacts", default=DemoConfig.artifacts)
    parser.add_argument("--answer-generator", default=DemoConfig.answer_generator,
                        help="'auto' (the focused answerer), or a generator name such as extractive or "
                             "smollm2-135m-instruct")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    main(DemoConfig(data=args.data, artifacts=args.artifacts, answer_generator=args.answer_generator))
