"""The passage-set decision (rirag.generation.focused.passage_set): what it measures of each candidate, how it
decides, its file's checks, and the selection citing what it decides."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rirag.errors import DataError
from rirag.generation.focused.passage_set import PASSAGE_FEATURES, candidates, decide, load_passage_set
from rirag.generation.focused.scorer import FEATURES, ScoredUnit
from rirag.text.units import Unit

PASSAGES = ["A firm must keep records of client money for six years.",
            "A firm must keep records of client money for six years.",  # the lead, repeated word for word
            "The records must be reproduced within one business day on request.",
            "Market abuse is prohibited."]
QUESTION = "How long must client money records be kept and how quickly must they be reproduced?"


def _scored(scores=(0.9, 0.85, 0.6, 0.1)):
    units = [Unit(text, i, 0, 0, len(text)) for i, text in enumerate(PASSAGES)]
    x = np.zeros((len(units), len(FEATURES)))
    x[:, FEATURES.index("cosine")] = [0.8, 0.8, 0.5, 0.1]
    return [ScoredUnit(u, s, 1.0 - 0.1 * i) for i, (u, s) in enumerate(zip(units, scores))], x


def _model(**weights) -> dict:
    coef = [weights.get(name, 0.0) for name in PASSAGE_FEATURES]
    return {"features": list(PASSAGE_FEATURES), "mean": [0.0] * len(coef), "scale": [1.0] * len(coef),
            "coef": coef, "intercept": weights.get("intercept", 0.0), "threshold": 0.5, "max_passages": 3}


def test_candidates_measure_what_each_passage_adds_to_the_lead():
    scored, x = _scored()
    c = candidates(QUESTION, PASSAGES, scored, x, lead=0, links={(2, 0)})
    assert c.lead == 0 and c.passages == (1, 2, 3)
    col = {name: c.x[:, i] for i, name in enumerate(PASSAGE_FEATURES)}
    assert col["lead_repeat"][0] == 1.0 > col["lead_repeat"][1]  # the verbatim repeat, and a new rule
    assert col["novelty"][0] == 0.0 < col["novelty"][1]  # the second rule adds "reproduced", "quickly"...
    assert list(col["linked"]) == [0.0, 1.0, 0.0]  # passage 2 refers to the lead
    assert col["best_score_ratio"][0] == pytest.approx(0.85 / 0.9)
    assert col["cosine_gap"][2] == pytest.approx(0.7)
    # a passage whose units are all unusable is no candidate
    assert candidates(QUESTION, PASSAGES, scored, x, lead=0, usable=[0, 2]).passages == (2,)


def test_decide_cites_the_lead_then_the_probable_passages_most_probable_first():
    scored, x = _scored()
    c = candidates(QUESTION, PASSAGES, scored, x, lead=0, links={(2, 0)})
    model = _model(novelty=20.0, lead_repeat=-4.0, intercept=-1.0)
    assert decide(c, model) == [0, 2]  # the repeat and the off-topic rule left out
    assert decide(c, model, threshold=0.0) == [0, 2, 3]  # most probable first, at most 3: the repeat is last out
    assert decide(c, model, threshold=0.0, max_passages=1) == [0]
    assert decide(c, _model(linked=30.0, intercept=-10.0)) == [0, 2]  # the link alone


def test_a_passage_linked_to_the_lead_is_held_to_the_linked_threshold():
    scored, x = _scored()
    c = candidates(QUESTION, PASSAGES, scored, x, lead=0, links={(2, 0)})
    model = _model(obligation=0.0, intercept=0.0)  # every candidate: probability 0.5
    assert decide(c, {**model, "threshold": 0.6}) == [0]  # none reaches 0.6
    assert decide(c, {**model, "threshold": 0.6, "linked_threshold": 0.4}) == [0, 2]  # the linked one alone
    assert decide(c, {**model, "threshold": 0.6}, linked_threshold=0.4) == [0, 2]
    # never above the threshold: a linked passage is not held to more than any other
    assert decide(c, {**model, "threshold": 0.4, "linked_threshold": 0.9}) == [0, 1, 2]


def test_the_decision_file_is_checked(tmp_path):
    path = tmp_path / "passage_set.json"
    with pytest.raises(DataError, match="missing"):
        load_passage_set(str(path))
    path.write_text("{")
    with pytest.raises(DataError, match="not JSON"):
        load_passage_set(str(path))
    path.write_text(json.dumps({**_model(), "features": ["old"]}))
    with pytest.raises(DataError, match="retrain"):
        load_passage_set(str(path))
    bad = _model()
    del bad["threshold"]
    path.write_text(json.dumps(bad))
    with pytest.raises(DataError, match="threshold"):
        load_passage_set(str(path))


def test_the_answerer_cites_what_the_decision_decides(tmp_path):
    """With --passage-set the cited passages are the lead and those the file's model picks; without it, the gate
    cites by its margin. A model that picks nothing cites the lead alone."""
    from rirag.generation.focused import FocusedAnswerer
    from rirag.generation.focused.config import FocusedConfig

    def encode(texts):
        vectors = [[1.0, t.count("records") + 0.1, t.count("reproduced") + 0.1] for t in texts]
        v = np.asarray(vectors)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def cited(config):
        answerer = FocusedAnswerer(config=config, encode=encode, is_obligation=lambda ts: [True] * len(ts))
        answer = answerer.answer(QUESTION, PASSAGES[1:], [1.0, 0.9, 0.8])
        return sorted({n for k in answer.kept for n in k.numbers})

    every = tmp_path / "every.json"
    every.write_text(json.dumps(_model(intercept=10.0)))
    none = tmp_path / "none.json"
    none.write_text(json.dumps(_model(intercept=-10.0)))
    assert cited(FocusedConfig(passage_set=True, passage_set_file=str(every))) == [1, 2, 3]
    assert cited(FocusedConfig(passage_set=True, passage_set_file=str(none))) == [1]
    assert cited(FocusedConfig(passage_set=True, passage_set_file=str(every), passage_set_threshold=1.1)) == [1]


def test_linked_cited_rules_are_quoted_together_and_marked_at_the_reference():
    """A cited rule that another cited rule refers to follows it, its number right after the reference; the
    answer without a link between its cited rules is left as it was."""
    from rirag.generation.focused.answer import FocusedAnswer
    from rirag.generation.focused.follow import connect_linked
    from rirag.generation.render import render
    from rirag.xref.graph import Link

    passages = ["A firm must keep the records set out in Rule 9.5.2 for six years.", "Market abuse is prohibited.",
                "Rule 9.5.2 records are client money ledgers and reconciliations."]
    units = [ScoredUnit(Unit(text, i, 0, 0, len(text)), 1.0 - 0.1 * i) for i, text in enumerate(passages)]
    answer = FocusedAnswer("What records must be kept?", [units[0], units[1], units[2]], units, 0.9, True)
    start = passages[0].index("Rule 9.5.2")
    link = Link("Rule 9.5.2", start, start + len("Rule 9.5.2"), ("p3",))
    joined = connect_linked(answer, passages, ["p1", "p2", "p3"], {(0, 2): link})
    assert [k.unit.passage for k in joined.kept] == [0, 2, 1]
    assert [str(f) for f in joined.followed] == ["[1] Rule 9.5.2 -> [3]"]
    text = render(joined.draft)
    assert "set out in Rule 9.5.2 [3] for six years" in text
    assert text.index("client money ledgers") < text.index("Market abuse")
    assert connect_linked(answer, passages, ["p1", "p2", "p3"], {}) is answer


def test_a_passage_s_place_against_the_lead_is_measured_from_the_labels():
    """Same document and shared leading label parts ("3.2.1" / "3.2.4": two); another document or no labels:
    nothing shared."""
    from rirag.generation.focused.passage_set import MAX_SHARED_LABEL, shared_label

    assert shared_label("3.2.1", "3.2.4") == 2
    assert shared_label("6.2.2.Guidance.1.", "6.2.2.Senior Management Responsibilities.2.") == 3
    assert shared_label("Part 6.Chapter 2.73.(2)", "Part 6.Chapter 2.74") == 2
    assert shared_label("66)", "67)") == 0
    assert shared_label("1.2.3.4.5.6", "1.2.3.4.5.6") == MAX_SHARED_LABEL
    scored, x = _scored()
    labels = [(3, "9.5.1"), (3, "9.5.1"), (3, "9.5.2(a)"), (7, "9.5.2")]
    c = candidates(QUESTION, PASSAGES, scored, x, lead=0, labels=labels)
    col = {name: c.x[:, i] for i, name in enumerate(PASSAGE_FEATURES)}
    assert list(col["same_document"]) == [1.0, 1.0, 0.0]
    assert list(col["shared_label"]) == [3.0, 2.0, 0.0]  # the other document's 9.5.2 shares nothing
    bare = candidates(QUESTION, PASSAGES, scored, x, lead=0)
    assert not bare.x[:, PASSAGE_FEATURES.index("same_document")].any()
    # labels of the wrong length (another context) are not read as this one's
    assert not candidates(QUESTION, PASSAGES, scored, x, lead=0, labels=labels[:2]).x[:, -2:].any()


def test_each_decided_passage_is_quoted_and_the_bound_grows_with_the_passages_cited():
    """A decided passage whose only unit is longer than the cap on another passage's unit is still cited, cut to
    the cap; the answer is bounded by the first passage's budget plus the cap for each further passage cited."""
    from rirag.generation.focused.config import FocusedConfig
    from rirag.generation.focused.selection import Limits, Selection, within_bound

    passages = [" ".join(["Lead rule sentence words here."] * 24),  # 120 words
                " ".join([f"Second rule part {i} applies." for i in range(30)]),  # 120 words
                " ".join([f"Third rule part {i} applies." for i in range(30)])]
    scored = [ScoredUnit(Unit(p, i, 0, 0, len(p)), 0.9 - 0.2 * i, 1.0 - 0.1 * i) for i, p in enumerate(passages)]
    limits = Limits(FocusedConfig(), {"keep_ratio": 1.01, "min_score": 0.0, "passage_weight": 0.2,
                                      "passage_margin": 0.4, "max_passages": 4, "extra_unit_words": 50,
                                      "max_words": 160})
    gate_only = Selection(limits)(list(scored))
    assert [k.unit.passage for k in gate_only] == [0]  # nothing else fits 160 words or the 50-word cap
    kept = Selection(limits, lambda usable, lead: [lead, 1, 2])(list(scored))
    assert [k.unit.passage for k in kept] == [0, 1, 2]
    bounded = within_bound(kept, passages, 160, 300, per_passage=50)
    assert [k.unit.passage for k in bounded] == [0, 1, 2]
    assert bounded[0].unit.words == 120 and all(k.unit.words <= 50 and k.unit.clipped for k in bounded[1:])
    assert sum(k.unit.words for k in bounded) <= 160 + 2 * 50
    # without the per-passage allowance the old bound holds: the first unit alone
    assert [k.unit.passage for k in within_bound(kept, passages, 160, 300)] == [0]


def test_question_groups_and_so_the_folds_do_not_depend_on_the_hash_seed():
    """Questions sharing a gold passage, transitively, form one group, named the same whatever the order of the
    questions and their gold sets (the folds were once drawn differently in each process)."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    code = ("import sys; sys.path.insert(0, 'src'); from rirag.training.folds import question_groups; "
            "gold = {'q3': {'c', 'd'}, 'q1': {'a', 'b'}, 'q2': {'b', 'c'}, 'q4': {'e'}, 'q5': {'f', 'g', 'h'}}; "
            "print(sorted(question_groups(gold).items()))")
    outputs = {subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in (1, 2, 3)}
    assert len(outputs) == 1
    groups = dict(ast.literal_eval(outputs.pop()))
    assert groups["q1"] == groups["q2"] == groups["q3"] == "q1"  # a -b- q2 -c- q3: one group, its first question
    assert groups["q4"] == "q4" and groups["q5"] == "q5"
