"""Corpus ingestion (issue 38): rulebook pages, JSONL/CSV passages and text files into the ObliQA layout, on tiny
pages the tests write (a rulebook page with a table, a list, a cross-reference, navigation, an effective-date stamp
and hidden text; a plain page; a page without content)."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest

from rirag.cli import main
from rirag.data.ingest.corpus import ingest
from rirag.data.obliqa import load_obliqa
from rirag.errors import DataError

NAV = """<header class="global-header"><nav><ul><li><a href="/">Rulebook menu item</a></li></ul></nav></header>
<div class="nav-bypass"><a href="#main">Skip to main content</a></div>"""
FOOT = """<footer class="global-footer"><p>Footer copyright notice 2026</p></footer>"""


def _row(number: str, body: str, info: bool = True) -> str:
    stamp = ("""<div class="row-block__info"><ul class="list-links"><li class="list-links__item">31/12/2020</li>
<li><a href="/past">Past<span class="visually-hidden">version of the rule before 31/12/2020</span></a></li>
</ul></div>"""
             if info else "")
    return f"""<div id="x{number}" class="row-block row-block--border"><div class="div-row">
<div class="div-row__col-1"><p><span class="rule-number">{number}</span></p></div>
<div class="div-row__col-2 ">{body}</div></div>{stamp}</div>"""


def _section(number: str, heading: str, rows: str) -> str:
    return f"""<div class="chapter-section"><div class="div-row">
<div class="div-row__col-1"><p><span class="rule-number rule-number--mega chapter-number">{number}</span></p></div>
<div class="div-row__col-2"><h3 class="header-sans chapter-heading">{heading}</h3></div></div>{rows}</div>"""


def rulebook_page(title: str, sections: str) -> str:
    return f"""<!DOCTYPE html><html><head><title>{title} | Rulebook</title><script>var x = "script text";</script>
</head><body>{NAV}<main><h1>{title}</h1><div class="page-content"><div class="part-content">
<div class="page-utilities print-override"><h4>Export part as</h4><ul><li><a href="/pdf">PDF</a></li></ul></div>
{sections}</div></div></main>{FOOT}</body></html>"""


AUDITORS = rulebook_page("Auditors", _section("1", "Application and Definitions", (
    _row("1.1", """<p>This Part applies to:</p><ol class="new-bullet"><li>(1) every <em><a class="glossary-link"
title="firm" href="#g">firm</a></em>; and</li><li>(2) the external auditor of such a firm.</li></ol>""")
    + _row("1.2", """<p>In <a title="1.1" href="#x1.1">1.1</a>, a firm refers to a managing agent.<sup><a
href="#footnote-1">1</a></sup></p><div class="rb-footnotes"><h4 class="visually-hidden">Footnotes</h4>
<ul class="list-no-style"><li id="footnote-1" class="rb-footnote"><span class="fn-col-1">1.</span>
<span class="fn-col-2">As defined in the Glossary.</span></li></ul></div>""")
    + _row("", "<p>Levies and weights</p>", info=False)
    + _row("1.3", """<p>The weights are:</p><table class="content-table"><tbody><tr><th>Risk indicator</th>
<th>Weight</th></tr><tr><td>Leverage ratio</td><td>12%</td></tr><tr><td>Liquidity coverage ratio</td><td>24%</td>
</tr></tbody></table>""")
    + _row("1.4", "<p>[Deleted]</p>")
    + _row("1.5", "<p></p>")))
    + _section("2", "Appointment", _row("2.1", "<p>A firm must appoint an auditor in accordance with 1.1.</p>")))
CRR = rulebook_page("Counterparty Credit Risk (CRR)", _section("", "Article 277 Mapping", (
    _row("1.", "<p>Institutions shall map each transaction to one risk category.</p>")
    + _row("2.", "<p>By way of derogation from paragraph 1, institutions shall map to several categories.</p>")))
    + _section("", "Article 277a Hedging Sets", _row("1.", "<p>Institutions shall establish hedging sets.</p>")))
EMPTY_PART = rulebook_page("Withdrawn statement", "")
PLAIN = f"""<html><head><title>Guide</title></head><body>{NAV}<main><h1>Plain guide</h1><h2>Scope</h2>
<p>1.1 This guide applies to all banks.</p><ul><li>first item of the list</li><li>second item of the list</li></ul>
<aside class="side-bar">Related links aside</aside><h2>Reporting</h2><p>Banks report quarterly.</p></main>{FOOT}
</body></html>"""


@pytest.fixture
def pages(tmp_path) -> Path:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "www.example.org_pra-rules_auditors_21-01-2026__f74d410a14.html").write_text(AUDITORS, "utf-8")
    (folder / "www.example.org_pra-rules_counterparty-credit-risk-crr_21-01-2026__4611300738.html").write_text(
        CRR, "utf-8")
    (folder / "withdrawn_21-01-2026__0000000000.html").write_text(EMPTY_PART, "utf-8")
    (folder / "guide.htm").write_text(PLAIN, "utf-8")
    return folder


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _passages(out: Path) -> list[dict]:
    return [r for f in sorted((out / "documents").glob("*.json")) for r in json.loads(f.read_text("utf-8"))]


def _by_rule(out: Path, source_part: str) -> dict[str, dict]:
    return {r["PassageID"]: r for r in _passages(out) if source_part in r["Source"]}


def test_html_pages_keep_rules_lists_tables_and_drop_navigation(pages, tmp_path):
    out = tmp_path / "corpus"
    report = ingest(pages, out)
    auditors = _by_rule(out, "auditors")
    assert auditors["1.1"]["Passage"] == ("This Part applies to:\n(1) every firm; and\n"
                                          "(2) the external auditor of such a firm.")
    assert auditors["1.1"]["Headings"] == ["Auditors", "1 Application and Definitions"]
    # the table's rows, one line each with the header; an in-text heading heads the rule after it
    assert auditors["1.3"]["Passage"].splitlines() == [
        "The weights are:", "Risk indicator: Leverage ratio; Weight: 12%",
        "Risk indicator: Liquidity coverage ratio; Weight: 24%"]
    assert auditors["1.3"]["Headings"][-1] == "Levies and weights"
    # the cross-reference and the footnote mark stay in the text, the footnote is a passage of its own
    assert auditors["1.2"]["Passage"] == "In 1.1, a firm refers to a managing agent. 1"
    assert auditors["footnote 1"]["Passage"] == "1. As defined in the Glossary."
    assert auditors["2.1"]["Passage"] == "A firm must appoint an auditor in accordance with 1.1."
    # deleted and empty rules, stamps, hidden text, navigation, export links, scripts: in no passage
    assert "1.4" not in auditors and "1.5" not in auditors
    everything = "\n".join(r["Passage"] for r in _passages(out))
    for noise in ("31/12/2020", "version of the rule", "Rulebook menu item", "Skip to main content", "Export part",
                  "PDF", "Footer copyright", "script text", "Related links aside", "Footnotes"):
        assert noise not in everything, noise
    assert report["dropped"]["navigation"] >= 2
    assert report["dropped"]["deleted"] == 1 and report["dropped"]["empty"] >= 1
    assert report["dropped"]["empty page"] == 1  # the withdrawn page: nothing but navigation
    # a number that repeats in a page is qualified by its article
    crr = _by_rule(out, "counterparty")
    assert set(crr) == {"Article 277 1.", "Article 277 2.", "Article 277a 1."}
    assert crr["Article 277 1."]["Rule"] == "1."
    # a page without the rulebook structure: headings, numbered paragraph, list joined to its paragraph
    guide = _by_rule(out, "guide")
    assert guide["1.1"]["Passage"] == ("1.1 This guide applies to all banks.\nfirst item of the list\n"
                                       "second item of the list")
    assert guide["1.1"]["Headings"] == ["Plain guide", "Scope"]
    assert any(r["Passage"] == "Banks report quarterly." for r in guide.values())
    assert report["documents"] == 3 and report["passages"] == len(_passages(out))
    assert set(report["length_words"]) >= {"min", "median", "p95", "max"}


def test_rerun_is_byte_identical_and_ids_do_not_depend_on_the_folder(pages, tmp_path):
    ingest(pages, tmp_path / "a")
    ingest(pages, tmp_path / "b")
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    moved = tmp_path / "elsewhere" / "other-name"
    shutil.copytree(pages, moved)
    ingest(moved, tmp_path / "c")
    ids = lambda out: [(r["ID"], r["PassageID"]) for r in _passages(out)]  # noqa: E731
    assert ids(tmp_path / "a") == ids(tmp_path / "c")


def test_the_loader_reads_an_ingested_corpus_without_questions(pages, tmp_path):
    out = tmp_path / "corpus"
    ingest(pages, out)
    corpus = load_obliqa(out)
    assert corpus.splits == {} and len(corpus.corpus) == len(_passages(out))
    auditors = _by_rule(out, "auditors")["1.1"]
    assert corpus.title(auditors["DocumentID"]) == "Auditors"
    assert corpus.corpus[auditors["ID"]].passage_id == "1.1"


def test_jsonl_csv_and_text_sources(tmp_path):
    jsonl = tmp_path / "passages.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in [
        {"document": "GEN", "rule": "1.1", "text": "A firm must comply."},
        {"id": "given-id", "document": "GEN", "rule": "1.2", "text": "A firm must report:\n(a) yearly;\n(b) fully."},
        {"document": "COB", "text": "Conduct of business rules apply."}]) + "\n", "utf-8")
    ingest(jsonl, tmp_path / "j")
    recs = _passages(tmp_path / "j")
    assert {r["PassageID"]: r["Passage"] for r in recs}["1.2"] == "A firm must report:\n(a) yearly;\n(b) fully."
    assert "given-id" in {r["ID"] for r in recs}
    csv_file = tmp_path / "passages.csv"
    csv_file.write_text('document,rule_id,text\nGEN,1.1,"A firm must report:\n(a) yearly, and\n(b) fully."\n'
                        'GEN,1.2,"Another rule."\n', "utf-8")
    ingest(csv_file, tmp_path / "c")
    corpus = load_obliqa(tmp_path / "c").corpus
    assert sorted(p.text for p in corpus.values()) == ["A firm must report:\n(a) yearly, and\n(b) fully.",
                                                       "Another rule."]
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "rules.md").write_text("# Market Rules\n\n## Chapter 2\n\n2.1 A firm must keep records:\n\n- orders\n"
                                    "- trades\n\n| Record | Years |\n|---|---|\n| Orders | 5 |\n", "utf-8")
    (texts / "note.txt").write_text("A plain note\nwrapped over two lines.\n\nA second paragraph.\n", "utf-8")
    ingest(texts, tmp_path / "t")
    recs = {r["PassageID"]: r for r in _passages(tmp_path / "t")}
    assert recs["2.1"]["Passage"] == "2.1 A firm must keep records:\n- orders\n- trades\nRecord: Orders; Years: 5"
    assert recs["2.1"]["Headings"] == ["Market Rules", "Chapter 2"]
    assert any(r["Passage"] == "A plain note wrapped over two lines." for r in recs.values())


def _bad(tmp_path: Path, source: Path, caplog) -> str:
    """``rirag data ingest`` on bad input: exit 2, one error line, the existing --out untouched."""
    out = tmp_path / "out"
    if not out.exists():  # an earlier corpus, which a failed run must leave as it was
        good = tmp_path / "good"
        good.mkdir()
        (good / "a.html").write_text(AUDITORS, "utf-8")
        ingest(good, out)
    before = _tree(out)
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        assert main(["data", "ingest", str(source), "--out", str(out)]) == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []  # no temporary folder left
    return errors[0]


def test_bad_input_is_one_line_exit_2_and_out_untouched(tmp_path, caplog):
    empty = tmp_path / "nopages"
    empty.mkdir()
    (empty / "readme.odt").write_bytes(b"PK")
    assert "no parsable page" in _bad(tmp_path, empty, caplog)
    blank = tmp_path / "blank"
    blank.mkdir()
    (blank / "b.html").write_text("<html><body>  </body></html>", "utf-8")
    (blank / "c.md").write_bytes(b"\x00\x01binary")
    line = _bad(tmp_path, blank, caplog)  # every file bad: one line naming each file and why
    assert "no file has content (2 read)" in line and "b.html: no text" in line and "c.md: not text" in line
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"document": "GEN", "text": "fine"}\n{"id": "r2", "document": "GEN"}\n', "utf-8")
    line = _bad(tmp_path, jsonl, caplog)
    assert "bad.jsonl: line 2 (id r2): missing field 'text'" in line


def test_gold_given_by_text_maps_to_the_passages_that_hold_it(pages, tmp_path, caplog):
    from rirag.data.questions import load_questions

    out = tmp_path / "corpus"
    ingest(pages, out)
    auditors = _by_rule(out, "auditors")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([
        {"QuestionID": "q1", "Question": "Who must appoint an auditor?", "Gold": [
            # another segmentation's text: one list item, spaced differently around the link
            {"page": "www.example.org_pra-rules_auditors", "text": "(2) the external auditor of such a firm ."},
            {"page": "www.example.org_pra-rules_auditors",
             "text": "A firm must appoint an auditor in accordance with 1.1"}]},
        {"QuestionID": "q2", "Question": "What weight has leverage?", "Gold": [
            {"text": "Risk indicator Leverage ratio Weight 12 %"},
            {"text": "A sentence that is nowhere in the rulebook at all, in any page."}]},
        {"QuestionID": "q3", "Question": "By id", "Gold": [auditors["1.2"]["ID"]]}]), "utf-8")
    qs = load_questions(questions, load_obliqa(out))
    assert qs.items["q1"] == (auditors["1.1"]["ID"], auditors["2.1"]["ID"])
    assert qs.items["q2"] == (auditors["1.3"]["ID"], None)
    assert qs.items["q3"] == (auditors["1.2"]["ID"],)
    report = qs.report()
    assert report["gold_items"] == 5 and report["gold_mapped"] == 4
    assert [u["question_id"] for u in report["unmapped"]] == ["q2"]
    # evaluate retrieval on the file: pair-aware metrics next to recall
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 {auditors['1.1']['ID']} 1 2.0 t\nq1 Q0 {auditors['2.1']['ID']} 2 1.0 t\n"
                   f"q2 Q0 {auditors['1.3']['ID']} 1 1.0 t\n", "utf-8")
    metrics = tmp_path / "m.json"
    assert main(["evaluate", "retrieval", "--data", str(out), "--questions", str(questions), "--run", str(run),
                 "--json", str(metrics)]) == 0
    m = json.loads(metrics.read_text("utf-8"))
    assert m["pair_questions"] == 2
    assert m["both@10"] == 0.5 and m["one-only@10"] == 0.5 and m["neither@10"] == 0.0
    assert m["gold_mapping"]["gold_mapped"] == 4


def test_out_that_is_not_a_corpus_is_refused(pages, tmp_path, caplog):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("not a corpus", "utf-8")
    with caplog.at_level(logging.ERROR):
        assert main(["data", "ingest", str(pages), "--out", str(out)]) == 2
    assert "holds no ingest_report.json" in caplog.text
    assert (out / "notes.txt").read_text("utf-8") == "not a corpus"


def test_ingest_refuses_duplicate_given_ids_and_writes_nothing(tmp_path):
    jsonl = tmp_path / "dup.jsonl"
    jsonl.write_text('{"id": "a", "document": "D", "text": "one"}\n{"id": "a", "document": "D", "text": "two"}\n',
                     "utf-8")
    with pytest.raises(DataError, match="line 2 .*id already used on line 1"):
        ingest(jsonl, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.jsonl"]  # no corpus, no temporary folder left


def test_retrieve_and_evaluate_on_an_ingested_corpus_with_a_questions_file(pages, tmp_path):
    out = tmp_path / "corpus"
    ingest(pages, out)
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"QuestionID": "q1", "Question": "Which weight has the leverage ratio?",
                                      "Gold": [{"text": "Leverage ratio; Weight: 12%"}]}]), "utf-8")
    run = tmp_path / "run.trec"
    assert main(["retrieve", "--data", str(out), "--questions", str(questions), "--retriever", "bm25",
                 "--out", str(run), "--k", "3"]) == 0
    top = run.read_text("utf-8").splitlines()[0].split()
    assert top[0] == "q1" and top[2] == _by_rule(out, "auditors")["1.3"]["ID"]
    # --split on a corpus without question files: a one-line error naming the missing file
    assert main(["retrieve", "--data", str(out), "--split", "original-dev", "--retriever", "bm25",
                 "--out", str(tmp_path / "r2.trec")]) == 2
    assert main(["retrieve", "--data", str(out), "--retriever", "bm25", "--out", str(tmp_path / "r3.trec")]) == 2


def test_role_pairs_are_the_two_role_tagged_gold_passages_of_a_question(pages, tmp_path):
    from rirag.data.questions import load_questions

    out = tmp_path / "corpus"
    ingest(pages, out)
    auditors = _by_rule(out, "auditors")
    page = "www.example.org_pra-rules_auditors"
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([
        {"QuestionID": "q1", "Question": "Who must appoint an auditor?", "Gold": [
            {"role": "src", "page": page, "text": "A firm must appoint an auditor in accordance with 1.1"},
            {"role": "tgt", "page": page, "text": "(2) the external auditor of such a firm ."}]},
        {"QuestionID": "q2", "Question": "One missing", "Gold": [
            {"role": "src", "page": page, "text": "A firm must appoint an auditor in accordance with 1.1"},
            {"role": "tgt", "text": "A sentence that is nowhere in the rulebook at all, in any page."}]},
        {"QuestionID": "q3", "Question": "Both on one passage", "Gold": [
            {"role": "src", "page": page, "text": "A firm must appoint an auditor in accordance with 1.1"},
            {"role": "tgt", "page": page, "text": "A firm must appoint an auditor"}]}]), "utf-8")
    pairs = load_questions(questions, load_obliqa(out)).role_pairs("src", "tgt")
    assert pairs == {"q1": (auditors["2.1"]["ID"], auditors["1.1"]["ID"])}  # q2 unmapped, q3 on one passage


def test_a_hinted_gold_text_reads_only_its_document(monkeypatch):
    """Mapping gold by text normalises the hinted document's passages only (it normalised the whole corpus before:
    7 s of a 9.7 s warm retrieve at 100k passages); a text found elsewhere, or unhinted, reads the passages that
    hold its three longest words."""
    from rirag.data import questions
    from rirag.data.obliqa import Passage

    corpus = {f"d{d}p{i}": Passage(f"d{d}p{i}", d, str(i), f"Rule {i}: a firm of Zanzibarian{d} must keep records.")
              for d in range(1, 21) for i in range(50)}
    calls = []
    real = questions.normalise
    monkeypatch.setattr(questions, "normalise", lambda text: calls.append(text) or real(text))
    mapper = questions.TextMapper(corpus, {d: [f"page-{d}.html"] for d in range(1, 21)})
    assert mapper.map("Rule 7: a firm of Zanzibarian3", "page-3")[:2] == ("d3p7", "exact")
    assert len(calls) == 1 + 50  # the gold text, and document 3's passages
    assert mapper.map("Rule 7: a firm of Zanzibarian4", "page-3")[:2] == ("d4p7", "exact-other-document")
    assert len(calls) == 2 + 50 + 50  # not in document 3: the passages with "zanzibarian4", "firm" and "rule"
    assert mapper.map("Rule 9: a firm of Zanzibarian5", None)[:2] == ("d5p9", "exact")
    assert len(calls) == 3 + 50 + 50 + 50
