"""Does following cross-references (``FocusedConfig.follow_references``, :mod:`rirag.generation.focused.follow`) make
the focused answer cite both passages a question needs, without citing wrong ones?

Two question sets whose questions need more than one passage, each answered over the top 10 of a run (``--mp-run``,
``--pra-run``; default BM25) through the answerer's default context filter (``--context-filter``):

* ``obliqa-mp``: ObliQA-MP validation (2-6 gold passages, qrels by passage id) over ObliQA, with the graph
  ``rirag data xref --data ../shared/data/obliqa --out DIR`` wrote (``--mp-graph DIR``);
* ``ukfin``: the 80 PRA questions of ``../shared/data/ukfin_xref`` (a rule and the rule it cross-references, given
  as text, mapped by the library's question loader, :func:`rirag.data.questions.load_questions`) over ``--pra``
  with its graph ``PRA/xref``.

Per question, the cited passages C against the gold G: precision |C & G| / |C| (mean over answers citing
something), recall |C & G| / |G| and cite-all (G within C: cite-both for the PRA pairs; "ret-all": G within the
given passages, the ceiling without corpus targets). Following itself: the share of answers that follow a
reference, the share of those following a gold edge (a cited gold passage's reference to another gold passage), and
``linkable_followed``: of the answers citing a gold passage that refers to another gold passage, the share that
follow that link; ``open_link_followed``: the same over the answers that do not already cite that other gold passage
(where following has something to add: with a retriever whose context holds both rules, the answer often cites both
without following). The focused answer as it is ("off") against following (as the answerer does it: two cited
rules, one referring to the other, joined first, :func:`rirag.generation.focused.follow.connect_linked`; then the
references followed) over a small grid: ``follow_ratio`` (a
followed unit's score against the lead unit's), ``follow_in_unit`` (only references written in the kept unit) and
``follow_scope`` (``retrieved``: targets among the given passages only; ``corpus``: any passage of the corpus). The
default is chosen on both sets, which are development data (ObliQA-MP validation and the PRA development
questions; no test split): the best mean cite-all whose precision is at most 0.02 below "off" on each.

Usage:

    rirag data xref --data ../shared/data/obliqa --out out/follow/obliqa_xref
    rirag data ingest ../shared/data/pra_rulebook --out out/pra && rirag data xref --data out/pra
    python benchmarks/follow_references.py --pra out/pra --mp-graph out/follow/obliqa_xref \\
        [--pra-run out/runs/pra_default.trec] --out benchmarks/results/follow_references.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from rirag.constants import DEFAULT_CONTEXT_FILTER, RUN_DEPTH
from rirag.data.obliqa import load_obliqa, resolve_data_dir
from rirag.data.questions import load_questions
from rirag.data.runs import read_trec
from rirag.generation.focused import FocusedAnswerer
from rirag.generation.focused.follow import connect_linked, follow
from rirag.generation.pipeline import select_passages
from rirag.io import atomic_write_json, portable_path
from rirag.retrieval.bm25 import BM25Index
from rirag.xref.graph import ReferenceGraph

REPO = Path(__file__).resolve().parents[1]
GRID = [(ratio, in_unit, scope) for scope in ("retrieved", "corpus") for in_unit in (False, True)
        for ratio in (0.0, 0.25, 0.5, 0.75, 0.9)]
PRECISION_SLACK = 0.02


def ukfin_gold(pra: Path, questions: Path) -> tuple[list[tuple[str, str]], dict[str, set[str]]]:
    """The PRA questions and their (source, target) gold passage ids, mapped by the library's question loader
    (:func:`rirag.data.questions.load_questions`: the passage of the named page holding the text, then any passage,
    then fuzzy containment), as ``benchmarks/xref_expansion.py`` and ``benchmarks/transfer.py`` map them."""
    mapped = load_questions(questions, load_obliqa(pra))
    pairs = mapped.role_pairs("src", "tgt")
    return [(q.id, q.text) for q in mapped.questions if q.id in pairs], {q: set(p) for q, p in pairs.items()}


def mp_gold(mp: Path) -> tuple[list[tuple[str, str]], dict[str, set[str]]]:
    questions = json.loads((mp / "ObliQA_MultiPassage_val.json").read_text(encoding="utf-8"))
    gold: dict[str, set[str]] = defaultdict(set)
    for line in (mp / "qrels_val.txt").read_text(encoding="utf-8").splitlines():
        q, _, d, rel = line.split()
        if int(rel) > 0:
            gold[q].add(d)
    return [(q["QuestionID"], q["Question"]) for q in questions if q["QuestionID"] in gold], dict(gold)


class Memo:
    """Embeddings and obligation flags memoised by text (the grid re-scores the same units)."""

    def __init__(self, answerer: FocusedAnswerer):
        self.answerer, self.emb, self.obl = answerer, {}, {}
        answerer.warm()  # the loaded encoder and obligation detector, memoised below
        self.encode_fn, self.obl_fn = answerer._encode, answerer._is_obligation

    def encode(self, texts):
        new = [t for t in dict.fromkeys(texts) if t not in self.emb]
        if new:
            for t, e in zip(new, self.encode_fn(new)):
                self.emb[t] = e
        return np.stack([np.asarray(self.emb[t]) for t in texts])

    def is_obligation(self, texts):
        new = [t for t in dict.fromkeys(texts) if t not in self.obl]
        if new:
            for t, o in zip(new, self.obl_fn(new)):
                self.obl[t] = o
        return [self.obl[t] for t in texts]


def cited_ids(answer, ids: list[str]) -> set[str]:
    extended = [*ids, *(a.id for a in answer.added)]
    return {extended[n - 1] for k in answer.kept for n in k.numbers}


def evaluate(name: str, questions, gold, corpus, graph: ReferenceGraph, context: str = DEFAULT_CONTEXT_FILTER,
             run: str | None = None) -> dict:
    if run is None:
        texts = {pid: p.text for pid, p in corpus.items() if p.text.strip()}
        index = BM25Index().index(list(texts), list(texts.values()), log=False)
        run = index.search(dict(questions), k=RUN_DEPTH)
    else:
        run = read_trec(run)
    answerer = FocusedAnswerer()
    memo = Memo(answerer)
    answerer._encode, answerer._is_obligation = memo.encode, memo.is_obligation
    features, cache = answerer.features, {}

    def cached_features(question, passages, scores=None):  # the grid scores the same corpus targets again
        key = (question, tuple(passages), tuple(scores) if scores is not None else None)
        if key not in cache:
            cache[key] = features(question, passages, scores)
        return cache[key]

    answerer.features = cached_features
    answerer.attach_references(graph, corpus)  # read by the variants only: the base answer follows nothing
    base_cfg = answerer.config
    variants = {"off": None, **{f"follow ratio {r} {'in-unit' if u else 'passage'} {s}": (r, u, s)
                                for r, u, s in GRID}}
    per: dict[str, list[dict]] = {v: [] for v in variants}
    start = time.perf_counter()
    for i, (qid, question) in enumerate(questions):
        passages = select_passages(run.get(qid, {}), corpus, k=10, context=context)
        ptexts, ids, scores = [p.text for p in passages], [p.id for p in passages], [p.score for p in passages]
        answerer.config = base_cfg
        cache.clear()
        base = answerer.answer(question, ptexts, scores)
        g = gold[qid]
        # the answer cites a gold rule whose passage refers to another gold rule: following could cite both
        linkable = any(t in g and t != src for src in cited_ids(base, ids) & g for link in graph.links(src)
                       for t in link.targets)
        # ... and the other gold rule is not cited already: following has something to add
        base_cited = cited_ids(base, ids)
        open_link = any(t in g and t != src and t not in base_cited for src in base_cited & g
                        for link in graph.links(src) for t in link.targets)
        for v, setting in variants.items():
            if setting is None:
                a = base
            else:
                ratio, in_unit, scope = setting
                answerer.config = replace(base_cfg, follow_references=True, follow_ratio=ratio,
                                          follow_in_unit=in_unit)
                # as the answerer does with following on: two cited rules, one referring to the other, joined
                joined = connect_linked(base, ptexts, ids, answerer.context_links(ids))
                a = follow(answerer, joined, ptexts, ids, scores, graph, corpus if scope == "corpus" else {})
            c = cited_ids(a, ids)
            per[v].append({"cited": len(c), "hit": len(c & g), "gold": len(g), "all": g <= c,
                           "retrieved_all": g <= set(ids), "followed": len(a.followed), "added": len(a.added),
                           "words": sum(k.unit.words for k in a.kept), "linkable": linkable, "open_link": open_link,
                           "gold_edge": any(_source_id(f, ids) in g and f.target_id in g
                                            and f.target_id != _source_id(f, ids) for f in a.followed)})
        if (i + 1) % 20 == 0:
            sys.stderr.write(f"{name}: {i + 1}/{len(questions)} in {time.perf_counter() - start:.0f} s\n")
    rows = []
    for v, items in per.items():
        citing = [x for x in items if x["cited"]]
        rows.append({"variant": v,
                     "precision": round(float(np.mean([x["hit"] / x["cited"] for x in citing])), 4),
                     "recall": round(float(np.mean([x["hit"] / x["gold"] for x in items])), 4),
                     "cite_all": round(float(np.mean([x["all"] for x in items])), 4),
                     "answers_following": round(float(np.mean([x["followed"] > 0 for x in items])), 4),
                     # of the answers that follow something, the share following a gold edge (gold rule -> gold rule)
                     "following_gold_edge": _share([x["gold_edge"] for x in items if x["followed"]]),
                     # of the answers citing a gold rule that refers to another gold rule, the share following it
                     "linkable_followed": _share([x["gold_edge"] for x in items if x["linkable"]]),
                     # ... of those whose other gold rule is not cited without following
                     "open_link_followed": _share([x["gold_edge"] for x in items if x["open_link"]]),
                     "mean_cited": round(float(np.mean([x["cited"] for x in items])), 3),
                     "mean_words": round(float(np.mean([x["words"] for x in items])), 1),
                     "max_words": int(max(x["words"] for x in items))})
    return {"questions": len(questions), "graph": graph.source,
            "retrieved_all": round(float(np.mean([x["retrieved_all"] for x in per["off"]])), 4),
            "linkable_answers": sum(x["linkable"] for x in per["off"]),
            "open_link_answers": sum(x["open_link"] for x in per["off"]),
            "seconds": round(time.perf_counter() - start, 1), "rows": rows}


def _source_id(f, ids: list[str]) -> str | None:
    """The id of the passage a followed reference was written in (a given passage: its number is within ``ids``)."""
    return ids[f.source - 1] if 0 < f.source <= len(ids) else None


def _share(flags: list[bool]) -> float | None:
    return round(float(np.mean(flags)), 4) if flags else None


def choose(parts: list[list[dict]]) -> str:
    """The variant with the highest mean cite-all over the sets whose precision is at most PRECISION_SLACK below
    'off' on every set and whose cite-all is above 'off' on one (ties: the higher mean precision); else 'off'."""
    by = [{r["variant"]: r for r in rows} for rows in parts]
    ok = [v for v in by[0] if v != "off"
          and all(b[v]["precision"] >= b["off"]["precision"] - PRECISION_SLACK for b in by)
          and any(b[v]["cite_all"] > b["off"]["cite_all"] for b in by)]
    return max(ok, key=lambda v: (np.mean([b[v]["cite_all"] for b in by]), np.mean([b[v]["precision"] for b in by])),
               default="off")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="ObliQA folder (default: $RIRAG_DATA_DIR)")
    ap.add_argument("--pra", required=True, help="the ingested PRA corpus folder (its graph in PRA/xref)")
    ap.add_argument("--mp-graph", required=True, help="ObliQA's graph folder (rirag data xref --out)")
    ap.add_argument("--ukfin", default=str(REPO.parent / "shared/data/ukfin_xref/ukfin_dev_questions.json"))
    ap.add_argument("--mp", default=str(REPO.parent / "shared/data/obliqa_mp"))
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each set (a smoke run)")
    ap.add_argument("--context-filter", default=DEFAULT_CONTEXT_FILTER,
                    help=f"the answerer's context of the top 10 (default: the answerer's, {DEFAULT_CONTEXT_FILTER})")
    ap.add_argument("--pra-run", default=None, help="a run of the PRA questions (default: BM25 over --pra)")
    ap.add_argument("--mp-run", default=None, help="a run of ObliQA-MP validation (default: BM25 over ObliQA)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    parts = {}
    root = resolve_data_dir(args.data)
    obliqa = load_obliqa(root)
    qs, gold = mp_gold(Path(args.mp))
    graph = ReferenceGraph(root, graph=Path(args.mp_graph) / "references.jsonl")
    parts["obliqa-mp validation"] = evaluate("obliqa-mp", qs[:args.limit], gold, obliqa.corpus, graph,
                                             args.context_filter, args.mp_run)
    pra = Path(args.pra)
    corpus = load_obliqa(pra).corpus
    qs, gold = ukfin_gold(pra, Path(args.ukfin))
    parts["ukfin (PRA)"] = evaluate("ukfin", qs[:args.limit], gold, corpus, ReferenceGraph(pra, corpus=corpus),
                                    args.context_filter, args.pra_run)
    chosen = choose([part["rows"] for part in parts.values()])
    result = {"benchmark": "benchmarks/follow_references.py",
              "command": "python benchmarks/follow_references.py" + "".join(
                  f" --{k} {portable_path(v) if isinstance(v, str) else v}"
                  for k, v in (("data", args.data), ("pra", args.pra), ("mp-graph", args.mp_graph),
                               ("pra-run", args.pra_run), ("mp-run", args.mp_run),
                               ("context-filter", args.context_filter), ("limit", args.limit),
                               ("out", args.out)) if v),
              "retrieval": {"obliqa-mp validation": args.mp_run or "BM25", "ukfin (PRA)": args.pra_run or "BM25",
                            "context": f"top 10, --context-filter {args.context_filter}"},
              "chosen_on": "obliqa-mp validation and the PRA development questions: the best mean cite_all with "
                           f"precision at most {PRECISION_SLACK} below 'off' on each",
              "chosen": chosen,
              **{name: part for name, part in parts.items()}}
    for name, part in parts.items():
        off = part["rows"][0]
        pick = next(r for r in part["rows"] if r["variant"] == chosen)
        sys.stdout.write(f"{name}: {part['questions']} questions, gold all retrieved {part['retrieved_all']}\n"
                         f"  off:    {off}\n  chosen: {pick}\n")
    if args.out:
        atomic_write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
