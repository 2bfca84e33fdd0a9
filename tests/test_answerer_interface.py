"""One answerer interface (issue 32, item 4): the rendered answers stay byte-identical to those of the answerers
before they returned drafts (tests/fixtures/rendering_golden.json, from tests/_rendering_cases.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._rendering_cases import rendered
from tests.test_generation_backends import scripted_server  # noqa: F401 (a fixture)

GOLDEN = Path(__file__).with_name("fixtures") / "rendering_golden.json"


def test_focused_and_extractive_answers_render_as_before():
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = rendered()
    assert len(got) == len(expected) >= 8
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"case {i}"
    # the fixtures cover each rendering rule: near-duplicates cited together, the 'not addressed' opening, the
    # missing-part sentences, the no-unit abstention, several passages cited
    texts = [c["focused"]["Answer"] for c in expected]
    assert any("[2][3]" in t for t in texts) and any("do not state" in t for t in texts)
    assert any(t.startswith("The retrieved provisions do not directly address") for t in texts)
    assert any(t == "The provided passages do not answer this question." for t in texts)


# -- every generator goes through the one interface ------------------------------------------------------------


def _lora_adapter(base: Path, out: Path) -> Path:
    """A LoRA adapter with non-zero B matrices (a RAFT model is the base LM with its adapter: the same class)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 2.0)
    model.save_pretrained(out)
    return out


def _generators(tmp_path: Path, url: str) -> dict:
    from rirag.generation.base import EXTRACTIVE, FOCUSED, GeneratorSpec
    from rirag.generation.extractive import MODAL_CUES
    from rirag.generation.registry import build_generator
    from tests.test_focused import bag_of_words, no_obligations
    from tests.tiny_causal_lm import tiny_causal_lm

    lm = tiny_causal_lm(tmp_path / "lm")
    small = {"max_new_tokens": 4, "device": "cpu"}
    return {
        "focused": build_generator(GeneratorSpec(FOCUSED, MODAL_CUES, {"encode": bag_of_words,
                                                                      "is_obligation": no_obligations})),
        "extractive": build_generator(GeneratorSpec(EXTRACTIVE, MODAL_CUES)),
        "prompted LLM": build_generator(GeneratorSpec(str(lm), None, small)),
        "RAFT": build_generator(GeneratorSpec(str(lm), None, {**small, "adapter": str(
            _lora_adapter(lm, tmp_path / "adapter"))})),
        "endpoint": build_generator(GeneratorSpec("endpoint", "m", {"base_url": url, "max_retries": 0})),
    }


def test_every_generator_answers_through_one_draft_call(tmp_path, monkeypatch,
                                                       scripted_server):  # noqa: F811 (the imported fixture)
    from rirag.generation.base import Answerer, AnswerRequest, Draft
    from rirag.generation.pipeline import RetrievedPassage, answer_items
    from rirag.generation.render import render
    from tests._rendering_cases import CASES

    url, _ = scripted_server
    question, passages, scores, _ = CASES[0]
    given = [RetrievedPassage(f"p{i}", p, s) for i, (p, s) in enumerate(zip(passages, scores))]
    for kind, generator in _generators(tmp_path, url).items():
        assert isinstance(generator, Answerer), kind
        description = generator.describe()  # part of the interface: a line naming the models, or None
        assert description is None or (isinstance(description, str) and "\n" not in description), kind
        calls = []
        real = type(generator).draft

        def spy(self, requests, real=real, calls=calls):
            calls.append(list(requests))
            drafts = real(self, requests)
            calls.append(drafts)
            return drafts

        monkeypatch.setattr(type(generator), "draft", spy)
        answers = answer_items([("a", question, given), ("b", f"  {question}  ", given[:1])], generator)
        monkeypatch.undo()
        assert len(calls) == 2, f"{kind}: draft is called once per batch"
        requests, drafts = calls
        assert all(isinstance(r, AnswerRequest) for r in requests) and all(isinstance(d, Draft) for d in drafts)
        assert [r.question for r in requests] == [question, question]  # prepared once: stripped
        assert [list(r.passages) for r in requests] == [passages, passages[:1]]
        assert [list(r.scores) for r in requests] == [scores, scores[:1]]
        for answer, draft in zip(answers, drafts):
            assert answer.draft is draft and answer.text == render(draft), kind
            assert all(max(p.cited, default=0) < len(answer.passages) for p in draft.parts), kind
        if generator.needs_passages:  # spans point into the passages they cite
            for answer, draft in zip(answers, drafts):
                for part in draft.parts:
                    assert part.cited[0] == part.passage and part.start is not None, kind
                    assert " ".join(answer.passages[part.passage].text[part.start:part.end].split())[:20] \
                        == part.text[:20], kind
        else:
            assert all(d.raw is not None and d.written is not None for d in drafts), kind


def test_answer_items_has_no_duck_typed_branch():
    import ast
    import inspect

    from rirag.generation import pipeline

    for fn in (pipeline.answer_items, pipeline._answer, pipeline.answer_question):
        tree = ast.parse(inspect.getsource(fn))
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not called & {"getattr", "hasattr", "callable", "isinstance"}, fn.__name__
        methods = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and isinstance(n.func.value, ast.Name) and n.func.value.id == "generator"}
        assert methods <= {"draft"}, fn.__name__


def test_closed_book_is_refused_in_one_place_for_passage_answerers():
    import pytest

    from rirag.generation.extractive import MODAL_CUES, ExtractiveComposer
    from rirag.generation.pipeline import RetrievedPassage, answer_items

    with pytest.raises(ValueError, match="closed-book needs a language model"):
        answer_items([("c", "Q?", [RetrievedPassage("p", "A firm must file.", 1.0)])],
                     ExtractiveComposer(classifier=MODAL_CUES), "closed-book")


def test_the_command_the_benchmark_and_the_demo_share_one_typed_request():
    import copy
    import sys

    from rirag.cli import build_parser
    from rirag.cli.answers import answer_options
    from rirag.generation.base import GeneratorSpec
    from rirag.generation.pipeline import AnswerOptions

    args = build_parser().parse_args(["ask", "--retriever", "bm25", "--option", "k1=1.2", "--strategy", "zero-shot",
                                      "--no-filter", "--k", "7", "What must a firm keep?"])
    before = copy.deepcopy(vars(args))
    options = answer_options(args)
    assert vars(args) == before  # resolved once, args left as parsed
    assert isinstance(options, AnswerOptions) and isinstance(options.generator, GeneratorSpec)
    assert (options.retriever.name, options.retriever.options, options.k, options.context_filter) == (
        "bm25", {"k1": 1.2}, 7, "top-k")
    assert options.retriever_manifest() == {"retriever": "bm25", "retriever_model": None,
                                            "retriever_options": [["k1", 1.2]]}

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spaces" / "demo"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from backend import DemoSettings

    from generation import GenerationBenchArguments, row_options

    demo = DemoSettings(retriever="bm25", strategy="zero-shot", top_k=5).answer_options()
    assert isinstance(demo, AnswerOptions) and (demo.retriever.name, demo.k) == ("bm25", 5)
    row = row_options(GenerationBenchArguments(), "extractive")
    assert isinstance(row, AnswerOptions) and row.generator.name == "extractive" and row.retriever is None


def test_the_registry_resolves_a_generator_name_once(tmp_path):
    """The kind of a --generator name, the options it is built with and the model it needs come from one table."""
    from types import SimpleNamespace

    from rirag.errors import UsageError
    from rirag.generation.base import GeneratorSpec
    from rirag.generation.registry import LANGUAGE_MODEL, check_generator_model, generator_kind, generator_spec

    args = SimpleNamespace(device="cpu", base_url="http://x/v1", api_key_env="KEY", concurrency=2, max_retries=1,
                           max_new_tokens=9, adapter=None, load_in_4bit=False, batch_size=3)
    names = ("focused", "extractive", "endpoint", "smollm2-135m-instruct", "artifacts/lm")
    assert [generator_kind(n) for n in names] == ["focused", "extractive", "endpoint", LANGUAGE_MODEL,
                                                  LANGUAGE_MODEL]
    assert generator_spec("focused", None, args).options == {"device": "cpu"}
    assert generator_spec("extractive", "c", args) == GeneratorSpec("extractive", "c", {"device": "cpu"})
    assert generator_spec("endpoint", "m", args).options == {"base_url": "http://x/v1", "api_key_env": "KEY",
                                                             "concurrency": 2, "max_retries": 1, "max_new_tokens": 9}
    assert generator_spec("artifacts/lm", None, args).options == {"adapter": None, "load_in_4bit": False,
                                                                 "device": "cpu", "max_new_tokens": 9, "batch_size": 3}
    on = SimpleNamespace(**vars(args), focus_lists=True, follow_references=True)
    assert generator_spec("focused", None, on).options == {"device": "cpu", "focus_lists": True,
                                                           "follow_references": True}
    assert "focus_lists" not in generator_spec("extractive", "c", on).options  # the focused answerer's only
    from rirag.generation.registry import build_generator

    built = build_generator(generator_spec("focused", None, on))
    assert built.config.focus_lists and built.config.follow_references
    check_generator_model(GeneratorSpec("endpoint", "m"))  # needs no local model
    check_generator_model(GeneratorSpec("focused"))  # the default classifier, or deontic cues
    missing = str(tmp_path / "no_classifier")
    for name in ("focused", "extractive"):
        with pytest.raises(UsageError, match="--generator-model"):
            check_generator_model(GeneratorSpec(name, missing))
    with pytest.raises(FileNotFoundError):
        check_generator_model(GeneratorSpec(str(tmp_path / "no_lm")))


def test_a_typed_answer_is_written_once_and_its_markers_are_not_read_back():
    """render places each part's markers itself; the citation table takes them from there and attaches each to the
    sentence (as the scorers split the text) holding it: the same table as reading the text, except that a bracketed
    number the passage itself wrote is quoted text, not a citation."""
    from rirag.generation.base import Draft, DraftPart
    from rirag.generation.render import written
    from rirag.text.citations import parse_citations, placed_citations

    ids = ["p1", "p2", "p3"]
    draft = Draft([DraftPart("Firms must keep records for six years.", (1,), 1),
                   DraftPart("A list without a full stop: (a) one; (b) two", (0, 2), 0),
                   DraftPart("Records must be in English.", (2,), 2)], addressed=False, missing=[])
    text, markers = written(draft)
    assert [text[o:o + 3] for o, _ in markers] == ["[2]", "[1]", "[3]", "[3]"]
    assert placed_citations(text, markers, ids) == parse_citations(text, ids)
    quoting = Draft([DraftPart("Firms must file the form in Schedule [7].", (0,), 0)])
    text, markers = written(quoting)
    assert [c.number for c in parse_citations(text, ids).citations] == [7, 1]
    assert [c.number for c in placed_citations(text, markers, ids).citations] == [1]
    assert written(Draft(written="The model's own [1].")) == ("The model's own [1].", None)
