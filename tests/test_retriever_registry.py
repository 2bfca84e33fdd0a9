"""The retriever table (rirag.retrieval.registry.RETRIEVERS) is the one declaration of a retriever: its factory, its
typed options and whether it needs a model. The command-line check, the retriever's own check, the model check and
the ``--help`` listing all read it, so a retriever added to the table alone is usable everywhere."""

from __future__ import annotations

import pytest

from rirag.errors import DataError, UsageError
from rirag.retrieval import registry
from rirag.retrieval.registry import RETRIEVERS, XREF_OPTIONS, Option, RetrieverSpec, RetrieverType
from rirag.validation import int_at_least, unit_interval


class _Fixed:
    """A retriever that ranks the corpus in a fixed order, remembering the options it was built with."""

    def __init__(self, corpus, spec):
        self.ids, self.options, self.model = list(corpus), dict(spec.options), spec.model

    def search(self, queries, k=10, show_progress=False):
        return {q: {pid: float(len(self.ids) - i) for i, pid in enumerate(self.ids[:k])} for q in queries}


@pytest.fixture
def toy(monkeypatch):
    """One entry added to the table, nothing else: a required option and a typed optional one, a model needed."""
    entry = RetrieverType(_Fixed, {"weight": Option(unit_interval, "a weight, in [0, 1]"),
                                   "index": Option(int_at_least(1), "an index folder", required=True,
                                                   metavar="PATH")},
                          needs_model=True, help="a fixed order")
    monkeypatch.setitem(RETRIEVERS, "toy", entry)
    return entry


def test_a_retriever_in_the_table_is_checked_and_built_from_it_alone(toy, tmp_path):
    assert registry.option_pair("weight=0.5") == ("weight", 0.5)  # known when the command line is parsed
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        registry.option_pair("weight=2")
    with pytest.raises(UsageError, match="needs option index=PATH"):
        registry.retriever_options("toy", {"weight": "0.5"})
    with pytest.raises(UsageError, match="unknown option"):
        registry.retriever_options("toy", {"index": "3", "alpha": "0.5"})  # another retriever's option
    with pytest.raises(UsageError, match="'toy' needs a dense model"):
        registry.retriever_spec("toy", None, {"index": "3"})
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    built = registry.build_retriever({"p1": None, "p2": None}, RetrieverSpec("toy", str(model), {"index": "3"}))
    assert isinstance(built, _Fixed) and built.options == {"index": 3}  # typed by the table before the factory
    assert list(built.search({"q": "x"}, k=1)["q"]) == ["p1"]
    assert registry.every_option()["weight"] is toy.options["weight"]  # and listed by --help with the others


def test_without_the_entry_the_same_calls_are_refused(tmp_path):
    """The can-fail twin of the test above: nothing but the table entry makes 'toy' and its options known."""
    with pytest.raises(UsageError, match="unknown option"):
        registry.option_pair("weight=0.5")
    with pytest.raises(UsageError, match="unknown retriever 'toy'"):
        registry.retriever_options("toy", {})


def test_the_table_declares_each_option_key_once():
    every = registry.every_option()
    assert list(every)[-len(XREF_OPTIONS):] == list(XREF_OPTIONS)  # listed last, as --help shows them
    for name, kind in RETRIEVERS.items():
        assert set(kind.options) <= set(every), name
        for key, option in kind.options.items():
            assert every[key] == option, (name, key)
    # two retrievers that type one key differently are refused: the key is typed before the retriever is known
    clash = {"a": RetrieverType(_Fixed, {"n": Option(int_at_least(1), "n ≥ 1")}),
             "b": RetrieverType(_Fixed, {"n": Option(int_at_least(0), "n ≥ 0")})}
    with pytest.raises(ValueError, match="option 'n' is declared differently"):
        registry.option_table(clash, {})
    assert list(registry.option_table({"a": clash["a"]}, {})) == ["n"]


def test_required_options_and_models_come_from_the_table():
    required = {name: [k for k, o in kind.options.items() if o.required] for name, kind in RETRIEVERS.items()}
    assert required["rerank"] == ["reranker"] and required["learned-fusion"] == ["ranker"]
    assert not required["bm25"]
    for name, kind in RETRIEVERS.items():
        if kind.needs_model:
            with pytest.raises(UsageError, match="needs a dense model"):
                registry.retriever_spec(name, None, {k: "." for k in required[name]})
    with pytest.raises(UsageError, match=r"retriever 'rerank' needs option reranker=PATH \(a trained cross-encoder"):
        registry.retriever_options("rerank", {})
    # the rank fusion's dense side needs the model too, told when it is built
    with pytest.raises(DataError, match="retriever 'dense' needs a dense model"):
        registry.build_retriever({}, RetrieverSpec("rank-fusion", None, {"passages": "dense"}))


def test_retrieve_help_lists_every_option_of_the_table(capsys, monkeypatch):
    from rirag.cli import main

    monkeypatch.setenv("COLUMNS", "10000")  # one line per option: no help text broken at a hyphen
    main(["retrieve", "--help"])
    text = capsys.readouterr().out
    for key, option in registry.every_option().items():
        assert f"{key} ({option.help})" in text, key
    assert ", ".join(RETRIEVERS) in text
