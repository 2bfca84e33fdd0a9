"""Peak memory of ``rirag data ingest`` against the size of the file it reads (issue 48: "streaming ingest keeps peak
RSS under 2x the largest file"), on files this script generates: a Markdown file and a generic HTML page of
``--mb`` MB each (numbered rules of about 40 words), and a tiny file for the interpreter's own footprint.

Usage:
    python benchmarks/ingest_memory.py [--mb 30] [--out benchmarks/results/ingest_memory.json]

Each ingest is a fresh child process (``os.wait4``: that child's peak RSS, not the largest so far); the result gives
the peak, the peak less the tiny file's (what reading the file costs), and both as multiples of the file size.
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


def _markdown(path: Path, size: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        n = 0
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


def _ingest(source: Path, out: Path) -> dict:
    """Peak RSS (bytes) and wall seconds of one ``rirag data ingest`` child."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rirag.cli", "data", "ingest", str(source), "--out", str(out),
                             "--max-input-bytes", str(1 << 34)], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"rirag data ingest {source} exited {proc.returncode}")
    return {"peak_rss": usage.ru_maxrss * 1024, "seconds": round(time.perf_counter() - start, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=30, help="size of each generated file (MB)")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    size = args.mb * 1_000_000
    rows = []
    with tempfile.TemporaryDirectory(prefix="ingest-memory-") as tmp:
        tmp = Path(tmp)
        tiny = tmp / "tiny"
        tiny.mkdir()
        (tiny / "rules.md").write_text("1.1 A firm must keep records.\n", "utf-8")
        idle = _ingest(tiny, tmp / "tiny-out")["peak_rss"]
        for name, make in (("rules.md", _markdown), ("rules.html", _html)):
            folder = tmp / name.replace(".", "-")
            folder.mkdir()
            make(folder / name, size)
            file_bytes = (folder / name).stat().st_size
            got = _ingest(folder, tmp / f"{name}-out")
            rows.append({"file": name, "file_bytes": file_bytes, **got, "idle_rss": idle,
                         "peak_over_file": round(got["peak_rss"] / file_bytes, 2),
                         "reading_over_file": round((got["peak_rss"] - idle) / file_bytes, 2)})
            print(json.dumps(rows[-1]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"mb": args.mb, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
