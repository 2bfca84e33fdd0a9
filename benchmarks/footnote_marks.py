"""Footnote marks an answers file shows: for each answer, each footnote mark of a passage it cites (an ingested
page's ``FootnoteMarks``, :class:`rirag.data.passage_store.Passage`) that its text still shows after the word
before it in the passage, or before the word after it (:func:`rirag.text.marks.bare_marks`: "credit assessments;
9 [1]"). An answer should show none; a corpus without marks (ObliQA) has nothing to show.

Usage:
    rirag submit --data out/pra --retriever bm25 --questions ../shared/data/ukfin_xref/ukfin_dev_questions.json \\
        --out out/submit
    python benchmarks/footnote_marks.py --data out/pra --answers out/submit/answers.json

Prints the count (answers, cited passages with marks, marks shown) and each mark shown; exits 1 when any is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rirag.data.obliqa import load_obliqa
from rirag.text.marks import bare_marks


def shown_marks(answers: list[dict], passages) -> dict:
    """Per answer (its QuestionID), the marks its text shows of the passages it cites (:func:`bare_marks`), and the
    counts."""
    shown: dict[str, list[str]] = {}
    cited_with_marks = 0
    for rec in answers:
        ids = dict.fromkeys(c["ID"] for c in rec.get("Citations") or [] if c.get("ID"))
        for pid in ids:
            p = passages.get(pid)
            if p is None or not p.marks:
                continue
            cited_with_marks += 1
            found = bare_marks(rec.get("Answer") or "", p.text, p.marks)
            if found:
                shown.setdefault(rec["QuestionID"], []).extend(f"{pid}: {f}" for f in found)
    return {"answers": len(answers), "cited_passages_with_marks": cited_with_marks,
            "marks_shown": sum(len(v) for v in shown.values()), "shown": shown}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="the corpus folder the answers were written from")
    ap.add_argument("--answers", required=True, help="an answers file (rirag answer / submit: answers.json)")
    args = ap.parse_args(argv)
    answers = json.loads(Path(args.answers).read_text(encoding="utf-8"))
    result = shown_marks(answers, load_obliqa(args.data).passages)
    print(json.dumps(result, indent=2, ensure_ascii=False))  # noqa: T201 - a benchmark's report
    return 1 if result["marks_shown"] else 0


if __name__ == "__main__":
    sys.exit(main())
