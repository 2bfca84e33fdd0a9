"""RAFT instances: the oracle / distractor mix on a seeded tiny corpus, targets from the offline teacher, the
DatasetDict and its card."""

from __future__ import annotations

import json
import random

import pytest

from _scripts import load_script
from rirag.data.obliqa import Passage, Question
from rirag.errors import DataError
from rirag.generation.prompts import FEW_SHOT_COT, NO_ANSWER, final_answer, passages_from_messages
from rirag.generation.raft import (
    DISTRACTORS_WITH_ORACLE,
    DISTRACTORS_WITHOUT_ORACLE,
    ORACLE_PROBABILITY,
    ExtractiveTeacher,
    RaftInstance,
    build_instances,
    check_training_split,
    raft_rows,
    split_rows,
)
from rirag.hub.dataset_build import save_raft_dataset

WORDS = ("capital client money records report regulator custody audit fund insurer broker licence breach notify "
         "annual return auditor director governance liquidity reserve trading venue sanctions screening").split()


def tiny_corpus(n_passages: int = 120, n_questions: int = 400, seed: int = 7):
    """Passages of random words; each question asks with the words of 1-2 gold passages. Passage ``copy-of-0``
    repeats gold passage ``p0``'s text under another id (a copy is never a distractor)."""
    rng = random.Random(seed)
    corpus = {f"p{i}": Passage(f"p{i}", 1 + i % 5, f"{i}.", " ".join(rng.choices(WORDS, k=12)) + " must apply.")
              for i in range(n_passages)}
    corpus["copy-of-0"] = Passage("copy-of-0", 9, "9.9", corpus["p0"].text)
    questions = []
    for j in range(n_questions):
        gold = tuple(sorted(rng.sample(sorted(corpus)[:n_passages], rng.choice([1, 1, 2]))))
        if j == 0:
            gold = ("p0",)
        text = " ".join(corpus[gold[0]].text.split()[:6]) + "?"
        questions.append(Question(f"q{j}", text, gold))
    return corpus, questions


@pytest.fixture(scope="module")
def mined():
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.negatives import negative_pools

    corpus, questions = tiny_corpus()
    pools = negative_pools(questions, corpus, passage_index(corpus), depth=20)
    return corpus, questions, pools


def test_oracle_share_matches_p_and_distractors_are_never_gold(mined):
    corpus, questions, pools = mined
    instances, report = build_instances(questions, corpus, pools, seed=13)
    assert report["instances"] == len(questions)
    share = sum(i.has_oracle for i in instances) / len(instances)
    # 400 Bernoulli(0.7) draws: standard deviation 0.023; 3 sd
    assert abs(share - ORACLE_PROBABILITY) < 0.07
    assert report["oracle_share"] == pytest.approx(share, abs=1e-4)
    gold_text = {q.id: {corpus[p].text for p in q.gold} for q in questions}
    by_id = {q.id: q for q in questions}
    first_positions = set()
    for inst in instances:
        q = by_id[inst.question_id]
        distractors = [p for p in inst.passage_ids if p not in inst.oracle_ids]
        assert not set(distractors) & set(q.gold)
        assert not {corpus[p].text for p in distractors} & gold_text[q.id]  # no verbatim copy of a gold passage
        assert len(set(inst.passage_ids)) == len(inst.passage_ids)
        if inst.has_oracle:
            assert set(inst.oracle_ids) == set(q.gold)
            assert len(distractors) == DISTRACTORS_WITH_ORACLE
            first_positions.add(inst.oracle_numbers[0])
        else:
            assert len(inst.passage_ids) == DISTRACTORS_WITHOUT_ORACLE
    assert len(first_positions) >= 3  # shuffled: the oracle is not always first


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_extreme_probabilities(mined, p):
    corpus, questions, pools = mined
    instances, _ = build_instances(questions[:50], corpus, pools, oracle_probability=p)
    assert all(i.has_oracle == (p == 1.0) for i in instances)


def test_seeded(mined):
    corpus, questions, pools = mined
    a, _ = build_instances(questions, corpus, pools, seed=1)
    b, _ = build_instances(questions, corpus, pools, seed=1)
    c, _ = build_instances(questions, corpus, pools, seed=2)
    assert a == b and a != c


def test_retrieval_order_sorts_the_same_draws_by_rank(mined):
    corpus, questions, pools = mined
    ranks = {q.id: {pid: r for r, pid in enumerate(reversed(sorted(corpus)))} for q in questions}
    ranks[questions[1].id] = {}  # no ranking at all: the shuffled order stays
    shuffled, _ = build_instances(questions, corpus, pools, seed=5)
    ordered, report = build_instances(questions, corpus, pools, seed=5, order="retrieval", ranks=ranks)
    assert report["context_order"] == "retrieval"
    assert [i.question_id for i in ordered] == [i.question_id for i in shuffled]
    for s, o in zip(shuffled, ordered):
        assert sorted(s.passage_ids) == sorted(o.passage_ids) and s.oracle_ids == o.oracle_ids  # same draws
        rank = ranks[o.question_id]
        if rank:
            assert [rank[p] for p in o.passage_ids] == sorted(rank[p] for p in o.passage_ids)
        else:
            assert o.passage_ids == s.passage_ids
    # a passage the retriever did not rank goes after the ranked ones
    q = next(i for i in shuffled if i.question_id == questions[2].id)
    unranked = q.passage_ids[0]
    partial = {questions[2].id: {p: r for r, p in enumerate(reversed(q.passage_ids[1:]))}}
    again, _ = build_instances(questions, corpus, pools, seed=5, order="retrieval", ranks=partial)
    assert again[2].passage_ids == (*reversed(q.passage_ids[1:]), unranked)
    with pytest.raises(ValueError, match="needs the retriever's ranks"):
        build_instances(questions, corpus, pools, order="retrieval")
    with pytest.raises(ValueError, match="unknown context order"):
        build_instances(questions, corpus, pools, order="random")


def test_short_pools_and_missing_gold_are_skipped_and_counted():
    corpus = {f"p{i}": Passage(f"p{i}", 1, str(i), f"text {i}") for i in range(6)}
    questions = [Question("ok", "q", ("p0",)), Question("short", "q", ("p1",)), Question("nogold", "q", ("zz",))]
    pools = {"ok": ["p2", "p3", "p4", "p5"], "short": ["p2"], "nogold": ["p2", "p3", "p4", "p5"]}
    instances, report = build_instances(questions, corpus, pools, oracle_probability=1.0)
    assert [i.question_id for i in instances] == ["ok"]
    assert report["skipped"] == {"no_gold_in_corpus": 1, "too_few_distractors": 1}
    with pytest.raises(DataError, match="no distractor pool"):
        build_instances([Question("x", "q", ("p0",))], corpus, {})
    with pytest.raises(ValueError, match="oracle_probability"):
        build_instances(questions, corpus, pools, oracle_probability=1.5)


def test_only_training_splits():
    assert check_training_split("train") == "train"
    for split in ("validation", "test", "original-test"):
        with pytest.raises(DataError, match="training questions only"):
            check_training_split(split)


class _Composer:
    """Stands in for the extractive composer: every passage (one sentence each) a part citing itself."""

    name, needs_passages = "every passage", True

    def draft(self, requests):
        from rirag.generation.base import Draft, DraftPart

        return [Draft([DraftPart(p, (i,), i) for i, p in enumerate(r.passages)]) for r in requests]

    def describe(self):
        return None


def test_extractive_teacher_cites_the_oracle_positions_and_abstains_without_it():
    corpus = {p: Passage(p, 1, p, f"The firm must keep {p} records.") for p in ("a", "b", "c", "d", "e")}
    with_oracle = RaftInstance("q1", "What records?", ("c", "a", "d", "b"), ("a", "b"))
    without = RaftInstance("q2", "What records?", ("c", "d", "e", "a"), ())
    rows, dropped = raft_rows([with_oracle, without], corpus, ExtractiveTeacher(_Composer()))
    assert dropped == 0
    reply = rows[0]["completion"][0]["content"]
    answer, found = final_answer(reply, FEW_SHOT_COT)
    assert found
    assert answer == "The firm must keep a records [2]. The firm must keep b records [4]."
    assert reply.startswith('Passage [2] says: "The firm must keep a records."')
    assert passages_from_messages(rows[0]["prompt"]) == [corpus[p].text for p in with_oracle.passage_ids]
    assert final_answer(rows[1]["completion"][0]["content"], FEW_SHOT_COT) == (NO_ANSWER, True)
    assert [r["has_oracle"] for r in rows] == [True, False]


def test_focused_teacher_answers_the_question_from_the_oracle_only():
    from rirag.generation.focused import FocusedAnswerer, FocusedConfig
    from rirag.generation.raft import FocusedTeacher
    from test_focused import bag_of_words, no_obligations

    texts = {"a": "A Fund Manager must pay the annual fee by 31 January. Records must be kept in English.",
             "b": "A Fund Manager must notify the Regulator within 10 business days of a change of auditor.",
             "c": "An Insurer must hold base capital of paid up ordinary shares.",
             "d": "A Fund Manager must notify the Regulator of a change of auditor within 10 days of it."}
    corpus = {p: Passage(p, 1, p, t) for p, t in texts.items()}
    question = "When must a Fund Manager notify the Regulator of a change of auditor?"
    inst = RaftInstance("q1", question, ("c", "a", "d", "b"), ("a", "b"))
    answerer = FocusedAnswerer(encode=bag_of_words, is_obligation=no_obligations,
                               config=FocusedConfig(keep_ratio=0.9, min_score=0.0, passage_gate=False))
    rows, dropped = raft_rows([inst], corpus, FocusedTeacher(answerer))
    answer, found = final_answer(rows[0]["completion"][0]["content"], FEW_SHOT_COT)
    assert found and dropped == 0
    # the oracle's unit that answers, cited with its number in the shuffled context (b is passage 4); never the
    # distractor d, which says the same but is not oracle, nor a's unrelated units
    assert answer.startswith("A Fund Manager must notify the Regulator within 10 business days") and "[4]" in answer
    assert "[3]" not in answer and "annual fee" not in answer
    assert rows[0]["completion"][0]["content"].startswith('Passage [4] says: "A Fund Manager must notify')
    # with the frozen scorer's passage gate every oracle passage is cited, each through its best unit (here a's
    # best is its first): the distractors never are
    gated = FocusedAnswerer(encode=bag_of_words, is_obligation=no_obligations)
    answer, _ = final_answer(raft_rows([inst], corpus, FocusedTeacher(gated))[0][0]["completion"][0]["content"],
                             FEW_SHOT_COT)
    assert answer.startswith("A Fund Manager must notify the Regulator within 10 business days")
    assert "[4]" in answer and "[2]" in answer and "[1]" not in answer and "[3]" not in answer


def test_dataset_dict_and_card(mined, tmp_path):
    from datasets import load_from_disk

    corpus, questions, pools = mined
    instances, report = build_instances(questions[:60], corpus, pools)
    rows, _ = raft_rows(instances, corpus, ExtractiveTeacher(_Composer()))
    ds = split_rows(rows, held_out_fraction=0.1)
    assert set(ds) == {"train", "held_out"} and len(ds["held_out"]) == 6
    assert not set(ds["train"]["question_id"]) & set(ds["held_out"]["question_id"])
    report |= {"split": "train", "split_seed": 42, "distractor_source": "retriever bm25", "negatives_depth": 20,
               "teacher": "extractive", "teacher_dropped": 0}
    save_raft_dataset(ds, report, str(tmp_path / "raft"), "pytest")
    loaded = load_from_disk(str(tmp_path / "raft"))
    assert loaded["train"][0]["prompt"][0]["role"] == "system"
    assert loaded["train"][0]["completion"][0]["role"] == "assistant"
    card = (tmp_path / "raft" / "README.md").read_text()
    assert f"measured share {report['oracle_share']}" in card and "| held_out | 6 |" in card
    assert json.loads((tmp_path / "raft" / "raft_report.json").read_text())["instances"] == 60


@pytest.mark.slow
def test_real_training_questions_mix(real_obliqa):
    """On the real leakage-free train split with BM25 distractors: P holds and no validation question leaks."""
    from rirag.data.splits import split_questions
    from rirag.retrieval.bm25 import passage_index
    from rirag.retrieval.negatives import negative_pools

    train = [q for q in split_questions(real_obliqa, "train") if q.gold][:600]
    validation = {q.id for q in split_questions(real_obliqa, "validation")}
    pools = negative_pools(train, real_obliqa.corpus, passage_index(real_obliqa.corpus), depth=20)
    instances, report = build_instances(train, real_obliqa.corpus, pools)
    assert abs(report["oracle_share"] - ORACLE_PROBABILITY) < 0.06
    assert not {i.question_id for i in instances} & validation


def test_builder_reads_its_keys_from_the_training_recipe():
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    builder = load_script("dataset_builders/raft.py", "raft_builder")
    args = builder.parse(["--config", str(repo / "recipes" / "raft" / "offline.yaml"), "--max_questions", "5"])
    assert (args.teacher, args.retriever, args.max_questions) == ("focused", "bm25", 5)
    assert args.dataset_name == "artifacts/datasets/raft/offline"
    assert args.oracle_probability == ORACLE_PROBABILITY  # not retyped in the recipe: the module constant
    paper = builder.parse(["--config", str(repo / "recipes" / "raft" / "paper.yaml")])
    assert paper.teacher == "endpoint" and paper.max_questions == 200
