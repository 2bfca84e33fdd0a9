"""Peak memory and speed of ``rirag data ingest`` against the size of the file it reads (issue 48: "streaming ingest
keeps peak RSS under 2x the largest file"), on files this script generates: a Markdown file, a generic HTML page and
a JSONL of passage records of ``--mb`` MB each (numbered rules of about 40 words, so a passage costs ~225 bytes of
file: the worst case for what ingest keeps a passage), a folder of ``--files`` Markdown files of the largest size
(what ingest keeps of a corpus grows with its passages, not its largest file), and a tiny file for the
interpreter's own footprint. One document is served whole only up to 256 MiB of corpus JSON, about 120 MB of such
rules: a larger single page is refused at ingest (issue 48, case 1).

Usage:
    python benchmarks/ingest_memory.py [--mb 30 100] [--files 3] [--out benchmarks/results/ingest_memory.json]

Each ingest is a fresh child process (``os.wait4``: that child's peak RSS, not the largest so far); a row gives the
peak, the peak less the tiny file's (what reading the file costs), both as multiples of the file size, the wall
seconds and passages a second. The files are written to a temporary folder and removed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "ingest_memory.json"
RULE = "A firm must keep adequate records of each {n} transaction it makes, in a durable medium, for at least five " \
       "years after the transaction, and make them available to the regulator on request without undue delay."


def _markdown(path: Path, size: int, start: int = 0) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        n = start
        while fh.tell() < size:
            if n % 200 == 0:
                fh.write(f"## Chapter {n // 200 + 1}\n\n")
            fh.write(f"{n // 200 + 1}.{n % 200 + 1} {RULE.format(n=n)}\n\n")
            n += 1


def _html(path: Path, size: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("<html><head><title>Generated rulebook</title></head><body><main>\n")
        n = 0
        while fh.tell() < size:
            if n % 200 == 0:
                fh.write(f"<h2>Chapter {n // 200 + 1}</h2>\n")
            fh.write(f"<p>{n // 200 + 1}.{n % 200 + 1} {RULE.format(n=n)}</p>\n")
            n += 1
        fh.write("</main></body></html>\n")


def _jsonl(path: Path, size: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        n = 0
        while fh.tell() < size:
            fh.write(json.dumps({"document": f"Part {n // 20000 + 1}", "rule": f"{n // 200 + 1}.{n % 200 + 1}",
                                 "text": RULE.format(n=n)}) + "\n")
            n += 1


MAKERS = {"rules.md": _markdown, "rules.html": _html, "rules.jsonl": _jsonl}


def _ingest(source: Path, out: Path) -> dict:
    """Peak RSS (bytes), wall seconds and passages of one ``rirag data ingest`` child."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rirag.cli", "data", "ingest", str(source), "--out", str(out),
                             "--max-input-bytes", str(1 << 34)], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"rirag data ingest {source} exited {os.waitstatus_to_exitcode(status)}")
    passages = json.loads((out / "ingest_report.json").read_text("utf-8"))["passages"]
    return {"peak_rss": usage.ru_maxrss * 1024, "seconds": round(seconds, 1), "passages": passages,
            "passages_per_s": round(passages / seconds)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, nargs="+", default=[30], help="sizes of the generated files (MB)")
    ap.add_argument("--files", type=int, default=0, help="a folder of this many Markdown files of the largest size")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ingest-memory-") as tmp:
        tmp = Path(tmp)
        tiny = tmp / "tiny"
        tiny.mkdir()
        (tiny / "rules.md").write_text("1.1 A firm must keep records.\n", "utf-8")
        idle = _ingest(tiny, tmp / "tiny-out")["peak_rss"]
        for mb in args.mb:
            for name, make in MAKERS.items():
                folder = tmp / f"{mb}-{name.replace('.', '-')}"
                folder.mkdir()
                make(folder / name, mb * 1_000_000)
                file_bytes = (folder / name).stat().st_size
                got = _ingest(folder, tmp / f"{mb}-{name}-out")
                (folder / name).unlink()
                rows.append({"file": name, "mb": mb, "file_bytes": file_bytes, **got, "idle_rss": idle,
                             "peak_over_file": round(got["peak_rss"] / file_bytes, 2),
                             "reading_over_file": round((got["peak_rss"] - idle) / file_bytes, 2),
                             "held_bytes_a_passage": round((got["peak_rss"] - idle) / got["passages"])})
                print(json.dumps(rows[-1]), flush=True)
                subprocess.run(["rm", "-rf", str(tmp / f"{mb}-{name}-out")], check=True)
        if args.files:
            mb = max(args.mb)
            folder = tmp / f"{args.files}x{mb}-md"
            folder.mkdir()
            for i in range(args.files):  # numbered apart: no passage of one is a duplicate of another's
                _markdown(folder / f"rules{i}.md", mb * 1_000_000, start=i * 10_000_000)
            file_bytes = max(p.stat().st_size for p in folder.iterdir())
            got = _ingest(folder, tmp / "folder-out")
            rows.append({"file": f"{args.files} x rules.md", "mb": mb, "file_bytes": file_bytes,
                         "corpus_bytes": sum(p.stat().st_size for p in folder.iterdir()), **got, "idle_rss": idle,
                         "peak_over_file": round(got["peak_rss"] / file_bytes, 2),
                         "reading_over_file": round((got["peak_rss"] - idle) / file_bytes, 2),
                         "held_bytes_a_passage": round((got["peak_rss"] - idle) / got["passages"])})
            print(json.dumps(rows[-1]), flush=True)
    command = "python benchmarks/ingest_memory.py --mb " + " ".join(map(str, args.mb))
    result = {"command": command + (f" --files {args.files}" if args.files else ""),
              "cpus": os.cpu_count(), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
