"""Split schemes: leakage-free invariants, determinism, the overlap audit, split names."""

from __future__ import annotations

import pytest

from rirag.data.obliqa import Question, load_obliqa
from rirag.data.splits import leakage_free_split, overlap_audit, split_questions
from rirag.errors import DataError


def _check_invariants(o, split):
    doc_sets = [set(split.documents[s]) for s in ("train", "validation", "test")]
    assert not (doc_sets[0] & doc_sets[1] or doc_sets[0] & doc_sets[2] or doc_sets[1] & doc_sets[2])
    assert set().union(*doc_sets) == {p.document_id for p in o.passages.values()}
    for name, questions in split.questions.items():
        for q in questions:
            assert set(q.gold_documents) <= set(split.documents[name]), (name, q.id)
    kept = sum(len(qs) for qs in split.questions.values())
    assert kept + split.discarded_multi_document + split.discarded_no_gold == split.pooled_questions


def test_tiny_split_rules(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    split = leakage_free_split(o, seed=7, fractions=(0.5, 0.25, 0.25))
    _check_invariants(o, split)
    assert [len(split.documents[s]) for s in ("train", "validation", "test")] == [3, 2, 1]
    # the cross-document question survives only when documents 1 and 2 land in the same split
    together = {s for s, ds in split.documents.items() if {1, 2} <= set(ds)}
    kept_ids = {q.id for qs in split.questions.values() for q in qs}
    assert ("q-cross" in kept_ids) == bool(together)
    assert split.discarded_multi_document == (0 if together else 1)


def test_multi_passage_rule_on_hand_built_questions(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    split = leakage_free_split(o, seed=0, fractions=(0.5, 0.25, 0.25))
    doc_split = {d: s for s, ds in split.documents.items() for d in ds}
    a, b = next((d1, d2) for d1 in range(1, 7) for d2 in range(1, 7) if doc_split[d1] != doc_split[d2])
    o.splits["dev"] = [Question("x-multi", "q?", ("d1-p1",), 2, (a, b)),
                       Question("x-single", "q?", ("d1-p1",), 1, (a,))]
    o.splits["test"] = []
    split = leakage_free_split(o, seed=0, fractions=(0.5, 0.25, 0.25))
    assert split.discarded_multi_document == 1
    assert [q.id for q in split.questions[doc_split[a]]] == ["x-single"]


def test_real_split_is_deterministic_and_valid(real_obliqa):
    first = leakage_free_split(real_obliqa, seed=42)
    second = leakage_free_split(real_obliqa, seed=42)
    other = leakage_free_split(real_obliqa, seed=43)
    assert first.fingerprint() == second.fingerprint()
    assert first.fingerprint() != other.fingerprint()
    _check_invariants(real_obliqa, first)
    assert [len(first.documents[s]) for s in ("train", "validation", "test")] == [32, 6, 2]
    assert first.pooled_questions == 2788 + 2786


def test_unknown_split_name(tiny_data_dir):
    o = load_obliqa(tiny_data_dir)
    with pytest.raises(DataError, match="unknown split 'dev'.*original-dev"):
        split_questions(o, "dev")
    with pytest.raises(DataError, match="ObliQA_train.json"):
        split_questions(o, "original-train")


def test_overlap_audit_counts():
    train = [Question("t1", "What must a firm report to the Regulator?"),
             Question("t2", "When is a fund passport granted?"),
             Question("t3", "Who approves the Shari'a board?")]
    evaluation = [Question("e1", "what must a firm  report to the regulator?"),  # exact after folding
                  Question("e2", "When is a fund passport granted ?"),  # fuzzy
                  Question("e3", "How are insurance reserves valued?")]

    def embed(texts):  # a toy embedder: e3 and t3 point the same way
        import numpy as np

        vecs = np.array([[1.0, 0.0] if "Shari" in t or "insurance" in t else [0.0, 1.0] for t in texts])
        return vecs

    report = overlap_audit(train, evaluation, embedder=embed)
    assert report["exact"]["pairs"] == 1 and report["exact"]["examples"][0] == ("t1", "e1")
    fuzzy = {(a, b) for a, b, _ in report["fuzzy"]["examples"]}
    assert fuzzy == {("t1", "e1"), ("t2", "e2")}
    assert ("t3", "e3", 1.0) in report["semantic"]["examples"]
    skipped = overlap_audit(train, evaluation, embedder=None)
    assert "skipped" in skipped["semantic"]
