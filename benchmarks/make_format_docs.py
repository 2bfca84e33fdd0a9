"""The PRA Rulebook pages as PDF and Word files (issue 66): the real test documents of ``benchmarks/ingest_formats.py``.

Usage:
    python benchmarks/make_format_docs.py [--pages ../shared/data/pra_rulebook] [--out out/formats] [--limit N]

For each saved page: its print copy (the page's ``<title>``, its first ``h1`` and its ``part-content``, which is what
the PRA site's own "Export part as PDF / Print" gives; the saved page lacks the site's print stylesheet, so without
this its navigation, cookie banner and menus would print as text), then

- ``pdf/<stem>.pdf``: printed by Debian's headless Chromium (``chromium --headless --print-to-pdf``) with its running
  header (date, page title) and footer (file address, page ``n/N``) on, A4;
- ``docx/<stem>.docx``: converted by pandoc (Debian's ``pandoc``) from the same print copy.

The print copy leaves out what the HTML reader never reads (its hidden and navigation classes: "effective date"
stamps, export links, screen-reader text), and its stylesheet lays a rule row out as the site does: the number left
of its text.
Output is large (about 4,000 printed pages) and never committed (``out/`` is git-ignored). Pages whose print copy has
no ``part-content`` are printed whole. Files already made are kept (``--force`` remakes them).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rirag.data.ingest.html_text import HIDDEN_CLASSES, NAV_CLASSES, NAV_TAGS

REPO = Path(__file__).resolve().parents[1]

PRINT_CSS = """
@page { size: A4; margin: 20mm 16mm; }
body { font-family: "DejaVu Serif", serif; font-size: 10pt; line-height: 1.3; }
h1 { font-size: 20pt; } h2 { font-size: 16pt; } h3 { font-size: 14pt; } h4, h5, h6 { font-size: 11pt; }
.div-row { display: flex; align-items: baseline; gap: 1em; }
.div-row__col-1 { flex: 0 0 4.5em; } .div-row__col-1 p { margin: 0; }
.div-row__col-2 { flex: 1 1 auto; min-width: 0; }
.chapter-number { font-size: 14pt; font-weight: bold; }
.rb-footnotes, .text-small { font-size: 8pt; }
.rb-footnotes ul { list-style: none; padding-left: 0; } .fn-col-1 { padding-right: 0.5em; }
sup { font-size: 65%; vertical-align: super; line-height: 0; }
table { border-collapse: collapse; margin: 4pt 0; } td, th { border: 0.5pt solid #777; padding: 2pt 4pt; }
"""


def print_css() -> str:
    hidden = sorted({f".{c}" for c in HIDDEN_CLASSES | NAV_CLASSES} | set(NAV_TAGS) | {"del", "script", "style"})
    return PRINT_CSS + ", ".join(hidden) + " { display: none !important; }\n"


def print_copy(page: Path) -> tuple[str, str]:
    """The page's print copy as HTML, with its ``<title>`` (for Chromium's running header) and without (for pandoc,
    which would make the title a paragraph of its own)."""
    import lxml.html
    from lxml import etree

    tree = lxml.html.parse(str(page))
    root = tree.getroot()
    title = (root.findtext(".//title") or "").strip()
    parts = root.find_class("part-content")
    h1 = next((h for h in root.iter("h1") if not any(a.tag in NAV_TAGS for a in h.iterancestors())), None)
    for el in [el for el in root.iter() if isinstance(el.tag, str) and _hidden(el)]:
        if el.getparent() is not None:
            el.drop_tree()  # what a browser does not print (the stylesheet below) and pandoc would convert
    body = [h1] if h1 is not None else []
    body += parts[:1] if parts else list(root.find("body") if root.find("body") is not None else [])
    inner = "".join(etree.tostring(el, encoding="unicode", method="html", with_tail=False) for el in body)
    head = f'<meta charset="utf-8"><style>{print_css()}</style>'
    titled = f"<!DOCTYPE html><html><head>{head}<title>{_escape(title)}</title></head><body>{inner}</body></html>"
    return titled, f"<!DOCTYPE html><html><head>{head}</head><body>{inner}</body></html>"


def _hidden(el) -> bool:
    classes = set((el.get("class") or "").split())
    return el.tag in NAV_TAGS or el.tag == "del" or bool(classes & (HIDDEN_CLASSES | NAV_CLASSES))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default=str(REPO.parent / "shared" / "data" / "pra_rulebook"))
    ap.add_argument("--out", default=str(REPO / "out" / "formats"))
    ap.add_argument("--limit", type=int, default=0, help="the first N pages only (0: all)")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--formats", nargs="+", default=["pdf", "docx"], choices=["pdf", "docx"])
    args = ap.parse_args(argv)
    for tool in ("chromium" if "pdf" in args.formats else None, "pandoc" if "docx" in args.formats else None):
        if tool and shutil.which(tool) is None:
            sys.exit(f"{tool} not found (Debian: apt-get install {tool})")
    pages = sorted(Path(args.pages).glob("*.html"))[: args.limit or None]
    out = Path(args.out)
    for fmt in args.formats:
        (out / fmt).mkdir(parents=True, exist_ok=True)
    start, made, failed = time.perf_counter(), 0, []
    with tempfile.TemporaryDirectory(prefix="rirag-print-") as tmp:
        for i, page in enumerate(pages, 1):
            titled, untitled = print_copy(page)
            copy = Path(tmp) / f"{page.stem}.html"
            pdf, docx = out / "pdf" / f"{page.stem}.pdf", out / "docx" / f"{page.stem}.docx"
            if "pdf" in args.formats and (args.force or not pdf.exists()):
                copy.write_text(titled, "utf-8")
                made += _made(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                f"--print-to-pdf={pdf}", copy.as_uri()], pdf, failed)
            if "docx" in args.formats and (args.force or not docx.exists()):
                copy.write_text(untitled, "utf-8")
                made += _made(["pandoc", "--quiet", "-f", "html", "-t", "docx", str(copy), "-o", str(docx)], docx,
                              failed)
            if i % 20 == 0:
                print(f"{i}/{len(pages)} pages, {time.perf_counter() - start:.0f} s", flush=True)
    print(f"{made} files made from {len(pages)} pages in {time.perf_counter() - start:.0f} s: {out}")
    for line in failed:
        print(f"failed: {line}")
    return 1 if failed else 0


def _made(cmd: list[str], target: Path, failed: list[str]) -> int:
    """1 when ``cmd`` made ``target``; else 0, the failure noted (one page never stops the others)."""
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
        return 1
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        why = (err.stderr or b"").decode("utf-8", "replace").strip().splitlines()[-1:] if err.stderr else []
        failed.append(f"{target.name}: {cmd[0]} {type(err).__name__} {' '.join(why)}")
        target.unlink(missing_ok=True)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
