"""The PRA Rulebook ingested as HTML, PDF and Word (issue 66): what the PDF and DOCX corpora keep of the HTML one.

Usage:
    python benchmarks/make_format_docs.py                      # out/formats/{pdf,docx}: the printed pages
    python benchmarks/ingest_formats.py [--pages ../shared/data/pra_rulebook] [--docs out/formats]
                                        [--questions ../shared/data/ukfin_xref/ukfin_dev_questions.json]
                                        [--work out/ingest_formats] [--default] [--sample 20]

Each format is ingested by ``rirag data ingest`` as a user runs it (a fresh process: wall seconds, peak RSS of that
process, pages/s; PDF pages are printed pages), its cross-references resolved by ``rirag data xref``. Against the
HTML corpus, document by document (the same file stem):

- ``text_recovered``: the share of the HTML corpus's words found in the same order in the format's (the longest
  common subsequence of the two documents' word sequences, passages in corpus order; ``words_only`` leaves out tokens
  without a letter or digit, such as a table's ``|``);
- ``labels``: the share of HTML PassageIDs the format's document has; ``rules``: of HTML rule numbers;
  ``heading_paths``: of the HTML documents' distinct heading paths, and of passages whose label both have, the share
  with the same path;
- ``layout_passages``: the format's passages holding Chromium's running header or footer (its date stamp, the file
  address, the page's ``<title>``) or a line that is only a page number (must be 0);
- ``xref_resolved``: references resolved (``rirag data xref``), and the ratio to HTML's;
- BM25 (and with ``--default`` the default retriever) on the 80 PRA development questions, their gold mapped to
  each corpus by text as ``rirag data ingest --questions`` maps it: R@10, Both@10.

``libraries``: pages/s of each candidate PDF library's text extraction on the same ``--sample`` files (the first N
by name), each in a fresh process, one after another; a library that is not installed is listed as such
(``--library-path DIR``: where one installed apart lies, ``pip install --target DIR docling-parse``;
``--libraries-only`` times them again and keeps the rest of the results file).
Writes benchmarks/results/ingest_formats.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "ingest_formats.json"
SHARED = REPO.parent / "shared" / "data"
#: What Chromium prints in its running header and footer: the date stamp, the file's address, the page count.
CHROMIUM_STAMP = re.compile(r"\b\d{1,2}/\d{1,2}/\d{2}, \d{1,2}:\d{2}\s?[AP]M\b|file://|Handbook & Rulebook")
PAGE_LINE = re.compile(r"^(?:page\s+)?\d{1,4}\s*(?:/|of)\s*\d{1,4}$", re.IGNORECASE)


def _run(cmd: list[str]) -> dict:
    """``cmd`` in a fresh process: wall and CPU seconds and its peak RSS (MiB): the largest ``VmHWM`` its
    ``/proc/PID/status`` shows once it runs ``cmd`` (polled every 50 ms). Not ``ru_maxrss``: Linux keeps a process's
    high-water mark across ``exec``, so a child of this process (which holds the corpora it read) would report this
    process's size."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    peak = 0
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _high_water_kib(proc.pid, cmd[-1]))
            time.sleep(0.05)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode('utf-8', 'replace')[-2000:]}")
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mib": round(peak / 1024, 1)}


def _high_water_kib(pid: int, last_arg: str) -> int:
    """A running process's ``VmHWM`` (KiB) once its command line is ours (before ``exec`` it is a copy of this
    process); 0 before then or once it is gone."""
    try:
        if last_arg not in Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace"):
            return 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _corpus(folder: Path) -> dict[str, list[dict]]:
    """The corpus's passages by document key (its source file's stem)."""
    doc_map = json.loads((folder / "document_map.json").read_text("utf-8"))
    out: dict[str, list[dict]] = {}
    for f in sorted((folder / "documents").glob("*.json"), key=lambda p: int(p.stem)):
        for rec in json.loads(f.read_text("utf-8")):
            out.setdefault(Path(doc_map[str(rec["DocumentID"])][0]).stem, []).append(rec)
    return out


def _words(passages: list[dict], words_only: bool) -> list[str]:
    words = " ".join(p["Passage"] for p in passages).split()
    return [w for w in words if any(c.isalnum() for c in w)] if words_only else words


def compare(html: dict[str, list[dict]], other: dict[str, list[dict]]) -> dict:
    """What ``other`` keeps of ``html``, document by document (module docstring)."""
    from rapidfuzz.distance import LCSseq

    found = {False: 0, True: 0}
    total = {False: 0, True: 0}
    labels = rules = rule_total = paths = path_total = same = both = 0
    label_total = 0
    for key, passages in html.items():
        theirs = other.get(key, [])
        for words_only in (False, True):
            a, b = _words(passages, words_only), _words(theirs, words_only)
            total[words_only] += len(a)
            found[words_only] += LCSseq.similarity(a, b) if a and b else 0
        by_label = {p["PassageID"]: p for p in theirs}
        their_rules = {p["Rule"] for p in theirs if p["Rule"]}
        their_paths = {tuple(p["Headings"]) for p in theirs}
        label_total += len(passages)
        for p in passages:
            q = by_label.get(p["PassageID"])
            labels += q is not None
            if q is not None:
                both += 1
                same += q["Headings"] == p["Headings"]
            if p["Rule"]:
                rule_total += 1
                rules += p["Rule"] in their_rules
        mine = {tuple(p["Headings"]) for p in passages}
        path_total += len(mine)
        paths += len(mine & their_paths)
    share = lambda n, d: round(n / d, 4) if d else None  # noqa: E731
    return {
        "documents": len(other), "documents_missing": sorted(set(html) - set(other))[:10],
        "text_recovered": share(found[False], total[False]),
        "text_recovered_words_only": share(found[True], total[True]),
        "labels": share(labels, label_total), "rules": share(rules, rule_total),
        "heading_paths": share(paths, path_total),
        "same_heading_path_where_label_matches": share(same, both),
    }


def layout_passages(corpus: dict[str, list[dict]]) -> dict:
    bad = [p for ps in corpus.values() for p in ps
           if CHROMIUM_STAMP.search(p["Passage"]) or any(PAGE_LINE.match(x.strip()) for x in p["Passage"].splitlines())]
    return {"count": len(bad), "examples": [p["Passage"][:160] for p in bad[:5]]}


def retrieval(folder: Path, questions: Path, default: bool) -> dict:
    from rirag.constants import EVAL_K, RUN_DEPTH
    from rirag.data.obliqa import load_obliqa
    from rirag.data.questions import load_questions
    from rirag.data.splits import qrels_of
    from rirag.retrieval.defaults import default_retriever
    from rirag.retrieval.metrics import evaluate_run, pair_metrics
    from rirag.retrieval.registry import build_retriever, retriever_spec

    corpus = load_obliqa(folder)
    qset = load_questions(questions, corpus)
    report = qset.report()
    out = {"gold_mapped": report["gold_mapped"], "gold_items": report["gold_items"], "gold_by": report["by"]}
    specs = {"bm25": retriever_spec("bm25", None, [])}
    if default:
        specs["default"] = default_retriever()
    for name, spec in specs.items():
        run = build_retriever(corpus.corpus, spec).search({q.id: q.text for q in qset.questions}, k=RUN_DEPTH)
        result = evaluate_run(qrels_of(qset.questions), run, k=EVAL_K)
        pairs = pair_metrics(qset.items, run, k=EVAL_K)
        out[f"{name}_recall@10"] = round(result["recall@10"], 4)
        out[f"{name}_both@10"] = round(pairs["both@10"], 4)
        out["pairs"] = pairs["pair_questions"]
    return out


def _pdf_pages(files: list[Path]) -> int:
    import pypdfium2 as pdfium

    n = 0
    for f in files:
        pdf = pdfium.PdfDocument(str(f))
        n += len(pdf)
        pdf.close()
    return n


def _pdfium_text(f: Path) -> None:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(f))
    for page in pdf:
        page.get_textpage().get_text_range()
    pdf.close()


def _rirag_pdf(f: Path) -> None:
    from rirag.data.ingest.pdf_file import read_pdf_file
    from rirag.data.ingest.raw import Dropped
    from rirag.errors import DataError

    try:
        for _ in read_pdf_file(f, f.parent, Dropped()):
            pass
    except DataError:  # a page that is its title alone: read whole, then refused
        pass


def _pdfplumber_text(f: Path) -> None:
    import pdfplumber

    with pdfplumber.open(str(f)) as pdf:
        for page in pdf.pages:
            page.extract_text()


def _pypdf_text(f: Path) -> None:
    from pypdf import PdfReader

    for page in PdfReader(str(f)).pages:
        page.extract_text()


def _docling_parse_text(f: Path) -> None:
    from docling_core.types.doc.page import TextCellUnit
    from docling_parse.pdf_parser import DoclingPdfParser

    doc = DoclingPdfParser().load(path_or_stream=str(f))
    for _, page in doc.iterate_pages():
        [cell.text for cell in page.iterate_cells(unit_type=TextCellUnit.LINE)]
    doc.unload()


LIBRARIES = {
    "pypdfium2 (text only)": ("pypdfium2", _pdfium_text),
    "rirag pdf reader (pypdfium2, layout and structure)": ("pypdfium2", _rirag_pdf),
    "pdfplumber (pdfminer.six)": ("pdfplumber", _pdfplumber_text),
    "pypdf": ("pypdf", _pypdf_text),
    "docling-parse": ("docling-parse", _docling_parse_text),
}


def time_library(name: str, files: list[Path]) -> dict | str:
    """One library's text extraction over ``files``, in this process: its version, seconds, pages/s."""
    import importlib.metadata as md

    dist, fn = LIBRARIES[name]
    try:
        version = md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"
    pages = _pdf_pages(files)
    start = time.perf_counter()
    for f in files:
        fn(f)
    wall = time.perf_counter() - start
    return {"version": version, "wall_s": round(wall, 1), "pages_per_s": round(pages / wall, 1)}


def libraries(files: list[Path], extra_path: str) -> dict:
    """Each library timed in a fresh process of its own, one after another (``extra_path``: a folder put first on
    the path of those processes, where a library installed apart lies: ``pip install --target DIR docling-parse``,
    whose dependencies would change the project's environment)."""
    out: dict = {"files": len(files), "pages": _pdf_pages(files), "extra_path": bool(extra_path)}
    path = os.pathsep.join(x for x in (extra_path, str(REPO / "src")) if x)
    for name in LIBRARIES:
        proc = subprocess.run([sys.executable, __file__, "--time-library", name, "--files", *map(str, files)],
                              env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True)
        out[name] = json.loads(proc.stdout) if proc.returncode == 0 else f"failed: {proc.stderr.strip()[-300:]}"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default=str(SHARED / "pra_rulebook"))
    ap.add_argument("--docs", default=str(REPO / "out" / "formats"), help="make_format_docs.py's --out")
    ap.add_argument("--questions", default=str(SHARED / "ukfin_xref" / "ukfin_dev_questions.json"))
    ap.add_argument("--work", default=str(REPO / "out" / "ingest_formats"), help="where the corpora are written")
    ap.add_argument("--default", action="store_true", help="the default retriever too (embeds each corpus)")
    ap.add_argument("--sample", type=int, default=20, help="PDF files the libraries are timed on")
    ap.add_argument("--load", default="", help="what else ran on the machine meanwhile (recorded as said)")
    ap.add_argument("--library-path", default="", help="a folder of libraries installed apart (docling-parse)")
    ap.add_argument("--libraries-only", action="store_true", help="time the libraries again, keep the rest")
    ap.add_argument("--time-library", help=argparse.SUPPRESS)
    ap.add_argument("--files", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.time_library:  # the child process of libraries()
        print(json.dumps(time_library(args.time_library, [Path(f) for f in args.files])))
        return 0
    sample = sorted((Path(args.docs) / "pdf").glob("*.pdf"))[: args.sample]
    if args.libraries_only:
        row = json.loads(RESULTS.read_text("utf-8"))
        row["libraries"] = libraries(sample, args.library_path)
        RESULTS.write_text(json.dumps(row, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(json.dumps(row["libraries"], indent=2))
        return 0
    docs, work = Path(args.docs), Path(args.work)
    sources = {"html": Path(args.pages), "pdf": docs / "pdf", "docx": docs / "docx"}
    row: dict = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0], "other_load": args.load, "formats": {},
                 "against_html": {}, "retrieval": {}, "dropped": {}, "layout_examples": {}}
    corpora = {}
    for fmt, src in sources.items():
        out = work / fmt
        files = sorted(src.glob(f"*.{fmt}"))
        ingest = _run([sys.executable, "-m", "rirag.cli", "data", "ingest", str(src), "--out", str(out)])
        pages = _pdf_pages(files) if fmt == "pdf" else len(files)
        xref = _run([sys.executable, "-m", "rirag.cli", "data", "xref", "--data", str(out)])
        report = json.loads((out / "ingest_report.json").read_text("utf-8"))
        summary = json.loads((out / "xref" / "summary.json").read_text("utf-8"))
        corpora[fmt] = _corpus(out)
        row["formats"][fmt] = {
            "files": len(files), "pages": pages, **{f"ingest_{k}": v for k, v in ingest.items()},
            "ingest_pages_per_s": round(pages / ingest["wall_s"], 1),
            "documents": report["documents"], "passages": report["passages"],
            "skipped": len(report.get("skipped", [])), "xref_resolved": summary["resolved"],
            "xref_references": summary["references"], "xref_wall_s": xref["wall_s"],
            "layout_passages": layout_passages(corpora[fmt])["count"],
        }
        row["dropped"][fmt] = report["dropped"]
        row["retrieval"][fmt] = retrieval(out, Path(args.questions), args.default)
        row["layout_examples"][fmt] = layout_passages(corpora[fmt])["examples"]
    html = row["formats"]["html"]
    for fmt in ("pdf", "docx"):
        this, runs = row["formats"][fmt], row["retrieval"]
        row["against_html"][fmt] = {
            **compare(corpora["html"], corpora[fmt]),
            "layout_passages": this["layout_passages"],
            "xref_resolved_ratio": round(this["xref_resolved"] / html["xref_resolved"], 4),
            **{f"{name}_both@10_minus_html": round(runs[fmt][f"{name}_both@10"] - runs["html"][f"{name}_both@10"], 4)
               for name in ("bm25", "default") if f"{name}_both@10" in runs[fmt]},
        }
    row["libraries"] = libraries(sample, args.library_path)
    RESULTS.write_text(json.dumps(row, indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(json.dumps(row, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
