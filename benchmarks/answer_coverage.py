"""How much of the rules a question needs do the answers quote, and how much of what they quote is needed (issue 64).

Rows are ``rirag submit`` runs on the PRA development questions (``../shared/data/ukfin_xref``, two gold rules each,
mapped to the ingested PRA corpus by text), each the command a user types:

* ``default``: ``rirag submit`` (the default retriever; the focused answerer with its default switches: each cited
  rule quoted whole where it fits, ``--whole-rules``; the rule referring to a cited one cited, ``--cite-referring``;
  a rule with its footnotes, ``--footnotes``; the lead's linked rules alone when it has one, ``--linked-only``; a
  line saying how a quoted rule connects to one before it, ``--connect``);
* ``default-before``: the same with ``--no-whole-rules --no-cite-referring --no-footnotes --no-linked-only
  --no-connect`` (the answers before issue 64);
* ``default-no-selection`` / ``default-no-connect``: the default without its cross-reference selection (issue 65) /
  without its connecting lines; ``default-answer-parts``: with ``--answer-parts`` (each part of the question);
* ``bm25`` / ``bm25-before``: the same two over ``--retriever bm25``.

Per row (:mod:`rirag.scoring.gold_text`, :mod:`rirag.scoring.answer_quality`): gold-rule coverage (per question, the
share of each gold rule's content words the answer holds; the mean of the minimum over its two rules, and of the
mean), gold-text precision (the share of the answer's content words found in its gold rules), cite-both
(``cite_all_share``), gold-citation precision and recall, words (median, p95); each coverage and precision also over
the questions whose context held both gold rules, beside that share (``context_all_share``: the ceiling of
cite-both; the context is what the answer was given, rules it followed in included), and under ``retrieved_top10`` over
the questions whose retrieved top 10 held both (the population the issue's targets name). The ceiling of coverage is
1.0 (both rules quoted whole, the ``gold-quote`` row, computed from the questions file). With ``--obliqa-answers
name=path ...`` (answer files of ``benchmarks/generation.py``'s 150-question ObliQA validation sample), the same
metrics over their gold passages (by id) are added under ``obliqa``.

Usage:

    python benchmarks/answer_coverage.py --pra out/pra \\
        [--questions ../shared/data/ukfin_xref/ukfin_dev_questions.json]
        [--rows default,default-before,bm25,bm25-before,default-no-selection,default-no-connect,
                default-answer-parts]
        [--work out/answer_coverage] [--obliqa-answers before=a.json.gz after=b.json.gz]
        [--out benchmarks/results/answer_coverage.json]

"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import logging
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from rirag.constants import EVAL_K
from rirag.io import atomic_write_json, portable_args, portable_path

logger = logging.getLogger(__name__)

BEFORE = ["--no-whole-rules", "--no-cite-referring", "--no-footnotes", "--no-linked-only", "--no-connect"]
ROWS: dict[str, list[str]] = {"default": [], "default-before": BEFORE, "bm25": ["--retriever", "bm25"],
                              "bm25-before": ["--retriever", "bm25", *BEFORE],
                              # issue 65: the default retriever without its cross-reference selection
                              "default-no-selection": ["--option", "xref_select=off"],
                              # issue 64, point 3: the default without its connecting lines
                              "default-no-connect": ["--no-connect"],
                              # issue 64, point 2: the default quoting the rule that answers each part of the question
                              "default-answer-parts": ["--answer-parts"]}
KEYS = ("gold_rule_coverage_min", "gold_rule_coverage_mean", "gold_text_precision",
        "gold_rule_coverage_min_context_holds", "gold_rule_coverage_mean_context_holds",
        "gold_text_precision_context_holds", "questions_context_holds", "cite_all_share", "context_all_share",
        "gold_citation_precision", "gold_citation_recall", "cited_per_answer", "words_median", "words_p95",
        "answers")


@dataclass
class Config:
    pra: str
    questions: str = str(Path("..") / "shared" / "data" / "ukfin_xref" / "ukfin_dev_questions.json")
    rows: str = ",".join(ROWS)
    work: str = str(Path("out") / "answer_coverage")
    obliqa_answers: list[str] = field(default_factory=list)
    out: str = str(Path("benchmarks") / "results" / "answer_coverage.json")


def _read(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _metrics(quality: dict) -> dict:
    return {k: quality.get(k) for k in KEYS}


def _pra_row(cfg: Config, row: str) -> dict:
    from rirag.cli import main as rirag
    from rirag.scoring.answers import answer_quality_of

    out = Path(cfg.work) / row
    argv = ["submit", "--data", cfg.pra, "--questions", cfg.questions, "--out", str(out), "--overwrite", *ROWS[row]]
    started = time.perf_counter()
    if rirag(argv) not in (0, None):
        raise SystemExit(f"rirag {' '.join(argv)} failed")
    seconds = time.perf_counter() - started
    records = _read(str(out / "answers.json"))
    quality = answer_quality_of(records, cfg.pra, cfg.questions)
    return {"command": "rirag " + " ".join(portable_args(argv)), "seconds": round(seconds, 1), **_metrics(quality),
            "retrieved_top10": _retrieved_holds(cfg, records, out / "retrieval.trec")}


@functools.lru_cache(maxsize=1)
def _pra(pra: str, questions: str):
    """The PRA corpus and each question's gold passage ids, loaded once for every row."""
    from rirag.data.obliqa import load_obliqa
    from rirag.data.questions import load_questions

    corpus = load_obliqa(pra)
    return corpus, {q.id: list(q.gold) for q in load_questions(questions, corpus).questions if q.gold}


def _retrieved_holds(cfg: Config, records: list[dict], run_path: Path) -> dict:
    """Coverage and precision over the questions whose retrieved top 10 (the run, before any rule the answerer
    followed into the context) held both gold rules: the population of the issue's targets."""
    from rirag.data.runs import read_trec
    from rirag.scoring.gold_text import gold_text_metrics

    corpus, gold = _pra(cfg.pra, cfg.questions)
    run = read_trec(str(run_path))
    top = [[pid for pid, _ in sorted(run.get(str(r["QuestionID"]), {}).items(), key=lambda kv: -kv[1])[:EVAL_K]]
           for r in records]
    golds = [gold.get(str(r["QuestionID"]), []) for r in records]
    text = {g: corpus.corpus[g].text for gs in golds for g in gs}
    metrics, _ = gold_text_metrics([r.get("Answer") or "" for r in records], top, golds, text)
    keys = ("gold_rule_coverage_min_context_holds", "gold_rule_coverage_mean_context_holds",
            "gold_text_precision_context_holds", "questions_context_holds")
    return {k: metrics[k] for k in keys}


def _gold_quote(cfg: Config) -> dict:
    """The ceiling: each question's two gold rules quoted whole, as the blind grading's fourth answer."""
    from rirag.scoring.answer_quality import answer_quality

    corpus, gold = _pra(cfg.pra, cfg.questions)
    golds = list(gold.values())
    answers = [" ".join(f"{corpus.corpus[g].text} [{i}]" for i, g in enumerate(gs, 1)) for gs in golds]
    text = {g: corpus.corpus[g].text for gs in golds for g in gs}
    return _metrics(answer_quality(answers, golds, golds, text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pra", required=True)
    for name, default in (("questions", Config.questions), ("rows", Config.rows), ("work", Config.work),
                          ("out", Config.out)):
        parser.add_argument(f"--{name}", default=default)
    parser.add_argument("--obliqa-answers", nargs="*", default=[])
    cfg = Config(**vars(parser.parse_args()))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # rows not rerun are kept (each row records its own command); the ObliQA part likewise unless given again
    old = _read(cfg.out) if Path(cfg.out).is_file() else {}
    rows = {**old.get("rows", {}), **{row: _pra_row(cfg, row) for row in cfg.rows.split(",") if row}}
    rows["gold-quote"] = _gold_quote(cfg)
    result = {"benchmark": "answer_coverage", "issue": 64, "questions": portable_path(cfg.questions),
              "corpus": portable_path(cfg.pra), "cores": os.cpu_count(), "machine": platform.machine(),
              "rows": rows, **({"obliqa": old["obliqa"]} if "obliqa" in old else {})}
    if cfg.obliqa_answers:
        from rirag.scoring.answers import answer_quality_of

        result["obliqa"] = {}
        for spec in cfg.obliqa_answers:
            name, _, path = spec.partition("=")
            result["obliqa"][name] = {"answers": portable_path(path), **_metrics(answer_quality_of(_read(path)))}
    atomic_write_json(cfg.out, result)
    logger.info("wrote %s", cfg.out)


if __name__ == "__main__":
    main()
