"""Rulebooks as users hand them over (issue 48): a mixed folder, any encoding, a corpus folder re-ingested, ``--out``
inside the source, Markdown front matter and passages that are no text. Each on tiny files the tests write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rirag.data.ingest.corpus import ingest
from rirag.errors import DataError

PAGE = "<html><head>{head}</head><body><main><h2>Scope</h2><p>{text}</p></main></body></html>"


def _passages(out: Path) -> list[dict]:
    return [r for f in sorted((out / "documents").glob("*.json")) for r in json.loads(f.read_text("utf-8"))]


def _texts(out: Path) -> set[str]:
    return {r["Passage"] for r in _passages(out)}


def test_a_mixed_folder_reads_every_format_and_lists_every_skipped_file(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "page.html").write_text(PAGE.format(head="", text="A firm must keep records."), "utf-8")
    (src / "notes.txt").write_text("A firm must report yearly.\n", "utf-8")
    (src / "sub" / "rules.md").write_text("# Rules\n\n2.1 A firm must hold capital.\n", "utf-8")
    (src / "more.jsonl").write_text(json.dumps({"document": "GEN", "text": "A firm must notify the PRA."}) + "\n",
                                    "utf-8")
    (src / "table.csv").write_text("document,text\nCOB,A firm must treat customers fairly.\n", "utf-8")
    (src / "scan.pdf").write_bytes(b"%PDF-1.4")
    (src / "slides.odp").write_bytes(b"PK\x03\x04")
    (src / ".DS_Store").write_bytes(b"\x00\x00")
    (src / "SOURCE.md").write_text("Captured from the web on 1 January.\n", "utf-8")
    report = ingest(src, tmp_path / "out")
    assert _texts(tmp_path / "out") == {"A firm must keep records.", "A firm must report yearly.",
                                        "2.1 A firm must hold capital.", "A firm must notify the PRA.",
                                        "A firm must treat customers fairly."}
    assert report["kind"] == "html+records+text"
    skipped = {s["file"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"scan.pdf", "slides.odp", ".DS_Store", "SOURCE.md"}
    assert "no reader for .odp" in skipped["slides.odp"]
    assert skipped["scan.pdf"].startswith("not a readable PDF")  # read by the PDF reader, refused in one line
    written = json.loads((tmp_path / "out" / "ingest_report.json").read_text("utf-8"))
    assert written["skipped"] == report["skipped"]


def test_one_bad_file_is_skipped_with_its_reason_and_the_folder_goes_on(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.md").write_text("A firm must keep records.\n", "utf-8")
    (src / "blank.html").write_text("<html><body> </body></html>", "utf-8")
    (src / "binary.txt").write_bytes(b"\x00\x01\x02 not text")
    (src / "broken.jsonl").write_text('{"document": "GEN"\n', "utf-8")
    report = ingest(src, tmp_path / "out")
    assert _texts(tmp_path / "out") == {"A firm must keep records."}
    skipped = {s["file"]: s["reason"] for s in report["skipped"]}
    assert skipped["blank.html"] == "no text"
    assert skipped["binary.txt"].startswith("not text (NUL bytes")
    assert skipped["broken.jsonl"].startswith("line 1: malformed JSON")


@pytest.mark.parametrize("name, data", [
    ("meta.html", PAGE.format(head='<meta charset="iso-8859-1">', text="Caf\u00e9 r\u00e8gles apply.")
     .encode("latin-1")),
    ("equiv.html", PAGE.format(head='<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">',
                               text="Caf\u00e9 r\u00e8gles apply \u2013 always.").encode("cp1252")),
    ("bom16.html", PAGE.format(head="", text="Caf\u00e9 r\u00e8gles apply.").encode("utf-16")),
    ("bom16.txt", "Caf\u00e9 r\u00e8gles apply.\n".encode("utf-16")),
    ("undeclared.txt", "Caf\u00e9 r\u00e8gles apply.\n".encode("latin-1")),
    ("shifted.html", PAGE.format(head='<meta charset="shift_jis">', text="\u898f\u5247 apply.").encode("shift_jis")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_non_utf8_sources_decode_with_their_accents(tmp_path, name, data):
    src = tmp_path / "src"
    src.mkdir()
    (src / name).write_bytes(data)
    ingest(src, tmp_path / "out")
    text = data.decode("utf-16") if "bom16" in name else None
    got = _texts(tmp_path / "out")
    assert len(got) == 1
    (passage,) = got
    if name == "shifted.html":
        assert passage == "\u898f\u5247 apply."
    elif name == "equiv.html":
        assert passage == "Caf\u00e9 r\u00e8gles apply \u2013 always."
    else:
        assert passage == "Caf\u00e9 r\u00e8gles apply.", text


def test_a_latin1_csv_keeps_its_accents(tmp_path):
    csv_file = tmp_path / "rules.csv"
    csv_file.write_bytes("document,text\nGEN,Les r\u00e8gles s'appliquent \u00e0 chaque soci\u00e9t\u00e9.\n"
                         .encode("latin-1"))
    ingest(csv_file, tmp_path / "out")
    assert _texts(tmp_path / "out") == {"Les r\u00e8gles s'appliquent \u00e0 chaque soci\u00e9t\u00e9."}


def test_a_wrong_declared_charset_is_reported_not_guessed(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.txt").write_text("A firm must keep records.\n", "utf-8")
    (src / "liar.html").write_bytes(PAGE.format(head='<meta charset="no-such-codec">', text="Caf\u00e9")
                                    .encode("latin-1"))
    report = ingest(src, tmp_path / "out")
    assert report["skipped"] == [{"file": "liar.html", "reason": "unknown charset 'no-such-codec' (its declared "
                                                                 "charset 'no-such-codec')"}]


def test_markdown_front_matter_is_not_a_passage(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "rules.md").write_text("---\ntitle: Capital rules\nlayout: page\n---\n\n# Capital\n\n"
                                  "1.1 A firm must hold capital.\n\n---\n\n1.2 A firm must report it.\n", "utf-8")
    report = ingest(src, tmp_path / "out")
    texts = _texts(tmp_path / "out")
    assert texts == {"1.1 A firm must hold capital.", "1.2 A firm must report it."}  # a later "---" is a rule
    assert report["dropped"]["front matter"] == 1


def test_link_only_and_no_word_passages_are_dropped(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text("\n".join(json.dumps({"document": "GEN", "rule": r, "text": t}) for r, t in [
        ("1.1", "A firm must see https://www.example.org/guidance for details."),
        ("footnote 2", "2. https://www.eiopa.europa.eu/publications/guidelines_en"),
        ("footnote 3", "11. www.bankofengland.co.uk/pra/Pages/remuneration.aspx."),
        ("1.2", "."),
        ("1.3", "\u2014")]) + "\n", "utf-8")
    report = ingest(jsonl, jsonl.parent / "out")
    assert report["passages"] == 1
    assert report["dropped"] == {"link only": 2, "no words": 2}


def test_out_inside_the_source_is_never_read_back(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "rules.md").write_text("A firm must keep records.\n", "utf-8")
    out = src / "corpus"
    ingest(src, out)
    (out / "xref").mkdir()
    (out / "xref" / "README.md").write_text("---\nconfigs: xref\n---\nThe cross-reference graph of a corpus.\n")
    report = ingest(src, out)
    assert _texts(out) == {"A firm must keep records."}
    assert {"file": "corpus", "reason": "the --out folder of this ingest"} in report["skipped"]
    other = tmp_path / "other"  # an earlier corpus inside the source, not this --out: skipped too
    report = ingest(src, other)
    assert _texts(other) == {"A firm must keep records."}
    assert {"file": "corpus", "reason": "a corpus folder (holds ingest_report.json)"} in report["skipped"]


def test_reingest_replaces_only_the_corpus_files_and_lists_them(tmp_path, caplog):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.md").write_text("A firm must keep records.\n", "utf-8")
    (src / "b.md").write_text("A firm must report.\n", "utf-8")
    out = tmp_path / "out"
    ingest(src, out)
    (out / "xref").mkdir()
    (out / "xref" / "references.jsonl").write_text("{}\n", "utf-8")
    (out / "notes.txt").write_text("mine", "utf-8")
    (src / "b.md").unlink()
    report = ingest(src, out)
    assert (out / "notes.txt").read_text("utf-8") == "mine"
    assert (out / "xref" / "references.jsonl").read_text("utf-8") == "{}\n"
    assert sorted(p.name for p in (out / "documents").iterdir()) == ["1.json"]  # b's document is gone
    assert report["replaced"] == ["document_map.json", "documents/ (2 files)", "ingest_report.json"]
    assert "xref" in caplog.text and "rirag data xref" in caplog.text


def test_a_single_file_of_another_format_is_read_by_its_reader(tmp_path):
    md = tmp_path / "rules.md"
    md.write_text("# Rules\n\n1.1 A firm must keep records.\n", "utf-8")
    ingest(md, tmp_path / "out")
    assert _texts(tmp_path / "out") == {"1.1 A firm must keep records."}
    odp = tmp_path / "slides.odp"
    odp.write_bytes(b"PK\x03\x04")
    with pytest.raises(DataError, match=r"slides.odp: not a folder .* \(formats: .html, .htm"):
        ingest(odp, tmp_path / "out")


def test_a_page_too_large_to_serve_is_refused_at_ingest_in_one_line(tmp_path, monkeypatch, capsys):
    """A source over the input limit is skipped unread, naming an option `rirag data ingest` accepts; a document
    whose corpus file would pass what every command reads is skipped, so no corpus file written is larger."""
    from rirag.cli import main
    from rirag.constants import MAX_INPUT_BYTES
    from rirag.data.ingest import corpus

    src = tmp_path / "src"
    src.mkdir()
    (src / "small.md").write_text("A firm must keep records.\n", "utf-8")
    (src / "big.md").write_text("".join(f"{i}. A firm must report item {i}.\n\n" for i in range(400)), "utf-8")
    assert main(["data", "ingest", str(src), "--out", str(tmp_path / "o"), "--max-input-bytes", "5000"]) == 0
    report = json.loads((tmp_path / "o" / "ingest_report.json").read_text("utf-8"))
    (big,) = [s["reason"] for s in report["skipped"] if s["file"] == "big.md"]
    assert "larger than the 5000-byte input limit; pass --max-input-bytes N" in big and "\n" not in big
    assert "skipped big.md:" in capsys.readouterr().out
    assert corpus.CORPUS_FILE_LIMIT <= MAX_INPUT_BYTES  # what `rirag ask` (no --max-input-bytes) reads
    monkeypatch.setattr(corpus, "CORPUS_FILE_LIMIT", 8000)
    report = ingest(src, tmp_path / "o2")
    (why,) = [s["reason"] for s in report["skipped"] if s["file"] == "big.md"]
    assert why.startswith("its passages come to ") and "over the 8000-byte corpus file" in why
    assert max(f.stat().st_size for f in (tmp_path / "o2" / "documents").iterdir()) <= 8000
    assert _texts(tmp_path / "o2") == {"A firm must keep records."}


def test_a_refusal_names_max_input_bytes_only_where_the_command_has_it(tmp_path):
    """`rirag ask` has no --max-input-bytes (the runner gives it input_limit(None)): its refusal must not send the
    user to an option it refuses; a command with the option names it."""
    from rirag import io as rio

    big = tmp_path / "1.json"
    with open(big, "wb") as fh:
        fh.truncate(rio.MAX_INPUT_BYTES + 1)  # sparse: no disk used, refused by its size before reading
    with rio.input_limit(None), pytest.raises(DataError) as no_option:
        rio.read_json(big)
    with rio.input_limit(rio.MAX_INPUT_BYTES), pytest.raises(DataError) as option:
        rio.read_json(big)
    assert "--max-input-bytes" not in str(no_option.value) and "split the file" in str(no_option.value)
    assert "pass --max-input-bytes N" in str(option.value)
