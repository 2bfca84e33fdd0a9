"""Dataset builders: BEIR shape, cards, determinism byte for byte, nothing half-written on failure."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rirag.errors import DataError
from rirag.hub.dataset_build import (
    AustralianBuildConfig,
    BuildConfig,
    australian_splits,
    build,
    build_australian,
    read_australian_legalqa,
)


def _digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.arrow"))}


def test_build_shape_card_and_determinism(tiny_data_dir, tmp_path):
    from datasets import load_from_disk

    cfg = BuildConfig(data=str(tiny_data_dir), out=str(tmp_path / "a"), audit_embedder="none")
    summary = build(cfg)
    build(BuildConfig(data=str(tiny_data_dir), out=str(tmp_path / "b"), audit_embedder="none"))
    for scheme in ("original", "leakage-free"):
        assert _digest(tmp_path / "a" / scheme) == _digest(tmp_path / "b" / scheme)
    lf = tmp_path / "a" / "leakage-free"
    corpus = load_from_disk(str(lf / "corpus"))
    assert set(corpus.column_names) == {"_id", "title", "text", "document_id", "passage_id"}
    assert len(corpus) == 18
    queries, qrels = load_from_disk(str(lf / "queries")), load_from_disk(str(lf / "qrels"))
    assert set(queries) == {"train", "validation", "test"}
    for name in queries:
        ids = set(queries[name]["_id"])
        assert set(qrels[name]["query-id"]) <= ids
        assert set(qrels[name]["corpus-id"]) <= set(corpus["_id"])
    card = (lf / "README.md").read_text()
    assert card.startswith("---\n") and "## Overlap audit" in card and "| train |" in card
    assert json.loads((lf / "audit.json").read_text())["semantic"]["skipped"]
    report = json.loads((lf / "build_report.json").read_text())
    assert report["fingerprint"] in card
    assert summary["leakage-free"]["statistics"][-1]["split"] == "discarded"
    other = build(BuildConfig(data=str(tiny_data_dir), out=str(tmp_path / "c"), seed=1, audit_embedder="none",
                              scheme="leakage-free"))
    assert "original" not in other


def test_failed_build_leaves_nothing_half_written(tiny_data_dir, tmp_path, monkeypatch):
    import rirag.hub.dataset_build as db

    out = tmp_path / "out"
    build(BuildConfig(data=str(tiny_data_dir), out=str(out), audit_embedder="none", scheme="original"))
    before = _digest(out / "original")

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(db, "atomic_write_json", boom)
    with pytest.raises(RuntimeError):
        build(BuildConfig(data=str(tiny_data_dir), out=str(out), audit_embedder="none", scheme="original"))
    assert _digest(out / "original") == before  # the previous build is intact
    assert [p.name for p in out.iterdir()] == ["original"]  # no temporary folder left


AULQA = [
    {"question": "What did the court decide in Smith v Jones?", "answer": "It dismissed the appeal.",
     "text": "The appeal is dismissed with costs.", "prompt": "...",
     "source": {"version_id": "a", "type": "decision", "jurisdiction": "nsw", "source": "nsw_caselaw",
                "citation": "Smith v Jones [2001] NSWSC 1", "url": "u", "text": "..."}},
    {"question": "What did the court decide in Smith v Jones?", "answer": "dup", "text": "dup text",
     "prompt": "", "source": {"citation": "Smith v Jones [2001] NSWSC 1"}},
] + [
    {"question": f"What does regulation {i} require?", "answer": f"Answer {i}.",
     "text": f"Regulation {i} requires filing.", "prompt": "",
     "source": {"citation": f"Regulation {i % 5} [200{i % 5}]"}} for i in range(20)
]


def _write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_australian_split_by_citation(tmp_path):
    records = read_australian_legalqa(str(_write_jsonl(tmp_path / "qa.jsonl", AULQA)))
    corpus, splits, stats = australian_splits(records, seed=3)
    assert stats["duplicate_questions"] == 1
    assert stats["documents"] == 6 and stats["corpus_passages"] == 21
    train_docs = {d for q in splits["train"] for d in q.gold_documents}
    test_docs = {d for q in splits["test"] for d in q.gold_documents}
    assert not train_docs & test_docs
    assert len(train_docs) + len(test_docs) == 6 and len(train_docs) == round(0.8 * 6)
    assert len(splits["train"]) + len(splits["test"]) == 21
    by_question = {}
    for r in AULQA:  # the first record of a duplicated question is the one kept
        by_question.setdefault(r["question"], r)
    for q in splits["train"] + splits["test"]:
        passage = corpus[q.gold[0]]
        # the gold passage is the record's own snippet, filed under the record's citation
        assert passage.text == by_question[q.text]["text"]
        assert passage.passage_id == by_question[q.text]["source"]["citation"]
        assert passage.document_id == q.gold_documents[0]
    summary = build_australian(AustralianBuildConfig(data=str(tmp_path / "qa.jsonl"), out=str(tmp_path / "au"),
                                                     audit_embedder="none"))
    assert (tmp_path / "au" / "README.md").read_text().startswith("---\n")
    assert summary["stats"]["duplicate_questions"] == 1


def test_australian_bad_input(tmp_path):
    bad = tmp_path / "qa.jsonl"
    bad.write_text(json.dumps(AULQA[0]) + "\n{not json}\n")
    with pytest.raises(DataError, match="line 2: malformed JSON"):
        read_australian_legalqa(str(bad))
    rec = dict(AULQA[0])
    del rec["text"]
    _write_jsonl(bad, [rec])
    with pytest.raises(DataError, match="line 1: missing field 'text'"):
        read_australian_legalqa(str(bad))
