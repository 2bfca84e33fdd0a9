"""Pseudo-questions of an ingested rulebook (rirag.data.pseudo_queries): its headings, labels removed, as questions
whose gold passages are the passages under them; the unlabelled adaptation of an encoder trains on them."""

from __future__ import annotations

import json

import pytest

from rirag.constants import PSEUDO_QUERY_MAX_GOLD
from rirag.data.pseudo_queries import heading_subject, pseudo_questions
from rirag.errors import DataError


@pytest.mark.parametrize("heading, subject", [
    ("Article 4 Liquidity coverage requirement", "Liquidity coverage requirement"),
    ("2.1 Notification of breaches", "Notification of breaches"),
    ("428b The Net Stable Funding Ratio", "The Net Stable Funding Ratio"),
    ("II Formula for the outflow", "Formula for the outflow"),
    ("(b) the firm's duties", "the firm's duties"),
    ("Chapter 3 – Record keeping", "Record keeping"),
    ("Introduction", "Introduction"),
])
def test_a_heading_loses_its_label_and_keeps_its_subject(heading, subject):
    assert heading_subject(heading) == subject


def write(root, records_by_doc):
    (root / "documents").mkdir(parents=True)
    for doc, records in records_by_doc.items():
        (root / "documents" / f"{doc}.json").write_text(json.dumps(records))
    return root


def rec(pid, doc, headings):
    return {"ID": pid, "DocumentID": doc, "PassageID": pid, "Passage": f"text of {pid}", "Headings": headings}


def test_each_heading_is_one_question_over_the_passages_under_it(tmp_path):
    title = "SS1/23 Model risk management"
    many = [rec(f"m{i}", 1, [title, "3 Governance of models"]) for i in range(PSEUDO_QUERY_MAX_GOLD + 3)]
    root = write(tmp_path / "c", {1: [rec("a", 1, [title, "1 Introduction"]),  # one word: no question
                                      rec("b", 1, [title, "2 Model identification and classification"]),
                                      rec("c", 1, [title, "2 Model identification and classification"]), *many],
                                  2: [rec("d", 2, [])]})
    qs = {q.text: q for q in pseudo_questions(root)}
    assert set(qs) == {"Model identification and classification", "Governance of models (SS1/23 Model risk management)"}
    assert qs["Model identification and classification"].gold == ("b", "c")
    assert len(qs["Governance of models (SS1/23 Model risk management)"].gold) == PSEUDO_QUERY_MAX_GOLD
    # a passage outside the given corpus is not gold
    assert pseudo_questions(root, corpus={"b": 1})[0].gold == ("b",)


def test_a_corpus_without_headings_is_a_clear_error(tmp_path):
    root = write(tmp_path / "c", {1: [{"ID": "a", "DocumentID": 1, "PassageID": "1", "Passage": "x"}]})
    with pytest.raises(DataError, match="no passage has a heading path"):
        pseudo_questions(root)


def test_the_trainers_train_on_the_headings_without_labels(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
    import contrastive_tuning as ct
    from rirag.data.obliqa import load_obliqa
    from rirag.errors import UsageError

    title = "SS1/23 Model risk management"
    records = [rec(f"p{i}", 1, [title, f"{i} Heading number {i} of models"]) for i in range(40)]
    root = write(tmp_path / "c", {1: records})
    (root / "document_map.json").write_text(json.dumps({"1": ["ss1.html", title]}))
    obliqa = load_obliqa(root)
    args = ct.ContrastiveTuningArguments(pseudo_queries=True, eval_split="", eval_holdout_fraction=0.1)
    train, select = ct.selection_sets(args, obliqa)
    assert len(train) == 36 and len(select) == 4
    assert {q.text for q in train + select} == {f"Heading number {i} of models" for i in range(40)}
    columns = ct.training_columns(args, train, obliqa.corpus)
    assert all(p == f"text of p{a.split()[2]}" for a, p in zip(columns["anchor"], columns["positive"]))
    with pytest.raises(UsageError, match="eval_split"):
        ct.selection_sets(ct.ContrastiveTuningArguments(pseudo_queries=True), obliqa)


def test_entailment_tuning_masks_the_heading_as_the_claim(tmp_path):
    import sys
    from pathlib import Path

    from transformers import BertTokenizerFast

    from tiny_encoder import write_vocab

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
    import entailment_tuning as et
    from rirag.data.obliqa import load_obliqa

    root = write(tmp_path / "c", {1: [rec("a", 1, ["Rulebook", "4 records must be kept"]),
                                      rec("b", 1, ["Rulebook", "Introduction"])]})
    (root / "document_map.json").write_text(json.dumps({"1": ["r.html", "Rulebook"]}))
    tokenizer = BertTokenizerFast(vocab_file=str(write_vocab(tmp_path / "vocab")), do_lower_case=True)
    ds = et.build_dataset(et.EntailmentTuningArguments(pseudo_queries=True, max_length=64), tokenizer,
                          load_obliqa(root))
    assert len(ds) == 1  # "Introduction" is one word: no claim
    ids, mask = ds[0]["input_ids"], ds[0]["hypothesis_mask"]
    claim = tokenizer("records must be kept", add_special_tokens=False)["input_ids"]  # long enough: no title
    assert [i for i, m in zip(ids, mask) if m] == claim
