"""Does the cross-reference graph link the passages that questions need together, and does adding what BM25's top
passages refer to ("expansion") help retrieval?

Two question sets whose questions need more than one passage:

* ``ukfin``: the 80 PRA questions of ``../shared/data/ukfin_xref`` (each a source passage and the passage it
  cross-references, given as text), over the ingested PRA corpus (``rirag data ingest``); gold texts are mapped to
  the passage of the named page that holds them (fuzzy partial match >= 90);
* ``obliqa-mp``: ObliQA-MP validation (446 questions, 2-6 gold passages, qrels by passage id) over ObliQA.

Reported: how many questions have a gold passage whose resolved references include another gold passage (for ukfin:
the source refers to the target; split by whether the target is a footnote), and BM25 against BM25 + expansion
(each of the top ``n`` passages adds the targets of its references that resolve to at most ``m`` passages, scored
``w`` times the citing passage's score, kept if higher) over a small grid. The grid is read on the same questions,
so a gain would be optimistic; a grid with no gain says expansion does not help BM25 here.

Usage:

    python benchmarks/xref_expansion.py --data ../shared/data/obliqa --pra out/pra \\
        --out benchmarks/results/xref_expansion.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from rapidfuzz import fuzz

from rirag.cli.data import xref_passages
from rirag.data.obliqa import resolve_data_dir
from rirag.io import atomic_write_json
from rirag.retrieval.bm25 import BM25Index
from rirag.retrieval.metrics import evaluate_run
from rirag.text.xref import Resolver

REPO = Path(__file__).resolve().parents[1]
GRID = [(n, w, m) for n in (1, 3, 5, 10) for w in (0.5, 0.8, 0.95, 0.999) for m in (1, 5)]


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\s+([,.;:)])", r"\1", s)).strip().lower()


def graph(root: Path):
    passages, aliases = xref_passages(root)
    resolver = Resolver(passages, aliases)
    texts = {p.id: p for p in passages if p.text.strip()}
    refs = {pid: [r for r in resolver.references(p) if r.resolved] for pid, p in texts.items()}
    return texts, refs


def expand(run: dict, refs: dict, top: int, weight: float, max_targets: int) -> dict:
    out = {}
    for q, res in run.items():
        new = dict(res)
        for pid, score in sorted(res.items(), key=lambda kv: -kv[1])[:top]:
            for r in refs.get(pid, []):
                if len(r.targets) <= max_targets:
                    for t in r.targets:
                        if t != pid:
                            new[t] = max(new.get(t, 0.0), score * weight)
        out[q] = new
    return out


def pair_metrics(run: dict, gold: dict[str, tuple[str, str]]) -> dict:
    both = one = 0
    for q, pair in gold.items():
        top = [d for d, _ in sorted(run[q].items(), key=lambda kv: -kv[1])[:10]]
        hits = sum(1 for x in pair if x in top)
        both += hits == 2
        one += hits == 1
    n = len(gold)
    return {"R@10": round(sum(1 for q, pair in gold.items() for x in pair
                                  if x in [d for d, _ in sorted(run[q].items(), key=lambda kv: -kv[1])[:10]])
                              / (2 * n), 4),
            "Both@10": round(both / n, 4), "one-only@10": round(one / n, 4)}


def ukfin(pra: Path, questions: Path) -> dict:
    texts, refs = graph(pra)
    names = json.loads((pra / "document_map.json").read_text(encoding="utf-8"))
    page_doc = {re.sub(r"_\d\d-\d\d-\d{4}__.*$", "", v[0]): k for k, v in names.items()}
    by_doc = defaultdict(list)
    for p in texts.values():
        by_doc[p.document_id].append(p)

    def find(g: dict) -> str | None:
        want = _norm(g["text"])[:200]
        best = max(by_doc.get(page_doc.get(g["page"]), []), default=None,
                   key=lambda p: fuzz.partial_ratio(want, _norm(p.text)))
        return best.id if best is not None and fuzz.partial_ratio(want, _norm(best.text)) >= 90 else None

    qs = json.loads(questions.read_text(encoding="utf-8"))
    gold = {}
    for q in qs:
        roles = {g["role"]: find(g) for g in q["Gold"]}
        if roles.get("src") and roles.get("tgt"):
            gold[q["QuestionID"]] = (roles["src"], roles["tgt"])
    links: Counter = Counter()
    for src, tgt in gold.values():
        linked = any(tgt in r.targets for r in refs.get(src, []))
        kind = "footnote" if texts[tgt].number.startswith("footnote") else "provision"
        links[f"{kind} target, {'linked' if linked else 'not linked'}"] += 1
    index = BM25Index().index(list(texts), [p.text for p in texts.values()], log=False)
    run = index.search({q["QuestionID"]: q["Question"] for q in qs if q["QuestionID"] in gold}, k=100)
    rows = [{"run": "bm25", **pair_metrics(run, gold)}]
    for n, w, m in GRID:
        rows.append({"run": f"bm25 + xref (top {n}, w {w}, <= {m} targets)",
                     **pair_metrics(expand(run, refs, n, w, m), gold)})
    return {"questions": len(qs), "gold pairs mapped": len(gold), "source -> target links": dict(sorted(links.items())),
            "rows": rows}


def obliqa_mp(data: Path, mp: Path) -> dict:
    texts, refs = graph(data)
    questions = json.loads((mp / "ObliQA_MultiPassage_val.json").read_text(encoding="utf-8"))
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (mp / "qrels_val.txt").read_text(encoding="utf-8").splitlines():
        q, _, d, rel = line.split()
        qrels[q][d] = int(rel)
    linked = sum(1 for gold in qrels.values()
                 if any(b in r.targets for a in gold for r in refs.get(a, []) for b in gold if b != a))
    index = BM25Index().index(list(texts), [p.text for p in texts.values()], log=False)
    run = index.search({q["QuestionID"]: q["Question"] for q in questions}, k=100)

    def scores(r: dict) -> dict:
        m = evaluate_run(dict(qrels), r)
        return {"R@10": round(m["recall@10"], 4), "MAP@10": round(m["map@10"], 4)}

    rows = [{"run": "bm25", **scores(run)}]
    for n, w, m in GRID:
        rows.append({"run": f"bm25 + xref (top {n}, w {w}, <= {m} targets)", **scores(expand(run, refs, n, w, m))})
    return {"questions": len(questions), "questions with a gold passage referring to another": linked, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="ObliQA folder (default: $RIRAG_DATA_DIR)")
    ap.add_argument("--pra", required=True, help="the ingested PRA corpus folder")
    ap.add_argument("--ukfin", default=str(REPO.parent / "shared/data/ukfin_xref/ukfin_dev_questions.json"))
    ap.add_argument("--mp", default=str(REPO.parent / "shared/data/obliqa_mp"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    parts = {"ukfin": ukfin(Path(args.pra), Path(args.ukfin)),
             "obliqa-mp": obliqa_mp(resolve_data_dir(args.data), Path(args.mp))}
    result = {"benchmark": "benchmarks/xref_expansion.py",
              "command": "python benchmarks/xref_expansion.py" + "".join(
                  f" --{k} {v}" for k, v in (("data", args.data), ("pra", args.pra), ("out", args.out)) if v),
              "links": {f"{name}: {k}": v for name, part in parts.items() for k, v in part.items() if k != "rows"},
              "rows": [{"questions": name, **row} for name, part in parts.items() for row in part["rows"]]}
    for name, part in parts.items():
        sys.stdout.write(f"{name}: " + json.dumps({k: v for k, v in part.items() if k != "rows"}) + "\n")
        best = max(part["rows"][1:], key=lambda r: tuple(r[k] for k in list(r)[1:]))
        sys.stdout.write(f"  {part['rows'][0]}\n  best of grid: {best}\n")
    if args.out:
        atomic_write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
