"""Hard-negative mining: never a gold id, never a verbatim copy of a gold text, best-first, seeded draws."""

import random

import pytest

from rirag.data.obliqa import Passage, Question
from rirag.retrieval.negatives import draw, negative_pools


class FixedRun:
    def __init__(self, run):
        self.run, self.calls = run, []

    def search(self, queries, k, show_progress=False):
        self.calls.append((dict(queries), k))
        return {q: dict(sorted(self.run[q].items(), key=lambda kv: -kv[1])[:k]) for q in queries}


def _corpus():
    texts = {"g1": "A firm must keep records.", "g2": "Reports are due yearly.",
             "copy": "A  firm must keep   RECORDS.",  # the gold rule again under another id
             "n1": "Client money is segregated.", "n2": "Capital must be adequate.", "n3": "Sanctions apply."}
    return {pid: Passage(pid, 1, pid, t) for pid, t in texts.items()}


def test_pools_drop_gold_and_gold_copies_and_keep_rank_order():
    corpus = _corpus()
    questions = [Question("q1", "records?", gold=("g1",)), Question("q2", "reports?", gold=("g2",))]
    run = {"q1": {"copy": 9.0, "g1": 8.0, "n2": 7.0, "n1": 6.0, "n3": 1.0},
           "q2": {"g1": 5.0, "g2": 4.0, "n3": 3.0}}
    retriever = FixedRun(run)
    pools = negative_pools(questions, corpus, retriever, depth=4)
    assert retriever.calls[0][1] == 4
    assert pools["q1"] == ["n2", "n1"]  # 'copy' repeats q1's gold text; n3 is below depth 4
    assert pools["q2"] == ["g1", "n3"]  # g1 is gold for q1, not for q2: a fair negative here
    with pytest.raises(ValueError, match="depth"):
        negative_pools(questions, corpus, retriever, depth=0)


def test_draw_is_seeded_distinct_and_bounded():
    pool = [f"p{i}" for i in range(10)]
    a = draw(pool, 3, random.Random(7))
    assert a == draw(pool, 3, random.Random(7)) and len(set(a)) == 3 and set(a) <= set(pool)
    assert sorted(draw(pool[:2], 5, random.Random(0))) == ["p0", "p1"]
    seen = set()
    for seed in range(50):
        seen.update(draw(pool, 1, random.Random(seed)))
    assert len(seen) > 5  # not always the top candidate


def test_contrastive_columns_with_mined_negatives(tiny_data_dir):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
    import contrastive_tuning as ct
    from rirag.data.obliqa import load_obliqa
    from rirag.data.splits import split_questions

    obliqa = load_obliqa(tiny_data_dir)
    questions = [q for q in split_questions(obliqa, "original-dev") if q.gold]
    plain = ct.training_columns(ct.ContrastiveTuningArguments(), questions, obliqa.corpus)
    assert set(plain) == {"anchor", "positive"}
    args = ct.ContrastiveTuningArguments(hard_negatives=2, negatives_depth=5)
    cols = ct.training_columns(args, questions, obliqa.corpus)
    assert set(cols) == {"anchor", "positive", "negative_1", "negative_2"}
    assert len({len(v) for v in cols.values()}) == 1 and len(cols["anchor"]) > 0
    gold_texts = {q.text: {obliqa.corpus[p].text for p in q.gold} for q in questions}
    for i, question in enumerate(cols["anchor"]):
        assert cols["positive"][i] in gold_texts[question]
        negatives = {cols["negative_1"][i], cols["negative_2"][i]}
        assert len(negatives) == 2 and not negatives & gold_texts[question]


def test_negative_columns_draw_per_pair_and_drop_short_pools():
    from rirag.retrieval.negatives import negative_columns

    corpus = _corpus()
    pairs = [("q1", "records?", "g1", corpus["g1"].text), ("q2", "reports?", "g2", corpus["g2"].text)]
    cols = negative_columns(pairs, {"q1": ["n1", "n2"], "q2": ["n3"]}, corpus, 2, random.Random(0), anchor="query")
    assert cols["query"] == ["records?"]  # q2's pool holds one negative, fewer than 2: dropped
    assert {cols["negative_1"][0], cols["negative_2"][0]} == {corpus["n1"].text, corpus["n2"].text}
