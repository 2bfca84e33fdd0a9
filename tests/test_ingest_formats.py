"""PDF and Word rulebooks ingested with their structure (issue 66), on small files the tests write
(``tests/_documents.py``): rule numbers, heading paths, list items and their depth, tables with their header (across a
page break), footnotes and their marks; running headers, footers and page numbers dropped; two columns read in order;
scanned, encrypted and damaged PDFs one skip line each in a mixed folder; hyphenated and lettered article numbers kept
by every reader."""

from __future__ import annotations

import json
from pathlib import Path

from _documents import Text, add_footnote, write_pdf
from rirag.data.ingest.corpus import ingest


def _passages(out: Path) -> list[dict]:
    return [r for f in sorted((out / "documents").glob("*.json")) for r in json.loads(f.read_text("utf-8"))]


def _by_id(out: Path) -> dict[str, dict]:
    """Passages by their rule number as printed (a bare "4A" is qualified by its heading in the PassageID)."""
    return {r["Rule"] or r["PassageID"]: r for r in _passages(out)}


def _running(n: int, pages: int) -> list[Text]:
    """What a printer adds to page ``n``: a running header and a footer with the page number."""
    return [Text(50, 30, "PRA Rulebook - Liquidity", 8), Text(50, 815, "printed 07/12/2026", 8),
            Text(480, 815, f"Page {n} of {pages}", 8)]


def _rulebook_pdf(path: Path) -> Path:
    page1 = _running(1, 3) + [
        Text(50, 80, "Liquidity Part", 20, bold=True),
        Text(50, 120, "1 Application", 14, bold=True),
        Text(50, 150, "1.1"), Text(100, 150, "This Part applies to every firm that is subject to"),
        Text(100, 163, "the regulation of the PRA"), Text(226, 163, "1", 6, rise=4),
        Text(230, 163, ", except:"),
        Text(120, 180, "(a) a credit union; and"),
        Text(140, 193, "(i) one that is small; or"),
        Text(140, 206, "(ii) one that is new;"),
        Text(120, 219, "(b) a friendly society."),
        Text(100, 245, "Scope", 11, bold=True),
        Text(50, 270, "1.2"), Text(100, 270, "A firm must hold the buffers below, measured by regu-"),
        Text(100, 283, "lation of its own:"),
        Text(100, 300, "Buffer", bold=True), Text(250, 300, "Rate", bold=True),
        Text(100, 313, "Capital"), Text(250, 313, "2.5%"),
        Text(100, 780, "Systemic"), Text(250, 780, "1%"),
        Text(50, 795, "1. The regulation of the PRA is set out in FSMA.", 7),
    ]
    page2 = _running(2, 3) + [
        Text(300, 60, "1 Application ........... 1"),  # a table of contents' line
        Text(100, 80, "Buffer", bold=True), Text(250, 80, "Rate", bold=True),  # the header printed again
        Text(100, 93, "Countercyclical"), Text(250, 93, "0%"),
        Text(50, 120, "2 Articles", 14, bold=True),
        Text(50, 150, "313-1"), Text(100, 150, "The firm keeps a register under this regulation."),
        Text(50, 170, "4A"), Text(100, 170, "The firm reports every quarter."),
        Text(50, 190, "10a"), Text(100, 190, "The firm names an officer."),
    ]
    left = [Text(50, 100 + 13 * i, f"Left column line {i} of the text.") for i in range(6)]
    right = [Text(320, 100 + 13 * i, f"Right column line {i} of the text.") for i in range(6)]
    page3 = _running(3, 3) + [Text(50, 70, "3 Two columns", 14, bold=True)] + right + left  # drawn right first
    return write_pdf(path, [page1, page2, page3])


def test_a_pdf_rulebook_keeps_its_structure_and_drops_its_layout(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _rulebook_pdf(src / "liquidity.pdf")
    report = ingest(src, tmp_path / "out")
    assert report["kind"] == "pdf"
    got = _by_id(tmp_path / "out")
    texts = "\n".join(r["Passage"] for r in got.values())
    assert "Page" not in texts and "PRA Rulebook - Liquidity" not in texts and "printed" not in texts
    r11 = got["1.1"]
    assert r11["Headings"] == ["Liquidity Part", "1 Application"] and r11["Rule"] == "1.1"
    assert r11["Passage"].splitlines() == [
        "This Part applies to every firm that is subject to the regulation of the PRA 1 , except:",
        "(a) a credit union; and", "(i) one that is small; or", "(ii) one that is new;", "(b) a friendly society."]
    assert [(i["level"], i["label"]) for i in r11["ListItems"]] == [(1, "(a)"), (2, "(i)"), (2, "(ii)"), (1, "(b)")]
    [mark] = r11["FootnoteMarks"]
    assert r11["Passage"][mark["start"]:mark["end"]] == "1" and mark["target"] == "footnote-1"
    note = got["footnote 1"]
    assert note["FootnoteId"] == "footnote-1" and note["Passage"].startswith("1. The regulation of the PRA")
    r12 = got["1.2"]
    assert r12["Headings"] == ["Liquidity Part", "1 Application", "Scope"]  # a bold line heads the rules after it
    assert r12["Passage"].splitlines() == [  # the header carried by each row, the row of page 2 in the same table
        "A firm must hold the buffers below, measured by regulation of its own:",
        "Buffer: Capital; Rate: 2.5%", "Buffer: Systemic; Rate: 1%", "Buffer: Countercyclical; Rate: 0%"]
    assert {k: got[k]["Passage"] for k in ("313-1", "4A", "10a")} == {
        "313-1": "The firm keeps a register under this regulation.", "4A": "The firm reports every quarter.",
        "10a": "The firm names an officer."}
    columns = [r for r in got.values() if r["Headings"][-1] == "3 Two columns"]
    lines = " ".join(r["Passage"] for r in columns).replace("\n", " ")
    assert lines == " ".join([f"Left column line {i} of the text." for i in range(6)]
                             + [f"Right column line {i} of the text." for i in range(6)])
    assert report["dropped"]["header or footer"] == 6  # a header and a footer line (its two runs joined) a page
    assert report["dropped"]["table of contents"] == 1 and "......" not in texts


def _rulebook_docx(path: Path) -> Path:
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    d = docx.Document()
    d.add_heading("Conduct Part", level=0)
    toc = OxmlElement("w:sdt")  # a table of contents Word keeps in a content control
    d.element.body.append(toc)
    d.add_heading("1 Scope", level=1)
    d.add_paragraph("1.1")
    p = d.add_paragraph("A firm must act with integrity towards")
    add_footnote(d, p, "Integrity as defined in the Glossary.")
    d.add_paragraph("every client, including:")
    d.add_paragraph("(a) a retail client; and", style="List Number")
    d.add_paragraph("(i) one who is vulnerable;", style="List Number 2")
    d.add_paragraph("(b) a professional client.", style="List Number")
    d.add_paragraph("1.2 A firm must keep the fees below.")
    table = d.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, [("Fee", "Amount"), ("Entry", "£10"), ("Annual", "£5")]):
        for cell, text in zip(row.cells, cells):
            cell.paragraphs[0].add_run(text).bold = cells[0] == "Fee"
    run = d.add_paragraph().add_run("Records")
    run.bold = True
    q = d.add_paragraph("313-1 The firm keeps records for five years")
    q.add_run("3").font.superscript = True
    q.add_run(".")
    deleted = OxmlElement("w:del")
    dr = OxmlElement("w:r")
    dt = OxmlElement("w:t")
    dt.text = "DELETED TEXT"
    dr.append(dt)
    deleted.append(dr)
    q._p.append(deleted)
    d.add_paragraph("3. Five years from the end of the relationship.")
    d.add_paragraph("4A The firm reports yearly.")
    d.add_paragraph("10a The firm names an officer.")
    assert toc.tag == qn("w:sdt")
    d.save(str(path))
    return path


def test_a_word_rulebook_keeps_its_structure(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _rulebook_docx(src / "conduct.docx")
    report = ingest(src, tmp_path / "out")
    assert report["kind"] == "docx" and report["dropped"]["table of contents"] == 1
    got = _by_id(tmp_path / "out")
    r11 = got["1.1"]
    assert r11["Headings"] == ["Conduct Part", "1 Scope"]
    assert r11["Passage"].splitlines() == ["A firm must act with integrity towards 1", "every client, including:",
                                           "(a) a retail client; and", "(i) one who is vulnerable;",
                                           "(b) a professional client."]
    assert [(i["level"], i["label"]) for i in r11["ListItems"]] == [(1, "(a)"), (2, "(i)"), (1, "(b)")]
    assert [(m["mark"], m["target"]) for m in r11["FootnoteMarks"]] == [("1", "footnote-1")]
    assert got["footnote 1"]["Passage"] == "1 Integrity as defined in the Glossary."
    assert got["1.2"]["Passage"].splitlines() == ["A firm must keep the fees below.", "Fee: Entry; Amount: £10",
                                                  "Fee: Annual; Amount: £5"]
    r313 = got["313-1"]
    assert r313["Headings"] == ["Conduct Part", "1 Scope", "Records"]
    assert r313["Passage"] == "The firm keeps records for five years 3 ." and "DELETED" not in r313["Passage"]
    assert r313["FootnoteMarks"][0]["target"] == "footnote-3"
    assert got["footnote 3"]["Passage"] == "3. Five years from the end of the relationship."
    assert got["4A"]["Passage"] == "The firm reports yearly." and got["10a"]["Passage"] == "The firm names an officer."


def test_a_mixed_folder_ingests_in_one_command_and_bad_pdfs_are_one_line_each(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _rulebook_pdf(src / "liquidity.pdf")
    _rulebook_docx(src / "conduct.docx")
    (src / "page.html").write_text("<html><body><main><h2>Scope</h2><p>2.1 A firm must keep records.</p></main>"
                                   "</body></html>", "utf-8")
    (src / "notes.txt").write_text("5.1 A firm must report yearly.\n", "utf-8")
    write_pdf(src / "scan.pdf", [[]], image_only=True)
    write_pdf(src / "locked.pdf", [[Text(50, 50, "secret")]], encrypted=True)
    (src / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog")
    (src / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    write_pdf(src / "empty.pdf", [[Text(50, 80, "A Part With No Rules", 20, bold=True)]])
    report = ingest(src, tmp_path / "out")
    assert report["kind"] == "docx+html+pdf+text"
    skipped = {s["file"]: s["reason"] for s in report["skipped"]}
    assert skipped == {"scan.pdf": "no text layer (a scanned PDF? OCR is not done here)",
                       "locked.pdf": "encrypted PDF (a password is needed to read it)",
                       "broken.pdf": skipped["broken.pdf"], "broken.docx": skipped["broken.docx"],
                       "empty.pdf": "no text beside its title"}
    assert skipped["broken.pdf"].startswith("not a readable PDF")
    assert skipped["broken.docx"].startswith("not a readable Word (.docx) file")
    assert all("\n" not in reason for reason in skipped.values())
    sources = {r["Source"] for r in _passages(tmp_path / "out")}
    assert sources == {"liquidity.pdf", "conduct.docx", "page.html", "notes.txt"}


def test_hyphenated_and_lettered_article_numbers_are_kept_by_every_reader(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    numbers = ("313-1", "313-2", "4A", "10a")
    (src / "md_code.md").write_text("".join(f"## Article {n}\n\nThe provider must act fairly ({n}).\n\n"
                                         for n in numbers), "utf-8")
    (src / "txt_code.txt").write_text("".join(f"{n} The provider keeps records ({n}).\n\n" for n in numbers), "utf-8")
    (src / "html_code.html").write_text("<html><body><main>" + "".join(
        f"<h2>Article {n}</h2><p>The provider reports ({n}).</p>" for n in numbers) + "</main></body></html>", "utf-8")
    (src / "rst_code.rst").write_text("Code\n====\n\n" + "".join(
        f"Article {n}\n{'-' * (8 + len(n))}\n\nThe provider informs ({n}).\n\n" for n in numbers), "utf-8")
    records = [{"document": "REC", "rule": n, "text": f"The provider pays ({n})."} for n in numbers]
    (src / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    ingest(src, tmp_path / "out")
    ids: dict[str, set[str]] = {}
    for r in _passages(tmp_path / "out"):
        ids.setdefault(r["Source"], set()).add(r["PassageID"])
    assert ids["txt_code.txt"] == ids["records.jsonl"] == set(numbers)
    for source in ("md_code.md", "html_code.html", "rst_code.rst"):
        assert ids[source] == {f"Article {n}" for n in numbers}, source
