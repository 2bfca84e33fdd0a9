"""The focused answerer's unit cache (rirag.generation.unit_cache): the same answers with and without it, a warm
cache encodes the question and nothing else, and texts outside the cache are still computed."""

from __future__ import annotations

import numpy as np
import pytest

import rirag.generation.focused as focused
from rirag.data import Passage
from rirag.generation.extractive import MODAL_CUES
from rirag.generation.focused import FocusedAnswerer
from rirag.generation.unit_cache import UnitCache
from rirag.retrieval.dense import CACHE_ENV_VAR, shared_encoder
from rirag.units import Unit
from tiny_encoder import tiny_sentence_transformer

PASSAGES = [
    "A Fund Manager must keep records of every transaction for six years. Records must be kept in English. "
    "The records must be available to the Regulator on request.",
    "A Fund Manager must pay the annual fee by 31 January. A licence may be withdrawn for unpaid fees. "
    "A Fund Manager must notify the Regulator within 10 business days of any change of its auditor.",
    "An Authorised Person must maintain client money records for six years.",
]
QUESTION = "Within how many business days must a Fund Manager notify the Regulator of a change of its auditor?"
CORPUS = {f"p{i}": Passage(f"p{i}", 1, f"1.{i}", text) for i, text in enumerate(PASSAGES)}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return str(tiny_sentence_transformer(tmp_path_factory.mktemp("models") / "tiny-st"))


class _Spy:
    """The shared encoder, recording every text it is asked to encode."""

    def __init__(self, model: str):
        self.real, self.seen = shared_encoder(model), []

    def encode(self, texts, **kwargs):
        self.seen.extend(texts)
        return self.real.encode(texts, **kwargs)


def test_the_focused_answer_is_the_same_with_and_without_the_unit_cache(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "cache"))
    plain = FocusedAnswerer(MODAL_CUES, encoder=tiny_model).answer(QUESTION, PASSAGES[:2], [1.0, 0.9])
    cold = FocusedAnswerer(MODAL_CUES, encoder=tiny_model, corpus=CORPUS).answer(QUESTION, PASSAGES[:2], [1.0, 0.9])
    assert len(list((tmp_path / "cache" / "embeddings").glob("tiny-st-units-embeddings-*.npz"))) == 1
    spy = _Spy(tiny_model)
    monkeypatch.setattr(focused, "shared_encoder", lambda *args, **kwargs: spy)
    warm = FocusedAnswerer(MODAL_CUES, encoder=tiny_model, corpus=CORPUS).answer(QUESTION, PASSAGES[:2], [1.0, 0.9])
    assert spy.seen == [QUESTION]  # every unit's embedding came from the cache
    assert len(list((tmp_path / "cache" / "embeddings").glob("units-*.json"))) == 1  # and every passage's units
    for cached in (cold, warm):
        assert cached.text == plain.text
        assert [s.unit for s in cached.kept] == [s.unit for s in plain.kept]
        assert [s.score for s in cached.scored] == pytest.approx([s.score for s in plain.scored], abs=1e-5)
        assert cached.answerability == pytest.approx(plain.answerability, abs=1e-5)


def test_texts_outside_the_cache_are_computed_in_order_and_a_broken_file_is_rebuilt(tmp_path):
    calls = []

    def lengths(texts):
        calls.append(list(texts))
        return np.array([[len(t), t.count(" ")] for t in texts], dtype=np.float32)

    def sentences(text):
        return [Unit(s.strip() + ".", 0, i, 0, 1) for i, s in enumerate(t for t in text.split(".") if t.strip())]

    cache = UnitCache(CORPUS, sentences, tmp_path)
    path = cache.path("lengths", str(tmp_path / "no-model"))
    rows = cache.cached(lengths, path, "lengths")
    assert not calls and not path.exists()  # built on the first call
    units = cache.texts()
    texts = ["not a unit of the corpus", units[3], units[0]]
    assert rows(texts).tolist() == [[len(t), t.count(" ")] for t in texts]
    assert len(units) == 7 and path.is_file()
    # built once, over every distinct unit of the corpus; then only the text the cache lacks is computed
    assert calls == [units, ["not a unit of the corpus"]]
    path.write_bytes(b"not a zip file")
    calls.clear()
    again = UnitCache(CORPUS, cache.units_of, tmp_path).cached(lengths, path, "lengths")
    assert again([units[1]]).tolist() == [[len(units[1]), units[1].count(" ")]]
    assert len(calls) == 1 and len(calls[0]) == 7  # rebuilt from the corpus, then read
    other = dict(CORPUS, extra=Passage("extra", 2, "9.", "Another passage with its own unit."))
    assert UnitCache(other, cache.units_of, tmp_path).path("lengths", str(tmp_path / "no-model")) != path
