"""Cross-reference resolver (``rirag.xref``): precision and recall of detection and resolution on the labelled
sample ``benchmarks/xref/labels.jsonl`` (guidelines: ``benchmarks/xref/GUIDELINES.md``).

The sample is of passages, each with every reference it makes labelled by reading (so missed references count):
ADGM passages from the ObliQA corpus and PRA passages from the PRA Rulebook pages. A label names its passage by
(document key, passage number, text) and each reference by its surface text and occurrence in the passage, so labels
survive id schemes; they are mapped onto the corpus given at run time. A labelled in-corpus reference names its target
(document, number or chapter or range); its ids are expanded by the resolver's documented resolution rule, so what is
measured is which provision a reference is resolved to, not the expansion convention.

* detection: a predicted reference is right when it overlaps a labelled one (one to one); precision over predicted,
  recall over labelled (external and unresolvable references included: they must be found, and left unresolved);
* resolution: a resolved prediction is right when its ids equal the label's; precision over resolved predictions,
  recall over labelled references whose target is in the corpus.

Two sets: ``tuning`` (passages read while the resolver was written and corrected) and ``held-out`` (drawn and labelled
after the resolver was frozen at the first version; its first numbers are in ``research`` of the results).

Usage (the PRA corpus is ``rirag data ingest ../shared/data/pra_rulebook --out out/pra``):

    python benchmarks/xref_eval.py --data ../shared/data/obliqa --pra out/pra --out benchmarks/results/xref.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from rapidfuzz import fuzz

from rirag.io import atomic_write_json
from rirag.xref.numbers import aliases_from_names, parse_number
from rirag.xref.passages import xref_passages
from rirag.xref.records import Passage
from rirag.xref.resolver import Resolver

HERE = Path(__file__).resolve().parent


def _norm(s: str) -> str:
    return " ".join(s.replace("\u200e", "").split())


def load_corpus(path: Path) -> tuple[list[Passage], dict[str, str], dict[str, list[str]]]:
    """Passages, aliases and each document's names (to map the labels' document keys): a corpus folder in the
    ObliQA layout, or a JSONL of {id, document, title, number, text}."""
    names: dict[str, list[str]] = {}
    if path.is_file():
        passages = []
        for line in path.open(encoding="utf-8"):
            r = json.loads(line)
            doc = str(r["document"])
            names.setdefault(doc, [doc, r.get("title") or doc])
            passages.append(Passage(str(r["id"]), doc, r.get("title") or doc, r.get("number") or "", r["text"],
                                    chapter=r.get("chapter")))
        return passages, aliases_from_names({d: ns[1:] for d, ns in names.items()}), names
    passages, aliases = xref_passages(path)
    dm = path / "document_map.json"
    raw = json.loads(dm.read_text(encoding="utf-8")) if dm.exists() else {}
    for doc, ns in raw.items():
        names[str(doc)] = [str(doc), *([ns] if isinstance(ns, str) else ns)]
    return passages, aliases, names


def map_document(key: str, names: dict[str, list[str]]) -> str | None:
    """A label's document key: a DocumentID, or a page's slug ("pra-rules_own-funds") inside its file name."""
    for doc, ns in names.items():
        if key == doc or key in ns:
            return doc
    pat = re.compile(rf"(?:^|[_/]){re.escape(key)}(?:_\d\d-\d\d-\d{{4}}|\.html?|$)")
    hits = [doc for doc, ns in names.items() if any(pat.search(n) for n in ns)]
    return hits[0] if len(hits) == 1 else None


def map_passage(rec: dict, doc: str, by_doc: dict[str, list[Passage]]) -> Passage | None:
    """The corpus passage a label names: same number (read the same way) if any, then the closest text."""
    cands = by_doc.get(doc, [])
    n = parse_number(rec["number"])
    same = [p for p in cands if (lambda q: (q.main, q.paras))(parse_number(p.number)) == (n.main, n.paras)]
    want = _norm(rec["text"])[:200]
    best, score = None, 0.0
    for pool in (same, cands):
        for p in pool:
            s = fuzz.ratio(_norm(p.text)[:len(want)], want)
            if s > score:
                best, score = p, s
        if score >= 85:
            return best
    for p in cands:  # a passage joined with the one before it, or cut differently: the labelled text inside it
        s = fuzz.partial_ratio(want, _norm(p.text))
        if s > score:
            best, score = p, s
    return best if score >= 90 else None


def locate(text: str, surface: str, occurrence: int) -> tuple[int, int] | None:
    """The span of the ``occurrence``-th appearance of ``surface`` (spacing and invisible marks ignored; a surface
    not ending in ")" does not match inside a longer number or before a paragraph mark)."""
    toks = [re.escape(t) for t in re.findall(r"\w+|[^\w\s]", surface)]
    pat = r"(?<![\w.])" + r"[\s\u200e]*".join(toks) + (r"(?![\w])" if surface.endswith(")") else r"(?![\w(])")
    hits = list(re.finditer(pat, text))
    return hits[occurrence].span() if occurrence < len(hits) else None


def _count(items) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for x in items:
        out[x.split(" (")[0]] += 1
    return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def evaluate(labels: list[dict], corpus: Path) -> dict:
    passages, aliases, names = load_corpus(corpus)
    resolver = Resolver(passages, aliases)
    by_doc: dict[str, list[Passage]] = defaultdict(list)
    for p in passages:
        by_doc[p.document_id].append(p)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    errors: list[dict] = []
    for rec in labels:
        c = counts[rec["set"]]
        doc = map_document(rec["document"], names)
        p = map_passage(rec, doc, by_doc) if doc else None
        if p is None:
            c["passages_unmapped"] += 1
            c["gold_in_unmapped_passages"] += len(rec["refs"])
            errors.append({"sample": rec["sample"], "error": "passage not found in the corpus"})
            continue
        c["passages"] += 1
        preds = resolver.references(p)
        golds = []
        for g in rec["refs"]:
            span = locate(p.text, g["surface"], g["occurrence"])
            if span is None:
                c["gold_unlocated"] += 1
                errors.append({"sample": rec["sample"], "gold": g, "error": "labelled text not found in the passage"})
                continue
            ids: set[str] = set()
            if g["status"] == "in":
                tdoc = map_document(g["document"], names)
                ids = set(resolver.lookup(tdoc, g["kind"], g["number"], g.get("schedule"))) if tdoc else set()
                if not ids:
                    c["gold_target_not_in_corpus"] += 1
                    errors.append({"sample": rec["sample"], "gold": g, "error": "labelled target not in this corpus"})
            golds.append((span, g, ids))
        c["gold"] += len(golds)
        c["gold_in"] += sum(1 for _, g, ids in golds if ids)
        c["pred"] += len(preds)
        c["pred_resolved"] += sum(1 for r in preds if r.resolved)
        used: set[int] = set()
        for r in preds:
            match = next((i for i, (span, _, _) in enumerate(golds)
                          if i not in used and r.start < span[1] and span[0] < r.end), None)
            if match is None:
                errors.append({"sample": rec["sample"], "pred": r.surface, "error": "false detection",
                               "resolved": r.resolved, "reason": r.reason})
                continue
            used.add(match)
            c["matched"] += 1
            _, g, ids = golds[match]
            if r.resolved and ids and set(r.targets) == ids:
                c["resolved_correct"] += 1
            elif r.resolved and ids:
                errors.append({"sample": rec["sample"], "pred": r.surface, "gold": g, "error": "wrong targets",
                               "predicted": len(r.targets), "labelled": len(ids),
                               "shared": len(set(r.targets) & ids)})
            elif r.resolved:
                errors.append({"sample": rec["sample"], "pred": r.surface, "gold": g,
                               "error": "resolved a reference that has no target in the corpus"})
            elif ids:
                errors.append({"sample": rec["sample"], "pred": r.surface, "gold": g,
                               "error": f"left unresolved ({r.reason})"})
        for i, (_, g, _) in enumerate(golds):
            if i not in used:
                errors.append({"sample": rec["sample"], "gold": g, "error": "missed"})

    def metrics(c: dict) -> dict:
        return {
            "passages": c["passages"], "passages_unmapped": c["passages_unmapped"],
            "labelled_references": c["gold"], "labelled_in_corpus": c["gold_in"],
            "predicted": c["pred"], "predicted_resolved": c["pred_resolved"],
            "detection_precision": _ratio(c["matched"], c["pred"]),
            "detection_recall": _ratio(c["matched"], c["gold"]),
            "resolution_precision": _ratio(c["resolved_correct"], c["pred_resolved"]),
            "resolution_recall": _ratio(c["resolved_correct"], c["gold_in"]),
            "counts": dict(sorted(c.items())),
        }

    total: dict[str, int] = defaultdict(int)
    for c in counts.values():
        for k, v in c.items():
            total[k] += v
    return {"sets": {s: metrics(c) for s, c in sorted(counts.items())}, "all": metrics(total),
            "errors": errors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labels", default=str(HERE / "xref" / "labels.jsonl"))
    ap.add_argument("--data", default=None, help="the ObliQA (ADGM) corpus folder (default: $RIRAG_DATA_DIR)")
    ap.add_argument("--pra", default=None, help="the ingested PRA corpus folder (or a JSONL of passages)")
    ap.add_argument("--out", default=None, help="write the results JSON here")
    ap.add_argument("--errors", default=None, help="write every error (missed, false, wrong target) here")
    args = ap.parse_args(argv)
    from rirag.data.obliqa import resolve_data_dir

    labels = [json.loads(line) for line in open(args.labels, encoding="utf-8")]
    corpora = {"adgm": resolve_data_dir(args.data)}
    if args.pra:
        corpora["pra"] = Path(args.pra)
    def shown(path) -> str:  # paths inside the repository are written relative to it
        p = Path(path).resolve()
        return str(p.relative_to(HERE.parent)) if p.is_relative_to(HERE.parent) else str(path)

    command = "python benchmarks/xref_eval.py" + "".join(
        f" --{k} {v}" for k, v in (("data", args.data), ("pra", args.pra), ("out", args.out)) if v)
    results: dict = {"benchmark": "benchmarks/xref_eval.py", "command": command, "labels": shown(args.labels),
                     "guidelines": "benchmarks/xref/GUIDELINES.md",
                     "corpora": {k: shown(v) for k, v in corpora.items()}, "rows": [], "errors": {}, "counts": {}}
    errors: dict[str, list] = {}
    for corpus in sorted({r["corpus"] for r in labels}):
        if corpus not in corpora:
            results["rows"].append({"corpus": corpus, "set": "skipped: no corpus given (--pra)"})
            continue
        res = evaluate([r for r in labels if r["corpus"] == corpus], corpora[corpus])
        errors[corpus] = res.pop("errors")
        results["errors"][corpus] = dict(sorted(_count(e["error"] for e in errors[corpus]).items()))
        for name, m in {"all": res["all"], **res["sets"]}.items():
            results["counts"][f"{corpus} {name}"] = m.pop("counts")
            results["rows"].append({"corpus": corpus, "set": name, **m})
    for row in results["rows"]:
        sys.stdout.write(" ".join(f"{k}={v}" for k, v in row.items()) + "\n")
    if args.out:
        atomic_write_json(args.out, results)
    if args.errors:
        atomic_write_json(args.errors, errors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
