"""One answerer interface (issue 32, item 4): the rendered answers stay byte-identical to those of the answerers
before they returned drafts (tests/fixtures/rendering_golden.json, from tests/_rendering_cases.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests._rendering_cases import rendered

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
