"""Data layer: loading, gold mapping with duplicate keys, bad input with clear errors."""

from __future__ import annotations

import json

import pytest

from rirag.data.obliqa import load_obliqa, resolve_data_dir
from rirag.errors import DataError


def test_tiny_corpus_mapping_with_duplicate_keys(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    # 6 documents × 4 records, one empty per document stays out of the index but is counted
    assert len(o.passages) == 24
    assert len(o.corpus) == 18
    assert sorted(o.empty_ids) == sorted(f"d{d}-empty" for d in range(1, 7))
    report = o.report()
    assert report["duplicate_keys"] == 6 and report["empty_passages"] == 6
    # the multi-passage question names key 1.2 twice with different text: both passages, distinct ids
    q = {q.id: q for q in o.splits["dev"]}["q1-b"]
    assert q.gold == ("d1-p2", "d1-dup")
    assert o.title(1) == "Rulebook – number 1"  # '96 is a Windows-1252 en dash in document_map.json


def test_real_data_facts(real_obliqa):
    o = real_obliqa
    report = o.report()
    assert report["passage_records"] == 13732
    assert report["distinct_document_passage_keys"] == 13705
    assert report["duplicate_keys"] == 17
    assert report["empty_passages"] == 720
    assert len(o.splits["dev"]) == 2788 and len(o.splits["test"]) == 2786
    # the key with seven passages maps each gold passage to its own text
    dup = [p for p in o.passages.values() if (p.document_id, p.passage_id) == (17, "Part 12.Chapter 1.134.")]
    assert len(dup) == 7
    gold = {cid for qs in o.splits.values() for q in qs for cid in q.gold}
    assert all(cid in o.passages for cid in gold)
    # one spliced gold text per published split, repaired to the passage its key names
    repaired = report["gold_repaired"]
    assert {(g["source"], g["document_id"], g["passage_id"]) for g in repaired} == {
        ("ObliQA_dev.json", 10, "4.7.7"), ("ObliQA_test.json", 1, "2.Guidance.27.")}
    assert report["gold_unmapped"] == []
    # shared gold passages between published dev and test (the leak that motivates the re-split)
    dev = {c for q in o.splits["dev"] for c in q.gold}
    test = {c for q in o.splits["test"] for c in q.gold}
    assert len(dev & test) == 897


def test_missing_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("RIRAG_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="data folder not found"):
        resolve_data_dir(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no documents/ folder"):
        load_obliqa(tmp_path / "empty")


def test_env_var_is_used(tiny_data_dir, monkeypatch):
    monkeypatch.setenv("RIRAG_DATA_DIR", str(tiny_data_dir))
    assert resolve_data_dir(None) == tiny_data_dir


def test_malformed_document_json_names_file_and_position(tiny_data_dir):
    bad = tiny_data_dir / "documents" / "3.json"
    bad.write_text('[{"ID": "x", "DocumentID": 3,\n "PassageID": "1" "Passage": "y"}]')
    with pytest.raises(DataError) as err:
        load_obliqa(tiny_data_dir)
    msg = str(err.value)
    assert "3.json" in msg and "line 2" in msg and "column" in msg


def test_record_missing_field_names_record_and_field(tiny_data_dir):
    path = tiny_data_dir / "ObliQA_dev.json"
    records = json.loads(path.read_text())
    del records[1]["Question"]
    path.write_text(json.dumps(records))
    with pytest.raises(DataError) as err:
        load_obliqa(tiny_data_dir)
    msg = str(err.value)
    assert "ObliQA_dev.json" in msg and "record 1" in msg and records[1]["QuestionID"] in msg and "'Question'" in msg

    doc = tiny_data_dir / "documents" / "2.json"
    recs = json.loads(doc.read_text())
    del recs[0]["Passage"]
    doc.write_text(json.dumps(recs))
    with pytest.raises(DataError, match=r"2\.json: record 0 .*missing field 'Passage'"):
        load_obliqa(tiny_data_dir)


def test_gold_passage_not_in_corpus_is_reported_not_fatal(tiny_data_dir):
    path = tiny_data_dir / "ObliQA_test.json"
    records = json.loads(path.read_text())
    records[0]["Passages"].append({"DocumentID": 99, "PassageID": "9.9", "Passage": "A rule nobody wrote."})
    path.write_text(json.dumps(records))
    o = load_obliqa(tiny_data_dir)
    unmapped = o.report()["gold_unmapped"]
    assert len(unmapped) == 1 and unmapped[0]["question_id"] == records[0]["QuestionID"]
    q = {q.id: q for q in o.splits["test"]}[records[0]["QuestionID"]]
    assert len(q.gold) == 1  # the mapped gold passage survives


def test_spliced_gold_text_is_repaired_only_with_an_intact_prefix(tiny_data_dir):
    path = tiny_data_dir / "ObliQA_dev.json"
    records = json.loads(path.read_text())
    original = records[0]["Passages"][0]["Passage"]
    records[0]["Passages"][0]["Passage"] = original[:50] + "XYZ spliced text from elsewhere"
    records[2]["Passages"][0]["Passage"] = "Completely different text."
    path.write_text(json.dumps(records))
    o = load_obliqa(tiny_data_dir)
    report = o.report()
    # 50 leading characters agree and the corpus passage is 61 characters long: below both thresholds
    assert len(original) > 50
    assert [g["question_id"] for g in report["gold_unmapped"]] == [records[0]["QuestionID"], records[2]["QuestionID"]]
    records[0]["Passages"][0]["Passage"] = original + " and then spliced text"
    path.write_text(json.dumps(records))
    report = load_obliqa(tiny_data_dir).report()
    assert [g["question_id"] for g in report["gold_repaired"]] == [records[0]["QuestionID"]]


def test_a_repaired_gold_passage_is_noted_not_warned(tiny_data_dir, caplog):
    """Every ObliQA command loads the corpus: a gold text repaired to its passage keeps the question's gold, so it is
    an INFO line (and in the data report), while a gold passage that maps nowhere stays a WARNING."""
    import logging

    path = tiny_data_dir / "ObliQA_dev.json"
    records = json.loads(path.read_text())
    records[0]["Passages"][0]["Passage"] += " and then spliced text"  # repaired: an intact prefix
    records[2]["Passages"][0]["Passage"] = "Completely different text."  # unmapped
    path.write_text(json.dumps(records))
    caplog.set_level(logging.INFO, logger="rirag.data.obliqa")
    load_obliqa(tiny_data_dir)
    levels = {r.getMessage().split(": ")[-1].split(" ")[0]: r.levelno for r in caplog.records
              if r.getMessage().startswith("gold passage")}
    assert levels == {"repaired": logging.INFO, "unmapped": logging.WARNING}
