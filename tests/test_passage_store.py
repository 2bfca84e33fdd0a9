"""The corpus as Arrow under the cache folder (``rirag.data.passage_store``): the same passages as reading every
JSON file whole, keyed by the files (a changed file is read again), a broken cache rebuilt, never read wrong."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from rirag.data.obliqa import Passage, load_obliqa
from rirag.data.passage_store import PassageTable, store_dir
from rirag.errors import DataError


def _whole_read(root: Path) -> dict[str, Passage]:
    """The loader as it was: every documents/N.json parsed into Passage objects, in file then record order."""
    files = sorted((root / "documents").glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    out = {}
    for f in files:
        for rec in json.loads(f.read_text()):
            out[rec["ID"]] = Passage(rec["ID"], int(rec["DocumentID"]), rec["PassageID"], rec["Passage"])
    return out


def _cache_files() -> list[Path]:
    return sorted(store_dir().glob("*.arrow"))


def _edit_same_size(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (as long) in ``path``, the modification time moved on by a second."""
    assert len(old) == len(new)
    st = path.stat()
    path.write_text(path.read_text().replace(old, new))
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_the_table_gives_the_passages_of_the_whole_read(tiny_data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    whole = _whole_read(tiny_data_dir)
    indexable = {pid: p for pid, p in whole.items() if p.text.strip()}
    for run in ("converted", "memory-mapped"):
        obliqa = load_obliqa(tiny_data_dir)
        assert isinstance(obliqa.passages, PassageTable), run
        assert list(obliqa.passages) == list(whole) and list(obliqa.passages.values()) == list(whole.values())
        corpus = obliqa.corpus
        assert list(corpus) == list(indexable) and len(corpus) == len(indexable) < len(whole)
        assert list(corpus.values()) == list(indexable.values()) and dict(corpus.items()) == indexable
        assert all(corpus[pid] == p for pid, p in indexable.items())
        assert corpus.texts() == [p.text for p in indexable.values()]
        assert corpus.document_ids() == [p.document_id for p in indexable.values()]
        assert "d1-empty" in obliqa.passages and "d1-empty" not in corpus and "nope" not in corpus
        with pytest.raises(KeyError):
            corpus["d1-empty"]
        assert obliqa.empty_ids == [pid for pid, p in whole.items() if not p.text.strip()]
        assert len(_cache_files()) == 1, run
    # the second load read no JSON document: the cached file was mapped
    monkeypatch.setattr("rirag.data.obliqa._passage_records", lambda path: pytest.fail(f"read {path}"))
    assert list(load_obliqa(tiny_data_dir).corpus.values()) == list(indexable.values())


def test_a_changed_document_file_is_read_again(tiny_data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    assert load_obliqa(tiny_data_dir).corpus["d3-p2"].text.startswith("The Regulator may require")
    _edit_same_size(tiny_data_dir / "documents" / "3.json", "The Regulator may", "The Authority may")
    obliqa = load_obliqa(tiny_data_dir)
    assert obliqa.corpus["d3-p2"].text.startswith("The Authority may require")
    assert len(_cache_files()) == 2
    # a new file changes the corpus too
    (tiny_data_dir / "documents" / "7.json").write_text(json.dumps(
        [{"ID": "d7-p1", "DocumentID": 7, "PassageID": "1.1", "Passage": "Seventh rulebook."}]))
    assert "d7-p1" in load_obliqa(tiny_data_dir).corpus


def test_a_changed_file_changes_the_bm25_cache_key(tiny_data_dir, monkeypatch, tmp_path):
    from rirag.retrieval.bm25 import passage_index

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    bm25 = tmp_path / "bm25"
    before = passage_index(load_obliqa(tiny_data_dir).corpus, cache=bm25)
    assert "d3-p2" not in before.search({"q": "authority"}, k=3)["q"]
    _edit_same_size(tiny_data_dir / "documents" / "3.json", "The Regulator may", "The Authority may")
    after = passage_index(load_obliqa(tiny_data_dir).corpus, cache=bm25)
    assert list(after.search({"q": "authority"}, k=3)["q"]) == ["d3-p2"]
    assert len(list(bm25.iterdir())) == 2
    # the same corpus finds its index again (no third folder)
    passage_index(load_obliqa(tiny_data_dir).corpus, cache=bm25)
    assert len(list(bm25.iterdir())) == 2


@pytest.mark.parametrize("damage", ["truncated", "garbage", "another corpus"])
def test_a_broken_cache_is_rebuilt_with_a_warning(tiny_data_dir, monkeypatch, tmp_path, caplog, damage):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    expected = list(load_obliqa(tiny_data_dir).corpus.values())
    [path] = _cache_files()
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not arrow" * 100)
    else:  # a whole Arrow file of another corpus, under this corpus's name
        other = tmp_path / "other"
        other.mkdir()
        (other / "documents").mkdir()
        (other / "documents" / "1.json").write_text(json.dumps(
            [{"ID": "x", "DocumentID": 1, "PassageID": "1", "Passage": "Another text."}]))
        load_obliqa(other)
        [foreign] = [p for p in _cache_files() if p != path]
        path.write_bytes(foreign.read_bytes())
    with caplog.at_level(logging.WARNING, logger="rirag.data.passage_store"):
        assert list(load_obliqa(tiny_data_dir).corpus.values()) == expected
    assert f"ignoring corpus cache {path}" in caplog.text and "rebuilding it" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rirag.data.passage_store"):
        assert list(load_obliqa(tiny_data_dir).corpus.values()) == expected
    assert "ignoring" not in caplog.text  # the rebuilt file is good


def test_an_unwritable_cache_folder_holds_the_corpus_in_memory(tiny_data_dir, monkeypatch, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(blocker / "cache"))
    with caplog.at_level(logging.WARNING, logger="rirag.data.passage_store"):
        corpus = load_obliqa(tiny_data_dir).corpus
    assert "held in memory" in caplog.text
    assert list(corpus.values()) == [p for p in _whole_read(tiny_data_dir).values() if p.text.strip()]


def test_bad_input_keeps_its_errors_and_leaves_no_cache(tiny_data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    doc = tiny_data_dir / "documents" / "2.json"
    recs = json.loads(doc.read_text())
    recs[1]["ID"] = "d1-p1"  # an ID of documents/1.json
    doc.write_text(json.dumps(recs))
    with pytest.raises(DataError, match=r"2\.json: passage ID 'd1-p1' occurs twice in the corpus"):
        load_obliqa(tiny_data_dir)
    del recs[1]["Passage"]
    doc.write_text(json.dumps(recs))
    with pytest.raises(DataError, match=r"2\.json: record 1 \(id d1-p1\): missing field 'Passage'"):
        load_obliqa(tiny_data_dir)
    assert _cache_files() == [] and not [p for p in store_dir().iterdir() if p.name.endswith(".tmp")]


def test_gold_by_text_maps_the_same_over_the_table_as_over_a_dict(tmp_path, monkeypatch):
    """The text mapper's whole-corpus scan over a table (Arrow's lower case and substring match, then casefold on the
    candidates) finds what the scan of every text finds, non-ASCII casefolding included (ß is ss, K is the Kelvin
    sign)."""
    from rirag.data.questions import TextMapper

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    texts = ["Die Straße ist lang und breit.", "THE FIRM MUST KEEP RECORDS.",
             "the firm must keep records for ten years", "A \u212aelvin sign: kelvin scale records.", "   ",
             "Records of the firm, kept by the firm.", "Unrelated text about capital.",
             "The Firm\u2019s RECORDS \u2013 kept", "L\u2019\u00c9COLE des march\u00e9s"]
    (tmp_path / "c" / "documents").mkdir(parents=True)
    for d in (1, 2):
        recs = [{"ID": f"{d}-{i}", "DocumentID": d, "PassageID": str(i), "Passage": t} for i, t in enumerate(texts)]
        (tmp_path / "c" / "documents" / f"{d}.json").write_text(json.dumps(recs))
    corpus = load_obliqa(tmp_path / "c").corpus
    assert isinstance(corpus, PassageTable)
    plain = dict(corpus.items())
    for words in (["strasse"], ["firm", "records"], ["kelvin"], ["records", "firm", "kept"], ["nowhere"],
                  ["école"], ["marchés"], ["firm\u2019s"]):
        brute = [i for i, t in enumerate(corpus.texts()) if all(w in t.casefold() for w in words)]
        assert corpus.holding(words) == brute, words
    assert corpus.holding(["strasse"]) == [0, 8]  # the non-ASCII text is found (by casefold, not lower case)
    assert corpus.holding(["école"]) == [7, 15] and corpus.holding(["firm\u2019s", "kept"]) == [6, 14]
    for gold in ("strasse ist lang", "the firm must keep records", "kelvin scale records", "kept by the firm",
                 "l école des marchés", "the firm s records kept", "no passage holds this text at all"):
        assert TextMapper(corpus).map(gold) == TextMapper(plain).map(gold), gold
    assert TextMapper(corpus).map("strasse ist lang")[0] == "1-0"


def test_a_table_of_several_batches_reads_each_passage_from_its_own(tiny_data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("rirag.data.passage_store.BATCH_ROWS", 5)  # whole files: batches of 8 records
    obliqa = load_obliqa(tiny_data_dir)
    assert len(obliqa.passages._batches) == 3
    indexable = {pid: p for pid, p in _whole_read(tiny_data_dir).items() if p.text.strip()}
    corpus = obliqa.corpus
    assert [corpus[pid] for pid in reversed(list(indexable))] == list(reversed(indexable.values()))
    assert list(corpus.values()) == list(indexable.values())
    assert corpus.document_ids() == [p.document_id for p in indexable.values()]
    brute = [i for i, p in enumerate(indexable.values()) if "regulator" in p.text.casefold()]
    assert corpus.holding(["regulator"]) == brute and len(brute) == 6


def test_a_file_changed_during_the_conversion_is_not_cached(tiny_data_dir, monkeypatch, tmp_path, caplog):
    import rirag.data.obliqa as obliqa_module

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    read = obliqa_module._passage_records

    def read_then_edit(path):
        records = read(path)
        if path.name == "1.json":  # another process edits documents/6.json meanwhile
            _edit_same_size(tiny_data_dir / "documents" / "6.json", "The Regulator may", "The Authority may")
        return records

    monkeypatch.setattr(obliqa_module, "_passage_records", read_then_edit)
    with caplog.at_level(logging.WARNING, logger="rirag.data.passage_store"):
        corpus = load_obliqa(tiny_data_dir).corpus
    assert "changed while it was converted: not cached" in caplog.text
    assert corpus["d6-p2"].text.startswith("The Authority may")  # read after the edit
    assert _cache_files() == []
    monkeypatch.setattr(obliqa_module, "_passage_records", read)
    assert load_obliqa(tiny_data_dir).corpus["d6-p2"].text.startswith("The Authority may")
    assert len(_cache_files()) == 1


def test_the_text_mappers_documents_hold_each_passage_position_in_order():
    from rirag.data.questions import _positions_by_value

    values = [3, 1, 3, 2, 1, 3, 7]
    assert _positions_by_value(values) == {3: [0, 2, 5], 1: [1, 4], 2: [3], 7: [6]}
    assert _positions_by_value([]) == {}


def test_ids_are_found_by_binary_search_then_by_dict_with_the_same_rows(tiny_data_dir, monkeypatch, tmp_path):
    import numpy as np

    from rirag.data import passage_store

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    whole = _whole_read(tiny_data_dir)
    load_obliqa(tiny_data_dir)  # converts
    asked = [*whole, "nope", "", "d1-p1 ", "zzzz", "0"]
    expected = [(pid in whole, whole.get(pid)) for pid in asked]

    def lookups(table):
        return [(pid in table, table[pid] if pid in table else None) for pid in asked]

    passages = load_obliqa(tiny_data_dir).passages  # memory-mapped; the order file is written at the first lookup
    assert [passages[pid] for pid in whole] == list(whole.values())
    order_files = list(store_dir().glob("*.order.npy"))
    assert len(order_files) == 1 and passages._rows._dict is None  # every lookup so far was a binary search
    assert lookups(passages) == expected and passages._rows._dict is not None  # an id not found: made sure by dict
    monkeypatch.setattr(passage_store, "LOOKUPS_BEFORE_DICT", 0)
    assert lookups(load_obliqa(tiny_data_dir).passages) == expected
    monkeypatch.setattr(passage_store, "LOOKUPS_BEFORE_DICT", 2_000)
    n = len(whole)
    for bad in (b"", b"not an array", np.arange(n, dtype=np.float64), np.zeros(n, dtype=np.int64),
                np.arange(n)[::-1].copy()):  # empty, garbage, floats, not a permutation, a permutation not the order
        if isinstance(bad, bytes):
            order_files[0].write_bytes(bad)
        else:
            np.save(order_files[0], bad)
        assert lookups(load_obliqa(tiny_data_dir).passages) == expected, bad
