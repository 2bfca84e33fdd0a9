"""Cross-references: each form found in tiny hand-written passages and resolved to the ids it should be; external
references kept unresolved; the graph written deterministically beside the corpus."""

from __future__ import annotations

import json

import pytest

from rirag.cli import main
from rirag.xref.graph import GRAPH_FILE, graph_rows, graph_summary, write_graph
from rirag.xref.numbers import aliases_from_names, parse_number
from rirag.xref.records import Passage
from rirag.xref.resolver import Resolver

GEN = "General Rulebook (GEN)"
PRU = "Prudential Rules (PRU)"
FSMR = "FINANCIAL SERVICES AND MARKETS REGULATIONS 2015"


def _adgm() -> list[Passage]:
    rows = [
        # GEN (document 7)
        ("g1", "7", GEN, "9.", "DISCLOSURE"),
        ("g2", "7", GEN, "9.5.1", "A firm must keep records."),
        ("g3", "7", GEN, "9.5.2", ""),
        ("g4", "7", GEN, "9.5.2.(1)", "A firm must notify the Regulator."),
        ("g5", "7", GEN, "9.5.2.(2)", "Subject to (1), a firm must wait (a) five days; or (b) ten days."),
        ("g6", "7", GEN, "9.5.2.Guidance.1.", "Guidance on notification."),
        ("g7", "7", GEN, "9.5.3", "A firm must comply with Rules 9.5.1 and 9.5.2."),
        ("g8", "7", GEN, "3.3.31", "An Authorised Person must not outsource."),
        ("g9", "7", GEN, "APP2.A2.1.1", "Appendix rule one."),
        ("g10", "7", GEN, "APP2.A2.1.2", "Appendix rule two."),
        # PRU (document 13)
        ("p1", "13", PRU, "6.8", "Outsourcing"),
        ("p2", "13", PRU, "6.8.1", "Outsourcing rule one."),
        ("p3", "13", PRU, "6.8.2", "Outsourcing rule two."),
        ("p4", "13", PRU, "6.9.1", "Another section."),
        ("p5", "13", PRU, "6.8.3",
         "See GEN 3.3.31, PRU 6.8 and Chapter 9 of GEN, and App 2 of GEN; Rules 6.8.1 to 6.8.2 apply. "
         "Rule 9.5.2(1)(a) of GEN applies with paragraph (2) of that Rule. "
         "See also section 61 of FSMR and section 55J of the Financial Services and Markets Act 2000. "
         "A fee of USD 9.5 million and a Part 4A permission are not references."),
        # FSMR (document 17): sections numbered across Parts, a Schedule with its own paragraphs
        ("f1", "17", FSMR, "Part 6.61.", "Section sixty-one."),
        ("f2", "17", FSMR, "Part 6.61.(1)", "Paragraph one of section 61."),
        ("f3", "17", FSMR, "Part 6.61.(2)", "Subject to subsection (1), a person must not act."),
        ("f4", "17", FSMR, "Schedule 1.Part 2.Chapter 1.4.", "A specified activity."),
        ("f5", "17", FSMR, "Schedule 1.Part 2.Chapter 1.5.", "Excluded from the kind specified by paragraph 4."),
    ]
    return [Passage(*r) for r in rows]


ALIASES = aliases_from_names({"7": ["GEN_VER08", "GEN", GEN], "13": ["PRU_VER13", "PRU", PRU],
                              "17": ["FSMR (Consolidated)", "FSMR", FSMR]})


@pytest.fixture(scope="module")
def adgm():
    passages = _adgm()
    return {p.id: p for p in passages}, Resolver(passages, ALIASES)


def _refs(adgm, pid):
    by_id, resolver = adgm
    return {r.surface: r for r in resolver.references(by_id[pid])}


def test_passage_numbers_are_read_into_containers_main_number_and_paragraphs():
    n = parse_number("Schedule 1.Part 2.Chapter 1.4.(2)")
    assert (n.container("schedule"), n.main, n.paras, n.guidance) == ("1", "4", ("2",), False)
    assert parse_number("APP2.A2.1.1").main == "A2.1.1"
    assert parse_number("9.5.2.Guidance.1.").guidance
    assert parse_number("273.(1)").main == "273" and parse_number("273.(1)").paras == ("1",)
    # labels of ingested pages: a CRR article's paragraph, a heading-qualified rule, an appendix, a footnote
    assert (parse_number("Article 277 2.").main, parse_number("Article 277 2.").paras) == ("277", ("2",))
    assert parse_number("3D24 Specific Exposures 2.").main == "3D24.2"
    assert parse_number("3 Organisational Structure 3.2").main == "3.2"
    assert parse_number("Appendix 5 1.1").container("appendix") == "5"
    assert parse_number("footnote 5").main == ""


def test_rule_forms_resolve_to_the_rule_and_its_paragraphs_not_its_guidance(adgm):
    refs = _refs(adgm, "g7")
    assert refs["Rules 9.5.1"].targets == ("g2",)
    assert refs["9.5.2"].targets == ("g4", "g5")  # the empty rule heading and its guidance are left out
    refs = _refs(adgm, "p5")
    assert refs["GEN 3.3.31"].targets == ("g8",) and refs["GEN 3.3.31"].target_document == "7"
    assert refs["Rule 9.5.2(1)(a)"].targets == ("g4",)  # (a) is inside paragraph (1)
    assert refs["paragraph (2)"].reason == "ambiguous"  # "of that Rule": the resolver does not follow anaphora


def test_sections_chapters_appendices_and_ranges(adgm):
    refs = _refs(adgm, "p5")
    assert refs["PRU 6.8"].targets == ("p1", "p2", "p3", "p5")  # the heading and the rules under it
    assert refs["Chapter 9"].targets == ("g1", "g2", "g4", "g5", "g7")  # chapter -> its (non-guidance) passages
    assert refs["App 2"].targets == ("g9", "g10")
    assert refs["Rules 6.8.1 to 6.8.2"].kind == "range" and refs["Rules 6.8.1 to 6.8.2"].targets == ("p2", "p3")


def test_regulation_sections_and_schedule_paragraphs(adgm):
    refs = _refs(adgm, "p5")
    assert refs["section 61"].targets == ("f1", "f2", "f3")
    # inside Schedule 1, "paragraph 4" is the Schedule's paragraph 4, not section 4
    assert _refs(adgm, "f5")["paragraph 4"].targets == ("f4",)


def test_relative_paragraphs_resolve_within_the_citing_rule(adgm):
    assert _refs(adgm, "g5")["(1)"].targets == ("g4",)
    assert _refs(adgm, "f3")["subsection (1)"].targets == ("f2",)
    # the list items (a) and (b) of g5 are not references
    assert set(_refs(adgm, "g5")) == {"(1)"}


def test_an_external_act_stays_unresolved_and_numbers_that_are_not_references_are_not_found(adgm):
    refs = _refs(adgm, "p5")
    act = refs["section 55J"]
    assert not act.resolved and act.reason == "external" and act.target_document is None
    assert not any("9.5 million" in s or "4A" in s for s in refs)


def test_pra_forms():
    own = "Own Funds (CRR)"
    cgb = "Conditions Governing Business"
    passages = [Passage(*r) for r in [
        ("a1", "of", own, "277.(1)", "Institutions shall calculate the exposure."),
        ("a2", "of", own, "277.(2)", "By way of derogation from paragraph 1, institutions may use Article 277(3)."),
        ("a3", "of", own, "277.(3)", "The amount referred to in Article 277(1) is reported under Article 206 of "
                                     "the CRR."),
        ("c1", "cgb", cgb, "2.1", "A firm must have a governance system."),
        ("c2", "cgb", cgb, "2.2", "For the purposes of 2.1, see Chapter 4 of this Part and 4.1 to 4.2."),
        ("c3", "cgb", cgb, "4.1", "Chapter four, rule one."),
        ("c4", "cgb", cgb, "4.2", "Chapter four, rule two."),
        ("r1", "rep", "Reporting", "3.1", "A firm must comply with 2.2 of the Conditions Governing Business Part "
                                          "and Conditions Governing Business 4.1."),
    ]]
    resolver = Resolver(passages)
    by_id = {p.id: p for p in passages}

    def refs(pid):
        return {r.surface: r for r in resolver.references(by_id[pid])}

    assert refs("a2")["paragraph 1"].targets == ("a1",)  # relative: paragraph 1 of this Article
    assert refs("a2")["Article 277(3)"].targets == ("a3",)
    assert refs("a3")["Article 277(1)"].targets == ("a1",)
    assert refs("a3")["Article 206"].reason == "external"
    c2 = refs("c2")
    assert c2["2.1"].targets == ("c1",)
    assert c2["Chapter 4"].targets == ("c3", "c4")
    assert c2["4.1 to 4.2"].targets == ("c3", "c4")
    # an exact title wins over another title without its bracket: "Reporting" is not "Reporting (CRR)"
    crr = Passage("x1", "rep-crr", "Reporting (CRR)", "3.1", "A CRR report.")
    asks = Passage("x2", "cgb", cgb, "9.9", "See Reporting 3.1.")
    both = Resolver([*passages, crr, asks], {"Reporting": "rep-crr"})  # the alias a document map would give
    assert [r.targets for r in both.references(asks)] == [("r1",)]
    r1 = refs("r1")
    assert r1["2.2"].targets == ("c2",) and r1["2.2"].target_document == "cgb"
    assert r1["Conditions Governing Business 4.1"].targets == ("c3",)


def test_graph_is_written_deterministically_with_its_datasets_config(tmp_path):
    passages = _adgm()
    rows = graph_rows(passages, ALIASES)
    summary = graph_summary(rows, len(passages))
    assert summary["references"] == len(rows) and summary["unresolved"] == {"ambiguous": 1, "external": 1}
    write_graph(rows, summary, tmp_path / "a")
    write_graph(graph_rows(passages, ALIASES), summary, tmp_path / "b")
    first = (tmp_path / "a" / GRAPH_FILE).read_bytes()
    assert first == (tmp_path / "b" / GRAPH_FILE).read_bytes()
    assert "config_name: xref" in (tmp_path / "a" / "README.md").read_text()
    row = json.loads(first.splitlines()[0])
    assert row["source_id"] == "g5" and row["targets"] == ["g4"]


def test_two_corpora_graphs_each_load_their_own_rows(tmp_path, monkeypatch):
    """Every graph folder is named xref: under one config name, datasets served the second corpus the first one's
    rows from its cache. A content-named config keeps them apart; the same graph keeps its name."""
    from datasets import load_dataset

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    passages = _adgm()
    rows = graph_rows(passages, ALIASES)
    summary = graph_summary(rows, len(passages))
    write_graph(rows, summary, tmp_path / "one" / "xref")
    write_graph(rows[:1], graph_summary(rows[:1], len(passages)), tmp_path / "two" / "xref")
    first = load_dataset(str(tmp_path / "one" / "xref"), split="train")
    second = load_dataset(str(tmp_path / "two" / "xref"), split="train")
    assert len(first) == len(rows) and len(second) == 1
    write_graph(rows, summary, tmp_path / "again" / "xref")
    names = [(tmp_path / d / "xref" / "README.md").read_text().split("config_name: ")[1].split("\n")[0]
             for d in ("one", "two", "again")]
    assert names[0] == names[2] != names[1] and names[0].startswith("xref-")


def test_data_xref_command_writes_the_graph_beside_the_corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "documents").mkdir(parents=True)
    records = [{"ID": "x1", "DocumentID": 1, "PassageID": "1.1.1", "Passage": "A firm must keep records."},
               {"ID": "x2", "DocumentID": 1, "PassageID": "1.1.2", "Passage": "Rule 1.1.1 applies."}]
    (root / "documents" / "1.json").write_text(json.dumps(records))
    (root / "ObliQA_dev.json").write_text("[]")
    (root / "ObliQA_test.json").write_text("[]")
    assert main(["data", "xref", "--data", str(root)]) == 0
    rows = [json.loads(line) for line in (root / "xref" / GRAPH_FILE).read_text().splitlines()]
    assert [(r["source_id"], r["targets"]) for r in rows] == [("x2", ["x1"])]


def test_footnote_marks_resolve_to_the_pages_footnote_and_numbers_that_are_not_marks_do_not():
    """A superscript mark the ingested text keeps as a word ("Combined Code 5 as appropriate") points to the page's
    passage numbered "footnote 5"; a rule row's footnotes follow it, so a mark used twice in a page resolves to the
    next footnote so marked. Numbers after a word that numbers them, before a unit, in a list of numbers or in a
    table row are not marks."""
    ss = "SS1/20 Corporate governance"
    passages = [Passage(*r) for r in [
        ("s1", "ss", ss, "1.1", "Societies should have regard to the UK Corporate Governance Code 4 or the Combined "
                                "Code 5 as appropriate. They should notify the PRA. 6"),
        ("s2", "ss", ss, "1.2", "Firms hold Tier 2 capital for 5 years under Chapter 3; see Annexes 1 and 2, and "
                                "Category 4 firms.\nRisk | Weight 5 | 12%"),
        ("f4", "ss", ss, "footnote 4", "4. The UK Corporate Governance Code, published by the FRC."),
        ("f5", "ss", ss, "footnote 5", "5. The Combined Code on Corporate Governance."),
        ("f6", "ss", ss, "footnote 6", "6. June 2018: www.bankofengland.co.uk."),
        ("r1", "rb", "Rulebook Part", "2.1", "A firm must keep records 1 of its decisions."),
        ("rf1", "rb", "Rulebook Part", "footnote 1", "1. Records include electronic records."),
        ("r2", "rb", "Rulebook Part", "2.2", "A firm must report changes 1 promptly."),
        ("rf2", "rb", "Rulebook Part", "footnote 1", "1. Changes of control only."),
        ("o1", "other", "Other", "3.1", "The firm must wait 5 days."),
    ]]
    resolver = Resolver(passages)
    by_id = {p.id: p for p in passages}
    marks = {r.surface: r.targets for r in resolver.references(by_id["s1"]) if r.kind == "footnote"}
    assert marks == {"4": ("f4",), "5": ("f5",), "6": ("f6",)}
    assert [r for r in resolver.references(by_id["s2"]) if r.kind == "footnote"] == []
    assert [r.targets for r in resolver.references(by_id["r1"]) if r.kind == "footnote"] == [("rf1",)]
    assert [r.targets for r in resolver.references(by_id["r2"]) if r.kind == "footnote"] == [("rf2",)]
    assert [r for r in resolver.references(by_id["f5"])] == []  # a footnote never marks itself
    assert [r for r in resolver.references(by_id["o1"])] == []  # no footnotes in the page: no marks
    assert resolver.lookup("ss", "footnote", "5") == ("f5",)
    assert resolver.lookup("rb", "footnote", "1") == ("rf1", "rf2")


def test_a_number_after_a_full_stop_is_a_mark_even_after_a_word_that_numbers():
    """"... meet certain conditions. 45" ends a sentence with a mark; "Condition 4" and "No. 4" number a thing."""
    ss = "SS5/21 Branches"
    passages = [Passage(*r) for r in [
        ("s1", "ss", ss, "2.1", "Firms may apply for a permission provided these entities meet certain conditions. 4"),
        ("s2", "ss", ss, "2.2", "Firms must meet Condition 4 and the form No. 4 applies."),
        ("f4", "ss", ss, "footnote 4", "4. SS16/13 'Large Exposures', June 2018."),
    ]]
    resolver = Resolver(passages)
    assert [r.targets for r in resolver.references(passages[0]) if r.kind == "footnote"] == [("f4",)]
    assert [r for r in resolver.references(passages[1]) if r.kind == "footnote"] == []


def test_named_rules_resolve_to_the_rule_that_states_its_name():
    """A Part that states its rules by name ("Fundamental Rule 2: ...", numbered 2.2) is cited by that name:
    "Fundamental Rule 2", "Fundamental Rules 1 and 3", "Fundamental Rules 1–3", "Rule 3 in the Fundamental Rules
    Part" all land on the named rules, not on the Part's chapters 1 to 3 or the citing statement's own rule 2. A
    singular name is one rule (the "5" after it marks a footnote); a rule's own label is no reference; where two names
    of one Part give the same number ("Rule 1 of the Conduct Rules Part"), nothing is guessed."""
    fr, conduct, ss = "Fundamental Rules", "Conduct Rules", "SS3/21 Resolution"
    passages = [Passage(*r) for r in [
        ("fr1", "149", fr, "1.1", "In this Part, firm means a PRA-authorised person."),
        ("fr21", "149", fr, "2.1", "Fundamental Rule 1: A firm must conduct its business with integrity."),
        ("fr22", "149", fr, "2.2", "Fundamental Rule 2: A firm must act with due skill, care and diligence."),
        ("fr23", "149", fr, "2.3", "Fundamental Rule 3: A firm must act in a prudent manner."),
        ("fr31", "149", fr, "3.1", "Fundamental Rules 1 and 3 apply to every firm."),
        ("c21", "126", conduct, "2.1", "Individual Conduct Rule 1: You must act with integrity."),
        ("c31", "126", conduct, "3.1", "Senior Manager Conduct Rule 1: You must take reasonable steps."),
        ("s2", "21", ss, "2", "A firm must notify the PRA."),
        ("s3", "21", ss, "3", "In line with Fundamental Rule 2, firms should prepare (see Fundamental Rules 1–3). "
                              "Rule 3 in the Fundamental Rules Part of the PRA Rulebook applies."),
        ("s4", "21", ss, "4", "Consistent with Fundamental Rule 2, 5 explaining why, and Rule 1 of the Conduct "
                              "Rules Part."),
    ]]
    resolver = Resolver(passages)
    by_id = {p.id: p for p in passages}
    refs = {r.surface: r.targets for r in resolver.references(by_id["s3"])}
    assert refs == {"Fundamental Rule 2": ("fr22",), "Fundamental Rules 1–3": ("fr21", "fr22", "fr23"),
                    "Rule 3": ("fr23",)}
    assert {r.surface: r.targets for r in resolver.references(by_id["fr31"])} == {
        "Fundamental Rules 1": ("fr21",), "3": ("fr23",)}
    s4 = resolver.references(by_id["s4"])
    assert [(r.surface, r.targets) for r in s4 if r.resolved] == [("Fundamental Rule 2", ("fr22",))]
    assert not any(r.surface == "5" and r.resolved for r in s4)
    assert [r.reason for r in s4 if r.surface == "Rule 1"] == ["not_in_corpus"]
    for own in ("fr22", "c31"):  # a rule's own label
        assert resolver.references(by_id[own]) == []
    # labelled by the rule's own number (2.3, not 3): a labelled reference expands to the same passages
    for r in resolver.references(by_id["s3"]):
        assert resolver.lookup("149", r.kind, r.target_number) == r.targets
