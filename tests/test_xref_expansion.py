"""Cross-reference expansion as a retriever option (rirag.xref.expansion.XrefExpansion, ``--option
xref_expand=N``): each of the top N passages adds the passages its references resolve to (at most
``xref_max_targets`` of them), scored ``xref_weight`` times its own score, kept if higher; off unless asked for."""

from __future__ import annotations

import json

import pytest

from rirag.cli import main
from rirag.data.obliqa import load_obliqa
from rirag.data.runs import ranked, read_trec
from rirag.errors import DataError
from rirag.retrieval.registry import RetrieverSpec, build_retriever
from rirag.xref import records as xref_records
from rirag.xref.expansion import XrefExpansion, corpus_graph
from rirag.xref.graph import ReferenceGraph

#: `rirag retrieve` with BM25 named (its default is the CV table's best row, as for ask / answer / submit).
RETRIEVE = ["retrieve", "--retriever", "bm25"]

TITLE = "General Rulebook (GEN)"
#: id -> (rule number, text): 9.5.1 refers to 9.5.2 (one passage), 9.6.1 to Rules 3.1.1 to 3.1.3 (three).
PASSAGES = {
    "p-951": ("9.5.1", "An Authorised Person must notify the Regulator of any breach of its capital requirements, "
                       "subject to Rule 9.5.2."),
    "p-952": ("9.5.2", "Such a notice must be given in writing within five business days."),
    "p-961": ("9.6.1", "A firm must keep the records that Rules 3.1.1 to 3.1.3 describe."),
    "p-311": ("3.1.1", "Records of marketing materials must be kept for six years."),
    "p-312": ("3.1.2", "Records of complaints must be kept for three years."),
    "p-313": ("3.1.3", "Records of staff training must be kept for two years."),
    "f-1": ("4.1.1", "The Regulator may publish guidance on the capital requirements of an Authorised Person."),
    "f-2": ("4.1.2", "A breach of the conduct rules must be notified to the Regulator."),
    "f-3": ("4.1.3", "An Authorised Person must notify the Regulator of a change of its address."),
}
QUESTION = "When must an Authorised Person notify the Regulator of a breach of its capital requirements?"


def graph() -> ReferenceGraph:
    return ReferenceGraph(passages=[xref_records.Passage(pid, "1", TITLE, number, text)
                                    for pid, (number, text) in PASSAGES.items()])


class FixedRun:
    """A stand-in retriever: the top ``k`` of a fixed run."""

    def __init__(self, run: dict[str, dict[str, float]]):
        self.run = run

    def search(self, queries, k=100, show_progress=False):
        return {q: dict(ranked(self.run[q], k)) for q in queries}


def expand(scores: dict[str, float], top: int = 1, weight: float = 0.95, max_targets: int = 1) -> dict[str, float]:
    return XrefExpansion(FixedRun({}), graph(), top, weight, max_targets).expand({"q": scores})["q"]


def write_corpus(root):
    """A corpus folder in the ObliQA layout (no question files: a corpus to retrieve from) and a question file."""
    (root / "documents").mkdir(parents=True)
    records = [{"ID": pid, "DocumentID": 1, "PassageID": number, "Passage": text}
               for pid, (number, text) in PASSAGES.items()]
    (root / "documents" / "1.json").write_text(json.dumps(records))
    (root / "document_map.json").write_text(json.dumps({"1": ["gen.pdf", TITLE]}))
    questions = root.parent / "questions.json"
    questions.write_text(json.dumps([{"QuestionID": "q1", "Question": QUESTION}]))
    return root, questions


def test_a_referenced_passage_ranked_outside_the_top_k_is_added():
    base = FixedRun({"q": {"p-951": 10.0, "f-1": 9.0, "f-2": 8.0, "f-3": 7.0, "p-952": 1.0}})
    assert "p-952" not in base.search({"q": QUESTION}, k=3)["q"]
    run = XrefExpansion(base, graph(), top=1, weight=0.95, max_targets=1).search({"q": QUESTION}, k=3)
    assert [pid for pid, _ in ranked(run["q"])] == ["p-951", "p-952", "f-1"]  # cut back to k, the target second
    assert run["q"]["p-952"] == pytest.approx(9.5)


def test_scores_follow_the_weight_rule_kept_if_higher():
    assert expand({"p-951": 10.0, "p-952": 2.0})["p-952"] == pytest.approx(9.5)  # raised to w · the citing score
    assert expand({"p-951": 10.0, "p-952": 2.0}, weight=0.5)["p-952"] == pytest.approx(5.0)
    assert expand({"p-951": 10.0, "p-952": 9.8})["p-952"] == pytest.approx(9.8)  # its own score is higher: kept
    assert expand({"p-951": 10.0})["p-951"] == 10.0  # the citing passage keeps its score
    # a negative score (a cross-encoder's logit) gives a target below the passage citing it, never above
    assert expand({"p-951": -2.0})["p-952"] == pytest.approx(-2.1)
    # only the top n passages are followed
    assert "p-952" not in expand({"f-1": 20.0, "p-951": 10.0}, top=1)
    assert expand({"f-1": 20.0, "p-951": 10.0}, top=2)["p-952"] == pytest.approx(9.5)


def test_a_reference_resolving_to_more_than_m_passages_is_not_followed():
    targets = {"p-311", "p-312", "p-313"}  # "Rules 3.1.1 to 3.1.3"
    for m in (1, 2):
        assert set(expand({"p-961": 4.0}, max_targets=m)) == {"p-961"}
    wide = expand({"p-961": 4.0}, weight=0.5, max_targets=3)
    assert set(wide) == {"p-961", *targets} and all(wide[t] == pytest.approx(2.0) for t in targets)


def test_targets_outside_the_corpus_are_not_added():
    run = XrefExpansion(FixedRun({}), graph(), 1, corpus={"p-951": None}).expand({"q": {"p-951": 1.0}})
    assert run == {"q": {"p-951": 1.0}}


def test_the_option_off_gives_the_base_run_unchanged(tmp_path):
    root, _ = write_corpus(tmp_path / "corpus")
    corpus = load_obliqa(root).corpus
    plain = build_retriever(corpus, RetrieverSpec("bm25"))
    off = build_retriever(corpus, RetrieverSpec("bm25", options={"xref_expand": 0}), root=root)
    assert not isinstance(plain, XrefExpansion) and not isinstance(off, XrefExpansion)
    assert off.search({"q1": QUESTION}, k=5) == plain.search({"q1": QUESTION}, k=5)
    on = build_retriever(corpus, RetrieverSpec("bm25", options={"xref_expand": "2", "xref_weight": "0.5"}), root=root)
    assert isinstance(on, XrefExpansion) and (on.top, on.weight, on.max_targets) == (2, 0.5, 1)


def test_the_command_expands_the_run_from_the_corpus_graph(tmp_path):
    root, questions = write_corpus(tmp_path / "corpus")
    base, expanded, again = tmp_path / "base.trec", tmp_path / "x.trec", tmp_path / "again.trec"
    common = [*RETRIEVE, "--data", str(root), "--questions", str(questions), "--k", "3"]
    assert main([*common, "--out", str(base)]) == 0
    assert "p-952" not in read_trec(base)["q1"]  # it shares no word with the question that BM25 counts
    assert max(read_trec(base)["q1"], key=read_trec(base)["q1"].get) == "p-951"
    assert main([*common, "--out", str(expanded), "--option", "xref_expand=1"]) == 0
    run = read_trec(expanded)["q1"]
    assert "p-952" in run and len(run) == 3
    assert ReferenceGraph(root).graph is None  # resolved on the fly: no graph written yet
    assert main(["data", "xref", "--data", str(root)]) == 0
    assert ReferenceGraph(root).graph == root / "xref" / "references.jsonl"
    assert main([*common, "--out", str(again), "--option", "xref_expand=1"]) == 0
    assert read_trec(again) == read_trec(expanded)  # the written graph gives the same expansion


@pytest.mark.parametrize("option, words", [
    ("xref_expand=-1", ["xref_expand", "≥ 0"]),
    ("xref_expand=two", ["xref_expand", "integer"]),
    ("xref_weight=0", ["xref_weight", "(0, 1]"]),
    ("xref_weight=1.5", ["xref_weight", "(0, 1]"]),
    ("xref_max_targets=0", ["xref_max_targets", "≥ 1"]),
    ("xref_weight=0.5", ["xref_weight", "xref_expand=N"]),  # tuning an expansion that is off
])
def test_a_bad_option_value_is_one_line_and_exit_2(option, words, tmp_path, capsys, caplog):
    root, questions = write_corpus(tmp_path / "corpus")
    out = tmp_path / "run.trec"
    assert main([*RETRIEVE, "--data", str(root), "--questions", str(questions), "--out", str(out),
                 "--option", option]) == 2
    # argparse's one line on stderr (a bad value), or the command's one logged error (a combination)
    lines = capsys.readouterr().err.strip().splitlines() + [r.getMessage() for r in caplog.records
                                                            if r.levelname == "ERROR"]
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
    assert not out.exists()


def test_no_graph_is_a_clear_error(tmp_path):
    root, _ = write_corpus(tmp_path / "corpus")
    corpus = load_obliqa(root).corpus
    spec = RetrieverSpec("bm25", options={"xref_expand": 3})
    with pytest.raises(DataError, match="rirag data xref"):
        build_retriever(corpus, spec)  # no corpus folder to read the graph from
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError) as err:
        build_retriever(corpus, spec, root=empty)
    assert str(empty) in str(err.value) and "rirag data xref" in str(err.value) and "\n" not in str(err.value)


def test_a_broken_graph_file_is_a_clear_error(tmp_path):
    root, _ = write_corpus(tmp_path / "corpus")
    (root / "xref").mkdir()
    (root / "xref" / "references.jsonl").write_text('{"source_id": "p-951", "resolved": true, "targets": ["p-952"]}\n')
    with pytest.raises(DataError, match=r"references.jsonl: line 1 .*rirag data xref"):
        corpus_graph(root).links("p-951")


def test_following_in_answers_reads_the_same_graph():
    from rirag.generation.focused import follow

    assert follow.ReferenceGraph is ReferenceGraph  # one reader of the graph, not two
