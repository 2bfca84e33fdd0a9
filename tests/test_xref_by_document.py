"""References resolved on the fly one document at a time (``ReferenceGraph(root, corpus=...)``): the same links as
the index over the whole corpus, reading only the documents that the asked passages and their references lead to;
and the document names a passage's patterns are compiled over (:meth:`Resolver._names_in`)."""

from __future__ import annotations

import json
import logging

from rirag.data.obliqa import load_obliqa
from rirag.xref.graph import ReferenceGraph
from rirag.xref.passages import xref_documents, xref_passages
from rirag.xref.resolver import Resolver

#: document id -> (title in the document map, [(id, number, text)]). Document 1 refers to itself, to document 2 by
#: its title and by its code; document 3 is referred to by nothing.
DOCUMENTS = {
    1: ("General Rulebook (GEN)", [
        ("g-1", "2.1.1", "An Authorised Person must notify the Regulator of a breach, subject to Rule 2.1.2."),
        ("g-2", "2.1.2", "A notice under Rule 2.1.1 must be given in writing."),
        ("g-3", "2.2.1", "A firm must keep the records that Rule 3.1 of the Conduct of Business Rulebook describes."),
        ("g-4", "2.2.2", "The reports of COB 3.2 must be kept for six years, as Rules 2.1.1 to 2.1.2 require."),
    ]),
    2: ("Conduct of Business Rulebook (COB)", [
        ("c-1", "3.1", "Records of marketing materials must be kept for six years."),
        ("c-2", "3.2", "Reports to clients must be sent quarterly, as GEN Rule 2.1.1 requires."),
    ]),
    3: ("Prudential Rulebook (PRU)", [
        ("p-1", "4.1", "Capital must be held at all times, subject to Rule 4.2."),
        ("p-2", "4.2", "The capital of Rule 4.1 may be reduced with the consent of the Regulator."),
    ]),
}


def write_corpus(root, documents=DOCUMENTS, file_of=lambda doc: doc):
    (root / "documents").mkdir(parents=True)
    for doc, (_, passages) in documents.items():
        rows = [{"ID": pid, "DocumentID": doc, "PassageID": number, "Passage": text}
                for pid, number, text in passages]
        (root / "documents" / f"{file_of(doc)}.json").write_text(json.dumps(rows), encoding="utf-8")
    names = {str(doc): [f"file{doc}", title] for doc, (title, _) in documents.items()}
    (root / "document_map.json").write_text(json.dumps(names), encoding="utf-8")
    return root


def all_links(graph, ids):
    return {pid: [(link.surface, link.targets) for link in graph.links(pid)] for pid in ids}


def test_documents_are_read_only_when_a_passage_or_its_references_need_them(tmp_path):
    root = write_corpus(tmp_path)
    corpus = load_obliqa(root).corpus
    lazy = ReferenceGraph(root, corpus=corpus)
    assert [(link.surface, link.targets) for link in lazy.links("g-3")] == [
        ("Rule 3.1", ("c-1",))]
    # g-3's own document and the one its reference names; the Prudential Rulebook is never read
    assert lazy._resolver.docs.read == 2
    assert "p-1" not in lazy._by_id


def test_resolving_by_document_gives_the_links_of_the_whole_corpus(tmp_path):
    root = write_corpus(tmp_path)
    corpus = load_obliqa(root).corpus
    expected = all_links(ReferenceGraph(root), corpus)  # the whole corpus read at the first passage
    assert sum(map(len, expected.values())) >= 7  # the fixture's references do resolve
    assert all_links(ReferenceGraph(root, corpus=corpus), corpus) == expected


def test_a_file_holding_another_documents_passages_falls_back_to_the_whole_corpus(tmp_path, caplog):
    # documents/1.json holds document 2 and documents/2.json document 1: named by id, but not by their own id
    root = write_corpus(tmp_path, file_of=lambda doc: 3 - doc if doc < 3 else doc)
    corpus = load_obliqa(root).corpus
    expected = all_links(ReferenceGraph(root), corpus)
    with caplog.at_level(logging.WARNING, logger="rirag.xref.graph"):
        got = all_links(ReferenceGraph(root, corpus=corpus), corpus)
    assert got == expected
    assert "reading the whole corpus" in caplog.text


def test_files_not_named_by_document_id_are_read_whole(tmp_path):
    root = write_corpus(tmp_path, file_of=lambda doc: f"doc{doc}")
    assert xref_documents(root) is None
    corpus = load_obliqa(root).corpus
    graph = ReferenceGraph(root, corpus=corpus)
    assert [link.targets for link in graph.links("g-1")] == [("g-2",)]
    assert not graph._by_document


def test_a_passage_not_in_the_corpus_has_no_links(tmp_path):
    root = write_corpus(tmp_path)
    graph = ReferenceGraph(root, corpus=load_obliqa(root).corpus)
    assert graph.links("no-such-id") == []


def test_patterns_are_compiled_over_the_names_a_passage_holds(tmp_path):
    resolver = Resolver(*xref_passages(write_corpus(tmp_path)))
    codes, titles = resolver._names_in("A firm under COB 3.2 and the conduct of business rulebook.")
    assert codes == ("COB",)
    # every title whose words the text holds, ignoring case as the pattern does, longest first
    assert titles == ("Conduct of Business Rulebook (COB)", "Conduct of Business Rulebook")
    assert resolver._names_in("Nothing named here: 2.1.1.") == ((), ())
    # a title needs every one of its words ("Business" alone names nothing)
    assert resolver._names_in("Conduct of business")[1] == ()
    assert resolver._names_in("cob 3.2")[0] == ()  # a code is matched as it is spelled


def test_real_obliqa_links_by_document_equal_the_whole_corpus(real_data_dir, real_obliqa):
    """The first five documents of ObliQA: every passage's links, read by document and read whole."""
    corpus = real_obliqa.corpus
    ids = [pid for pid, p in corpus.items() if int(p.document_id) <= 5]
    expected = all_links(ReferenceGraph(real_data_dir), ids)
    assert sum(map(len, expected.values())) > 100
    assert all_links(ReferenceGraph(real_data_dir, corpus=corpus), ids) == expected


class _EveryName(Resolver):
    """The patterns over every name of the corpus, as they were compiled before."""

    def _names_in(self, text):
        return tuple(self._codes), tuple(self._titles)


def test_patterns_over_the_names_in_the_text_find_what_patterns_over_every_name_find(real_obliqa, real_data_dir):
    passages, aliases = xref_passages(real_data_dir)
    some = [p for p in passages if int(p.document_id) in (1, 7, 13, 26)]
    narrow, wide = Resolver(passages, aliases), _EveryName(passages, aliases)
    found = [narrow.references(p) for p in some]
    assert found == [wide.references(p) for p in some]
    assert sum(r.kind == "rule" and r.target_document != p.document_id and r.resolved
               for p, refs in zip(some, found) for r in refs) > 0  # references to another document by name


def test_document_names_are_kept_and_a_kept_copy_resolves_the_same(tmp_path, monkeypatch, caplog):
    from rirag.xref import names_cache
    from rirag.xref.index import CorpusIndex

    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    root = write_corpus(tmp_path / "corpus")
    ids = [pid for _, passages in DOCUMENTS.values() for pid, _, _ in passages]
    built = all_links(ReferenceGraph(root, corpus=load_obliqa(root).corpus), ids)
    kept = list((tmp_path / "cache" / "xref").glob("*.json"))
    assert len(kept) == 1
    with monkeypatch.context() as m:  # the names come from the kept file: none is built again
        m.setattr(CorpusIndex, "_name_documents", lambda *a: (_ for _ in ()).throw(AssertionError("built")))
        assert all_links(ReferenceGraph(root, corpus=load_obliqa(root).corpus), ids) == built
    kept[0].write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert all_links(ReferenceGraph(root, corpus=load_obliqa(root).corpus), ids) == built
    assert "building the document names again" in caplog.text
    # a renamed document is a new document map: a new key, and the new name resolves
    names = json.loads((root / "document_map.json").read_text())
    names["2"] = ["file2", "Client Conduct Rulebook (CCR)"]
    (root / "document_map.json").write_text(json.dumps(names), encoding="utf-8")
    assert names_cache.names_path(root, load_obliqa(root).corpus) != kept[0]
    graph = ReferenceGraph(root, corpus=load_obliqa(root).corpus)
    assert graph.links("g-4") != [] and graph._resolver.alias.get("ccr") == "2"


def test_a_title_with_a_lone_surrogate_is_kept_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path / "cache"))
    root = write_corpus(tmp_path / "corpus")
    (root / "document_map.json").write_text('{"1": ["file1", "General Rulebook (GEN) \\ud800"], '
                                            '"2": ["file2", "Conduct of Business Rulebook (COB)"], '
                                            '"3": ["file3", "Prudential Rulebook (PRU)"]}', encoding="utf-8")
    first = all_links(ReferenceGraph(root, corpus=load_obliqa(root).corpus), ["g-3", "c-2"])
    assert len(list((tmp_path / "cache" / "xref").glob("*.json"))) == 1
    assert all_links(ReferenceGraph(root, corpus=load_obliqa(root).corpus), ["g-3", "c-2"]) == first


def test_the_names_tables_do_not_depend_on_the_hash_seed():
    import os
    import subprocess
    import sys

    code = ("from rirag.xref.index import CorpusIndex\n"
            "i = CorpusIndex((), titles={'1': 'Abc (ABC)', '2': 'Other Rulebook (ORB)'}, read=lambda d: [])\n"
            "print(sorted(i.alias.items()), i._codes, i._titles)")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(1, 7)}
    assert len(outs) == 1, outs


def test_named_rules_resolve_by_document_as_over_the_whole_corpus(tmp_path):
    """"Fundamental Rule 2" in a statement reads the Fundamental Rules Part when first needed (named by the name's
    plural) and lands where the index over the whole corpus puts it; an unrelated Part is never read."""
    documents = {
        1: ("Fundamental Rules", [("fr-1", "2.1", "Fundamental Rule 1: A firm must act with integrity."),
                                  ("fr-2", "2.2", "Fundamental Rule 2: A firm must act with due skill.")]),
        2: ("SS3/21 Resolution", [("s-1", "3.1", "In line with Fundamental Rule 2, firms should prepare."),
                                  ("s-2", "3.2", "Rule 1 in the Fundamental Rules Part of the PRA Rulebook applies.")]),
        3: DOCUMENTS[3],
    }
    root = write_corpus(tmp_path, documents)
    corpus = load_obliqa(root).corpus
    lazy = ReferenceGraph(root, corpus=corpus)
    assert all_links(lazy, ["s-1", "s-2"]) == {"s-1": [("Fundamental Rule 2", ("fr-2",))],
                                               "s-2": [("Rule 1", ("fr-1",))]}
    assert lazy._resolver.docs.read == 2
    assert all_links(ReferenceGraph(root), corpus) == all_links(ReferenceGraph(root, corpus=corpus), corpus)
