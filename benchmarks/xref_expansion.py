"""Does the cross-reference graph link the passages that questions need together, and does adding what BM25's top
passages refer to ("expansion") help retrieval?

Two question sets whose questions need more than one passage:

* ``ukfin``: the 80 PRA questions of ``../shared/data/ukfin_xref`` (each a source passage and the passage it
  cross-references, given as text), over the ingested PRA corpus (``rirag data ingest``); gold texts are mapped to
  the corpus by the library's question loader (:func:`rirag.data.questions.load_questions`: the passage of the named
  page holding the text, then any passage, then fuzzy containment);
* ``obliqa-mp``: ObliQA-MP validation (446 questions, 2-6 gold passages, qrels by passage id) over ObliQA.

Reported: how many questions have a gold passage whose resolved references include another gold passage (for ukfin:
the source refers to the target; split by whether the target is a footnote), and BM25 (the registry's) against BM25 +
expansion over a small grid. Expansion is the retriever option ``--option xref_expand=n`` with ``xref_weight=w`` and
``xref_max_targets=m`` (:class:`rirag.xref.expansion.XrefExpansion`: each of the top ``n`` passages adds the
targets of its references that resolve to at most ``m`` passages, scored ``w`` times the citing passage's score, kept
if higher), applied to one BM25 run of depth 100; the graph is the corpus folder's (``xref/references.jsonl`` when
``rirag data xref`` wrote it, else resolved on the fly). The grid is read on the same questions, so a gain would be
optimistic; a grid with no gain says expansion does not help BM25 here.

Usage:

    python benchmarks/xref_expansion.py --data ../shared/data/obliqa --pra out/pra \\
        --out benchmarks/results/xref_expansion.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from rirag.constants import RUN_DEPTH
from rirag.data.obliqa import load_obliqa, resolve_data_dir
from rirag.data.questions import load_questions
from rirag.data.runs import ranked
from rirag.io import atomic_write_json
from rirag.retrieval.metrics import evaluate_run
from rirag.retrieval.registry import RetrieverSpec, build_retriever
from rirag.xref.expansion import XrefExpansion, corpus_graph

REPO = Path(__file__).resolve().parents[1]
GRID = [(n, w, m) for n in (1, 3, 5, 10) for w in (0.5, 0.8, 0.95, 0.999) for m in (1, 5)]


def grid_rows(base, run: dict, graph, corpus, score) -> list[dict]:
    """BM25's row, then one row per grid cell: the run expanded by the library's wrapper, scored by ``score``."""
    rows = [{"run": "bm25", **score(run)}]
    for n, w, m in GRID:
        expanded = XrefExpansion(base, graph, n, w, m, corpus).expand(run)
        rows.append({"run": f"bm25 + xref (top {n}, w {w}, <= {m} targets)", **score(expanded)})
    return rows


def pair_metrics(run: dict, gold: dict[str, tuple[str, str]]) -> dict:
    both = one = found = 0
    for q, pair in gold.items():
        top = {d for d, _ in ranked(run[q], 10)}
        hits = sum(1 for x in pair if x in top)
        found += hits
        both += hits == 2
        one += hits == 1
    n = len(gold)
    return {"R@10": round(found / (2 * n), 4), "Both@10": round(both / n, 4), "one-only@10": round(one / n, 4)}


def ukfin(pra: Path, questions: Path) -> dict:
    data = load_obliqa(pra)
    corpus = data.corpus
    mapped = load_questions(questions, data)
    gold = mapped.role_pairs("src", "tgt")
    graph = corpus_graph(pra)
    links: Counter = Counter()
    for src, tgt in gold.values():
        linked = any(tgt in link.targets for link in graph.links(src))
        kind = "footnote" if corpus[tgt].passage_id.startswith("footnote") else "provision"
        links[f"{kind} target, {'linked' if linked else 'not linked'}"] += 1
    base = build_retriever(corpus, RetrieverSpec("bm25"))
    run = base.search({q.id: q.text for q in mapped.questions if q.id in gold}, k=RUN_DEPTH)
    return {"questions": len(mapped.questions), "gold pairs mapped": len(gold),
            "gold passages mapped by": mapped.report()["by"],
            "source -> target links": dict(sorted(links.items())),
            "rows": grid_rows(base, run, graph, corpus, lambda r: pair_metrics(r, gold))}


def obliqa_mp(data: Path, mp: Path) -> dict:
    corpus = load_obliqa(data).corpus
    graph = corpus_graph(data)
    questions = json.loads((mp / "ObliQA_MultiPassage_val.json").read_text(encoding="utf-8"))
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (mp / "qrels_val.txt").read_text(encoding="utf-8").splitlines():
        q, _, d, rel = line.split()
        qrels[q][d] = int(rel)
    linked = sum(1 for gold in qrels.values()
                 if any(b in link.targets for a in gold for link in graph.links(a) for b in gold if b != a))
    base = build_retriever(corpus, RetrieverSpec("bm25"))
    run = base.search({q["QuestionID"]: q["Question"] for q in questions}, k=RUN_DEPTH)

    def scores(r: dict) -> dict:
        m = evaluate_run(dict(qrels), r)
        return {"R@10": round(m["recall@10"], 4), "MAP@10": round(m["map@10"], 4)}

    return {"questions": len(questions), "questions with a gold passage referring to another": linked,
            "rows": grid_rows(base, run, graph, corpus, scores)}


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
