"""What a page's structure says, kept at ingest: footnote marks (offsets into the passage text and the footnote they
link to) and list items (their nesting level and label), written as fields of the passage records of HTML pages
only (a JSONL source gets none of them), and read by the resolver."""

from __future__ import annotations

import json
from pathlib import Path

from rirag.data.ingest.corpus import ingest
from rirag.data.ingest.labels import split_long
from rirag.data.ingest.raw import RawPassage, item_label
from rirag.data.obliqa import load_obliqa
from rirag.xref.passages import xref_passages
from rirag.xref.records import Passage
from rirag.xref.resolver import Resolver
from tests.test_ingest import _row, _section, rulebook_page

NESTED = """<p>The process applies to a write-down manager,<sup><a href="#footnote-16">16</a></sup> meaning that:</p>
<ol class="new-bullet"><li>(a) consent is required before making such an application;</li>
<li>(b) such consent must be:<ol><li>(i) in writing; and</li><li>(ii) filed with the court; and</li></ol></li>
<li>(c) the PRA must consult the FCA.</li></ol>
<div class="rb-footnotes"><ul class="list-no-style"><li id="footnote-16" class="rb-footnote">
<span class="fn-col-1">16.</span>
<span class="fn-col-2">Section 377G(4) of FSMA.</span></li></ul></div>"""
PAGE = rulebook_page("Insurers in difficulty", _section("3", "Consent", _row("16", NESTED)))
GENERIC = """<html><body><main><h1>Guide</h1><p>Firms report yearly<sup>2</sup> to the PRA.</p>
<ul><li>first point of the list<ul><li>a point nested in it</li></ul></li></ul></main></body></html>"""


def _records(out: Path) -> list[dict]:
    return [r for f in sorted((out / "documents").glob("*.json")) for r in json.loads(f.read_text("utf-8"))]


def _ingested(tmp_path: Path, page: str) -> list[dict]:
    """The passage records of ``page`` ingested into ``tmp_path / "out"``."""
    src = tmp_path / "pages"
    src.mkdir()
    (src / "page.html").write_text(page, "utf-8")
    ingest(src, tmp_path / "out")
    return _records(tmp_path / "out")


def test_footnote_marks_and_list_nesting_are_written_as_fields(tmp_path):
    rule, note = _ingested(tmp_path, PAGE)
    text = rule["Passage"]
    assert text.startswith("The process applies to a write-down manager, 16 meaning that:\n(a) consent")
    [mark] = rule["FootnoteMarks"]
    assert text[mark["start"]:mark["end"]] == mark["mark"] == "16"
    assert mark["target"] == "footnote-16" == note["FootnoteId"]
    assert note["PassageID"] == "footnote 16" and note["FootnoteMarks"] == [] and rule["FootnoteId"] == ""
    items = [(text[i["start"]:].split("\n")[0][:8], i["level"], i["label"]) for i in rule["ListItems"]]
    assert items == [("(a) cons", 1, "(a)"), ("(b) such", 1, "(b)"), ("(i) in w", 2, "(i)"), ("(ii) fil", 2, "(ii)"),
                     ("(c) the ", 1, "(c)")]
    assert rule["Rule"] == "16" and rule["Headings"] == ["Insurers in difficulty", "3 Consent"]


def test_a_generic_page_keeps_marks_without_target_and_nesting(tmp_path):
    [p] = _ingested(tmp_path, GENERIC)
    assert p["Passage"] == "Firms report yearly 2 to the PRA.\nfirst point of the list\na point nested in it"
    assert p["FootnoteMarks"] == [{"start": 20, "end": 21, "mark": "2", "target": ""}]
    assert [(i["level"], i["label"]) for i in p["ListItems"]] == [(1, ""), (2, "")]


def test_records_and_text_files_get_no_structure_fields(tmp_path):
    (tmp_path / "rules.jsonl").write_text(json.dumps({"document": "D", "text": "Firms must report 2 times."}) + "\n")
    ingest(tmp_path / "rules.jsonl", tmp_path / "out")
    [p] = _records(tmp_path / "out")
    assert set(p) == {"ID", "DocumentID", "PassageID", "Passage", "Rule", "Headings", "Source"}


def test_a_long_passage_cut_into_parts_keeps_its_marks_on_their_lines():
    lines = [f"{i + 1}. item " + "word " * 60 + "end." for i in range(12)]
    p = RawPassage("1.1", ("D",), lines, label="1.1", structured=True, marks=[(0, 2, 3, "fn-1"), (11, 4, 8, "fn-2")],
                   items=[(i, 1, item_label(line)) for i, line in enumerate(lines)])
    parts = split_long(p)
    assert len(parts) > 1 and sum(len(x.lines) for x in parts) == 12
    last = parts[-1]
    assert last.marks == [(len(last.lines) - 1, 4, 8, "fn-2")] and parts[0].marks == [(0, 2, 3, "fn-1")]
    assert [i[2] for x in parts for i in x.items] == [f"{i + 1}." for i in range(12)]
    assert last.fields()["ListItems"][0]["start"] == 0


def test_item_labels():
    assert [item_label(t) for t in ("(a) x", "ii. y", "1.2 z", "• q", "Step 1: x", "(iv)whether", "Note. x")] == \
        ["(a)", "ii.", "1.2", "•", "", "", ""]


def test_the_resolver_reads_marks_from_the_fields_and_patterns_only_without_them():
    """Where a passage carries its marks (an ingested page's ``FootnoteMarks``), the resolver takes those, first, and
    resolves each to the footnote with the id it names (else the footnote numbered so): a number the patterns would
    read as a mark ("Test 2: ...") is none, and a mark they would miss ("six 2 months", a lettered "b") is one, and a
    mark read first is never a rule number ("Matching adjustment 1"). A passage without the field keeps the
    patterns."""
    part = "SS7/18 Matching adjustment"
    text = "Apply Test 2: the notional test, for six 2 months; see the services b and Matching adjustment 1 ."
    six, letter, one = text.index(" 2 months") + 1, text.index(" b ") + 1, text.index(" 1 .") + 1
    marks = ((six, six + 1, "footnote-2"), (letter, letter + 1, "fn-b"), (one, one + 1, "footnore-1"))
    passages = [
        Passage("s1", "ss", part, "1.1", text, marks=marks),
        Passage("s2", "ss", part, "1.2", text),  # the same text, without structure: the patterns read it
        Passage("f1", "ss", part, "footnote 1", "1. A note.", marks=(), anchor="footnote-1"),
        Passage("f2", "ss", part, "footnote 2", "2. Six months from the transfer.", marks=(), anchor="footnote-2"),
        Passage("f2b", "ss", part, "footnote 2 #2", "2. Another note two.", marks=(), anchor="footnote-2b"),
        Passage("fb", "ss", part, "footnote b", "b. Shared services.", marks=(), anchor="fn-b"),
        Passage("m1", "ma", "Matching Adjustment", "1", "A firm must apply the matching adjustment."),
    ]
    resolver = Resolver(passages, {"Matching adjustment": "ma"})
    found = [(r.surface, r.kind, r.targets) for r in resolver.references(passages[0])]
    # "footnore-1" (a typo in the page) names no footnote: the mark's number does
    assert found == [("2", "footnote", ("f2",)), ("b", "footnote", ("fb",)), ("1", "footnote", ("f1",))]
    read = {r.start for r in resolver.references(passages[1]) if r.kind == "footnote"}
    assert text.index("2:") in read and six not in read and letter not in read


def test_ingest_then_xref_resolves_a_mark_to_its_footnote(tmp_path):
    rule, note = _ingested(tmp_path, PAGE)
    passages, _ = xref_passages(tmp_path / "out")
    assert passages[0].marks == ((rule["FootnoteMarks"][0]["start"], rule["FootnoteMarks"][0]["end"], "footnote-16"),)
    refs = Resolver(passages).references(passages[0])
    assert [(r.surface, r.kind, r.targets) for r in refs if r.kind == "footnote"] == [("16", "footnote", (note["ID"],))]


def test_the_corpus_loader_keeps_marks_and_levels_with_each_passage(tmp_path):
    """What the answerer quotes from (:class:`rirag.data.passage_store.Passage`): the marks as (start, end) and the
    items as (line offset, level); a corpus without the fields has none."""
    rule, note = _ingested(tmp_path, PAGE)
    p = load_obliqa(tmp_path / "out").passages[rule["ID"]]
    assert p.marks == tuple((m["start"], m["end"]) for m in rule["FootnoteMarks"]) and p.marks
    assert p.items == tuple((i["start"], i["level"]) for i in rule["ListItems"]) and len(p.items) == 5
    assert load_obliqa(tmp_path / "out").passages[note["ID"]].marks == ()
    (tmp_path / "rules.jsonl").write_text(json.dumps({"document": "D", "text": "Firms must report 2 times."}) + "\n")
    ingest(tmp_path / "rules.jsonl", tmp_path / "plain")
    [q] = load_obliqa(tmp_path / "plain").passages.values()
    assert (q.marks, q.items) == ((), ())
