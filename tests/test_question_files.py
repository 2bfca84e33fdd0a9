"""Questions files in the formats people have (issue 68, item 4): JSON, JSONL and CSV (comma or semicolon, with or
without a byte order mark) read by the one reader; a file that is none of them is refused naming the formats read;
a question that is only a rule label is looked up as that rule."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from rirag.cli import main
from rirag.data.questions import read_questions
from rirag.errors import DataError

EXPECTED = [{"QuestionID": "q1", "Question": "What must a firm keep?"},
            {"QuestionID": "q2", "Question": "Rule 3.2.1"}]


def _write(path: Path, text: str, bom: bool = False) -> Path:
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


@pytest.mark.parametrize("name, text, bom", [
    ("q.json", json.dumps(EXPECTED), False),
    ("q.jsonl", "\n".join(json.dumps(r) for r in EXPECTED) + "\n\n", False),
    ("q.json", "\n".join(json.dumps(r) for r in EXPECTED), False),  # JSONL named .json
    ("q.csv", "QuestionID,Question\nq1,What must a firm keep?\nq2,Rule 3.2.1\n", False),
    ("q.csv", "QuestionID;Question\r\nq1;What must a firm keep?\r\nq2;Rule 3.2.1\r\n", True),  # a European Excel
    ("q.txt", "QuestionID;Question\nq1;What must a firm keep?\nq2;\"Rule 3.2.1\"\n", True),  # told by its text
])
def test_json_jsonl_and_csv_read_the_same_questions(tmp_path, name, text, bom):
    assert read_questions(_write(tmp_path / name, text, bom)) == EXPECTED


def test_csv_gold_cells_are_lists_of_ids(tmp_path):
    path = _write(tmp_path / "q.csv", "QuestionID;Question;Gold\nq1;What must a firm keep?;p1|p2\nq2;Rule 3.2.1;\n")
    assert read_questions(path) == [dict(EXPECTED[0], Gold=["p1", "p2"]), EXPECTED[1]]


@pytest.mark.parametrize("name, text, where", [
    ("q.txt", "What must a firm keep?\n", "names no QuestionID and Question columns"),
    ("q.json", json.dumps({"questions": EXPECTED}) + "\nx", "line 2: malformed JSON"),
    ("q.jsonl", json.dumps(EXPECTED[0]) + "\n{\"QuestionID\": \n", "line 2: malformed JSON"),
    ("q.json", json.dumps({"questions": EXPECTED}, indent=2), "expected a JSON list of {QuestionID, Question} records, "
                                                             "got dict"),
])
def test_a_file_of_no_format_read_names_the_formats(tmp_path, name, text, where):
    with pytest.raises(DataError) as err:
        read_questions(_write(tmp_path / name, text))
    assert where in str(err.value) and "JSON" in str(err.value) and "JSONL" in str(err.value) \
        and "CSV" in str(err.value) and "semicolon" in str(err.value), err.value


def test_a_csv_record_error_names_its_line(tmp_path):
    path = _write(tmp_path / "q.csv", "QuestionID;Question\nq1;What must a firm keep?\nq1;Again?\n")
    with pytest.raises(DataError, match=r"q.csv: line 3: QuestionID 'q1' occurs twice"):
        read_questions(path)


@pytest.mark.parametrize("question, keys", [
    ("Rule 3.2.1", ("rule 3.2.1", "3.2.1")), ("6.8.3", ("6.8.3",)), ("Article 313-1", ("article 313-1", "313-1")),
    ("rule 3.2.1.", ("rule 3.2.1", "3.2.1")), ("What does Rule 3.2.1 require?", ()), ("Records", ()),
])
def test_a_label_only_question_is_told_from_a_question(question, keys):
    from rirag.retrieval.rule_labels import question_labels

    assert question_labels(question) == keys


@pytest.fixture()
def cited_rule(tmp_path) -> Path:
    """Rule 3.2.1 of one document, and passages that cite it by its number (what the words of "Rule 3.2.1" find)."""
    root = tmp_path / "corpus"
    (root / "documents").mkdir(parents=True)
    records = [{"ID": "cite-1", "DocumentID": 1, "PassageID": "2.1", "Passage": "Rule 3.2.1 applies to rule 3.2.1 "
                "records as set out in Rule 3.2.1."},
               {"ID": "cite-2", "DocumentID": 1, "PassageID": "2.2", "Passage": "See rule 3.2.1 and rule 3.2.2."},
               {"ID": "the-rule", "DocumentID": 1, "PassageID": "3.2.1", "Passage": "A firm must keep its client "
                "money records for five years."},
               {"ID": "article", "DocumentID": 2, "PassageID": "Article 313-1", "Passage": "Fraud is punished by "
                "five years of imprisonment."},
               {"ID": "cites-article", "DocumentID": 2, "PassageID": "Article 313-2", "Passage": "Article 313-1 "
                "article 313-1 applies to attempts, as article 313-1 says."}]
    (root / "documents" / "1.json").write_text(json.dumps(records), "utf-8")
    return root


def test_retrieve_reads_a_semicolon_csv_and_looks_a_rule_label_up(cited_rule, tmp_path):
    questions = _write(tmp_path / "q.csv", "QuestionID;Question\nq1;Rule 3.2.1\nq2;Article 313-1\n"
                                           "q3;How long are client money records kept?\n", bom=True)
    run = tmp_path / "run.trec"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["retrieve", "--data", str(cited_rule), "--questions", str(questions), "--retriever", "bm25",
                     "--k", "3", "--out", str(run)]) == 0
    first = {}
    for line in run.read_text("utf-8").splitlines():
        qid, _, pid, rank, *_ = line.split()
        if rank == "1":
            first[qid] = pid
    assert first == {"q1": "the-rule", "q2": "article", "q3": "the-rule"}


def test_ask_answers_a_rule_label_from_that_rule(cited_rule):
    from rirag.generation.extractive import ExtractiveComposer
    from rirag.generation.pipeline import AnswerOptions
    from rirag.generation.session import AnsweringSession
    from rirag.retrieval.registry import RetrieverSpec

    composer = ExtractiveComposer(is_obligation=lambda sentences: ["must" in s for s in sentences])
    session = AnsweringSession(AnswerOptions(retriever=RetrieverSpec("bm25"), k=2), str(cited_rule),
                               generator=composer)
    answer = session.ask("Rule 3.2.1")
    assert answer.passages[0].id == "the-rule" and answer.cited[0].id == "the-rule", answer.text


# -- gold mapped only where it is scored, through an index (issue 68, item 8) ---------------------------------------


@pytest.fixture()
def gold_by_text(tiny_data_dir, tmp_path) -> Path:
    """Questions whose gold is given by text (as ukfin_xref's), one held word for word, one only fuzzily."""
    records = json.loads((tiny_data_dir / "documents" / "3.json").read_text("utf-8"))
    questions = [{"QuestionID": "g1", "Question": "How long are client money records kept?",
                  "Gold": [{"text": records[0]["Passage"]}]},
                 {"QuestionID": "g2", "Question": "What may the Regulator ask about client money?",
                  "Gold": [{"text": records[1]["Passage"].replace("any time", "any tme")}]}]
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(questions), "utf-8")
    return path


def _no_scan(monkeypatch):
    """Every way of reading the whole corpus for a gold text fails the test."""
    from rirag.data import passage_store, questions

    monkeypatch.setattr(passage_store.PassageTable, "holding", lambda *a: pytest.fail("a scan of the corpus"))
    monkeypatch.setattr(questions.TextMapper, "_holding", lambda *a: pytest.fail("a scan of the corpus"))


def test_retrieve_maps_no_gold(tiny_data_dir, gold_by_text, tmp_path, monkeypatch):
    from rirag.data import questions

    monkeypatch.setattr(questions.TextMapper, "map", lambda *a: pytest.fail("gold mapped for retrieval"))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["retrieve", "--data", str(tiny_data_dir), "--questions", str(gold_by_text), "--retriever",
                     "bm25", "--k", "2", "--out", str(tmp_path / "run.trec")]) == 0
    assert {line.split()[0] for line in (tmp_path / "run.trec").read_text("utf-8").splitlines()} == {"g1", "g2"}


def test_scored_gold_is_mapped_through_the_bm25_index_not_a_scan(tiny_data_dir, gold_by_text, tmp_path, monkeypatch):
    from rirag.data.obliqa import load_obliqa
    from rirag.data.questions import load_questions
    from rirag.retrieval.gold_index import bm25_candidates

    _no_scan(monkeypatch)
    qset = load_questions(gold_by_text, load_obliqa(tiny_data_dir), bm25_candidates)
    assert [(m.passage_id, m.how) for m in qset.mappings] == [("d3-p1", "exact"), ("d3-p2", "fuzzy")]
    run = tmp_path / "run.trec"
    run.write_text("g1 Q0 d3-p1 1 2.0 x\ng2 Q0 d3-p1 1 2.0 x\ng2 Q0 d3-p2 2 1.0 x\n", "utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["evaluate", "retrieval", "--data", str(tiny_data_dir), "--questions", str(gold_by_text),
                     "--run", str(run), "--k", "2"]) == 0
    assert "2 of 2 mapped" in out.getvalue()


def test_gold_of_another_corpus_is_said_at_once(tiny_data_dir, tmp_path, caplog, monkeypatch):
    """Issue 68, item 5: a file whose gold maps nowhere is named after its first UNMAPPED_EARLY items, not after
    every one (99 s on the PRA pages)."""
    import logging

    from rirag.data import questions
    from rirag.data.obliqa import load_obliqa

    path = tmp_path / "other.jsonl"
    path.write_text("\n".join(json.dumps({"QuestionID": f"o{i}", "Question": "What must an insurer file?",
                                          "Gold": [{"text": f"An insurer must file solvency return {i}."}]})
                              for i in range(questions.UNMAPPED_EARLY + 5)), "utf-8")
    mapped = []
    original = questions._map_gold
    monkeypatch.setattr(questions, "_map_gold", lambda *a: mapped.append(1) or original(*a))
    seen_at = []
    monkeypatch.setattr(questions.logger, "warning", lambda msg, *args: seen_at.append((len(mapped), msg % args)))
    with caplog.at_level(logging.WARNING):
        questions.load_questions(path, load_obliqa(tiny_data_dir))
    assert seen_at[0][0] == questions.UNMAPPED_EARLY and "other.jsonl: its first 10 gold passages map to no passage" \
        in seen_at[0][1], seen_at
    assert "15 of 15 gold passages map to no passage" in seen_at[-1][1]
