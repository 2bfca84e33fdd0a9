"""Blind grading of answers by readers who do not know which answer is whose (issue 64).

Two stages:

* ``packet``: for a sample of questions (seeded), the question, its reference answer, its gold rules' text and the
  answers of every compared system, in a random order per question (seeded), each answer's citation markers
  renumbered 1, 2, ... in order of first appearance (``[3]``, ``[#ab12…]`` alike: no system shows through its
  citation style), labelled A, B, C, ...; the rubric (:data:`RUBRIC`, fixed before any answer is read) heads the
  packet. Writes ``packet.md`` (what a grader reads), ``grades_template.json`` (what a grader fills in) and
  ``key.json`` (which label is which system: keep it away from the graders);
* ``read``: the graders' filled-in copies of the template and the key, to the mean score per system on each scale
  (mean over graders, then over questions), per grader, and how often each system was ranked first (ties counted
  apart). Writes the table as JSON and prints it.

The compared systems are answer files (``name=path``: a ``rirag submit``/``answer`` output, or any JSON list of
``{QuestionID, Answer}``), and two built here from the questions file: ``gold-quote`` (the question's gold rules
quoted whole, each cited) and ``reference`` is never an answer (it is shown to the graders as the reference).

Usage:

    python benchmarks/blind_grading.py packet --questions ../shared/data/ukfin_xref/ukfin_dev_questions.json \\
        --systems new=out/new/answers.json old=out/old/answers.json \\
        llm=../shared/data/ukfin_xref/ukfin_dev_llm_answers.json gold-quote \\
        [--sample 30] [--seed 42] [--exclude benchmarks/blind/issue64/round1/key.json ...] \\
        --out benchmarks/blind/issue64
    python benchmarks/blind_grading.py read --key benchmarks/blind/issue64/key.json \\
        --grades benchmarks/blind/issue64/grades_1.json benchmarks/blind/issue64/grades_2.json \\
        [--out benchmarks/results/blind_grading.json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rirag.constants import SEED
from rirag.io import atomic_write_json, portable_path

SCALES = ("correct", "complete", "grounded", "useful")
#: The rubric, fixed before any answer is read (the graders are told to keep to it).
RUBRIC = """Score each answer 1-5 on four scales, against the question, the reference answer and the gold rules shown:
- correct: 5 = everything it states is right for this question; 3 = right in the main, one error or overstatement
  (a "should" made "must", alternatives joined with "and"); 1 = wrong on the point asked.
- complete: 5 = answers every part of the question with every condition, limb and exception the gold rules attach;
  3 = answers the main part, misses a part or the conditions; 1 = answers none of what was asked.
- grounded: 5 = every statement is in the gold rules (or plainly in rules it cites) and nothing is invented;
  3 = mostly, with an unsupported addition; 1 = mostly unsupported.
- useful: 5 = a compliance officer could act on it as it stands; 3 = helps, needs the rules read again;
  1 = of no use for this question.
Then rank the answers of the question, best first (ties allowed: write them in one string, "B=C").
Judge what the answer says, not its style; a quotation is as good as a paraphrase when it answers."""
#: Any citation marker: ``[3]``, ``[1, 2]``, ``[#ID:28d975e9bccdd9ad]``.
MARKER = re.compile(r"\[\s*(#(?:ID:)?[0-9a-fA-F]+(?:\s*[,;]\s*#(?:ID:)?[0-9a-fA-F]+)*|\d+(?:\s*[,;]\s*\d+)*)\s*\]")
GOLD_QUOTE = "gold-quote"


@dataclass
class Config:
    stage: str
    questions: str | None = None
    systems: tuple[str, ...] = ()
    sample: int = 30
    seed: int = SEED
    #: Earlier rounds' key files: their questions are not sampled again.
    exclude: tuple[str, ...] = ()
    out: str | None = None
    key: str | None = None
    grades: tuple[str, ...] = ()


def renumbered(answer: str) -> str:
    """``answer`` with its citation markers numbered 1, 2, ... by first appearance of what they cite."""
    numbers: dict[str, int] = {}

    def one(m: re.Match) -> str:
        cites = [c.strip() for c in re.split(r"[,;]", m.group(1))]
        return "".join(f"[{numbers.setdefault(c, len(numbers) + 1)}]" for c in cites)

    return MARKER.sub(one, answer)


def gold_quote(question: dict) -> str:
    """The question's gold rules quoted whole, each cited."""
    return "\n".join(f"{g['text'].strip()} [{i}]" for i, g in enumerate(question["Gold"], 1))


def _answers(spec: str, questions: list[dict]) -> tuple[str, dict[str, str]]:
    """(name, question id -> answer) of one ``--systems`` entry."""
    if spec == GOLD_QUOTE:
        return spec, {q["QuestionID"]: gold_quote(q) for q in questions}
    name, _, path = spec.partition("=")
    if not path:
        raise SystemExit(f"--systems entry {spec!r}: expected name=path or {GOLD_QUOTE}")
    records = json.loads(Path(path).read_text(encoding="utf-8"))
    return name, {str(r["QuestionID"]): r.get("Answer") or "" for r in records}


def packet(cfg: Config) -> None:
    questions = json.loads(Path(cfg.questions).read_text(encoding="utf-8"))
    systems = dict(_answers(s, questions) for s in cfg.systems)
    rng = random.Random(cfg.seed)
    seen = {str(item["QuestionID"]) for path in cfg.exclude
            for item in json.loads(Path(path).read_text(encoding="utf-8"))["items"].values()}
    asked = [q for q in questions if all(q["QuestionID"] in a for a in systems.values())
             and str(q["QuestionID"]) not in seen]
    sample = rng.sample(asked, min(cfg.sample, len(asked)))
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# Blind grading packet", "", RUBRIC, ""]
    key: dict = {"systems": list(systems), "questions_file": portable_path(cfg.questions), "seed": cfg.seed,
                 "items": {}}
    template: dict = {}
    for n, q in enumerate(sample, 1):
        item = f"Q{n:02d}"
        names = list(systems)
        rng.shuffle(names)
        labels = {chr(ord("A") + i): name for i, name in enumerate(names)}
        key["items"][item] = {"QuestionID": q["QuestionID"], "labels": labels}
        template[item] = {**{label: {s: None for s in SCALES} for label in labels}, "rank": None, "note": ""}
        lines += [f"## {item}", "", f"**Question.** {q['Question']}", "", f"**Reference answer.** {q['GoldAnswer']}",
                  "", "**Gold rules.**", ""]
        lines += [f"> ({g['role']}) {' '.join(g['text'].split())}" + "\n" for g in q["Gold"]]
        for label, name in labels.items():
            lines += [f"### Answer {label}", "", renumbered(systems[name][q["QuestionID"]]).strip() or "(empty)", ""]
    (out / "packet.md").write_text("\n".join(lines), encoding="utf-8")
    atomic_write_json(str(out / "grades_template.json"), template)
    atomic_write_json(str(out / "key.json"), key)


def _ranked_first(rank: str | None) -> list[str]:
    """The labels ranked first in ``rank`` ("B=C > A > D" or "B=C, A, D")."""
    if not rank:
        return []
    return [s.strip() for s in re.split(r"[>,\s]+", rank.strip())[0].split("=") if s.strip()]


def read(cfg: Config) -> dict:
    key = json.loads(Path(cfg.key).read_text(encoding="utf-8"))
    per_grader: dict[str, dict] = {}
    scores: dict[str, dict[str, list[list[float]]]] = {s: {x: [] for x in SCALES} for s in key["systems"]}
    first = {s: {"alone": 0, "tied": 0} for s in key["systems"]}
    for path in cfg.grades:
        grades = json.loads(Path(path).read_text(encoding="utf-8"))
        mine = {s: {x: [] for x in SCALES} for s in key["systems"]}
        for item, spec in key["items"].items():
            graded = grades.get(item) or {}
            for label, system in spec["labels"].items():
                for scale in SCALES:
                    value = (graded.get(label) or {}).get(scale)
                    if value is not None:
                        mine[system][scale].append(float(value))
            top = _ranked_first(graded.get("rank"))
            for label in top:
                first[spec["labels"][label]]["alone" if len(top) == 1 else "tied"] += 1
        per_grader[f"grader {len(per_grader) + 1} ({portable_path(path)})"] = {
            s: {x: float(np.mean(v)) if v else None for x, v in m.items()} for s, m in mine.items()}
        for s, m in mine.items():
            for x, v in m.items():
                scores[s][x].append(v)
    table = {s: {x: float(np.mean([np.mean(v) for v in vs if v])) if any(vs) else None for x, vs in m.items()}
             for s, m in scores.items()}
    result = {"benchmark": "blind_grading", "graders": len(cfg.grades), "questions": len(key["items"]),
              "rubric": RUBRIC, "mean": table, "per_grader": per_grader, "ranked_first": first,
              "key": portable_path(cfg.key), "grades": [portable_path(g) for g in cfg.grades]}
    if cfg.out:
        atomic_write_json(cfg.out, result)
    return result


def _table(result: dict) -> str:
    rows = [f"| answer | {' | '.join(SCALES)} | ranked first (alone / tied, over graders) |",
            "|---|" + "---|" * (len(SCALES) + 1)]
    for system, m in result["mean"].items():
        f = result["ranked_first"][system]
        cells = " | ".join("n/a" if m[x] is None else f"{m[x]:.2f}" for x in SCALES)
        rows.append(f"| {system} | {cells} | {f['alone']} / {f['tied']} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=("packet", "read"))
    parser.add_argument("--questions")
    parser.add_argument("--systems", nargs="+", default=())
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--exclude", nargs="+", default=(),
                        help="earlier rounds' key.json: their questions are left out (a round on unseen questions)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out")
    parser.add_argument("--key")
    parser.add_argument("--grades", nargs="+", default=())
    cfg = Config(**vars(parser.parse_args()))
    if cfg.stage == "packet":
        if not (cfg.questions and cfg.systems and cfg.out):
            parser.error("packet needs --questions, --systems and --out")
        packet(cfg)
    else:
        if not (cfg.key and cfg.grades):
            parser.error("read needs --key and --grades")
        print(_table(read(cfg)))  # noqa: T201 - a script's report


if __name__ == "__main__":
    main()
