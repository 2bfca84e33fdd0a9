"""Following cross-references in focused answers (rirag.generation.focused.follow): a cited rule's reference to another
rule of the corpus is followed and cited when the answer needs it, within the length limits; one the answer does
not need, or one outside the corpus, is not."""

from __future__ import annotations

import json

import pytest

from _scoring_fixtures import bag_of_words
from rirag.generation.base import AnswerRequest
from rirag.generation.focused import FocusedAnswerer, FocusedConfig
from rirag.generation.focused.follow import Followed
from rirag.generation.pipeline import RetrievedPassage, answer_items
from rirag.xref import graph as xref_graph
from rirag.xref import records as xref_records
from rirag.xref.graph import ReferenceGraph

CITING = ("An Authorised Person must notify the Regulator in writing of any breach of its capital requirements, "
          "subject to Rule 9.5.2.")
TARGET = ("The notification of a breach of capital requirements under Rule 9.5.1 must be made in writing within "
          "five business days of the Authorised Person becoming aware of the breach.")
UNRELATED = "An Authorised Person must keep records of its marketing materials for six years."
CITING_UNNEEDED = ("An Authorised Person must notify the Regulator in writing of any breach of its capital "
                   "requirements, without prejudice to Rule 3.1.1.")
CITING_OUTSIDE = ("An Authorised Person must notify the Regulator in writing of any breach of its capital "
                  "requirements, subject to Rule 12.4.4.")
QUESTION = ("Within how many business days must an Authorised Person notify the Regulator in writing of a breach "
            "of its capital requirements?")

PASSAGES = {"p-951": ("9.5.1", CITING), "p-952": ("9.5.2", TARGET), "p-311": ("3.1.1", UNRELATED),
            "p-953": ("9.5.3", CITING_UNNEEDED), "p-954": ("9.5.4", CITING_OUTSIDE)}


def graph() -> ReferenceGraph:
    return ReferenceGraph(passages=[xref_records.Passage(pid, "1", "General Rulebook (GEN)", number, text)
                                    for pid, (number, text) in PASSAGES.items()])


def answerer(**config) -> FocusedAnswerer:
    config.setdefault("follow_ratio", 0.3)  # the stand-in encoder scores the followed unit at about 0.4 of the lead
    config.setdefault("follow_scope", "corpus")  # most cases here follow a rule outside the given passages
    a = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [True] * len(texts),
                        config=FocusedConfig(follow_references=True, **config))
    return a.attach_references(graph(), {pid: text for pid, (_, text) in PASSAGES.items()})


def draft(a: FocusedAnswerer, ids: list[str]):
    return a.draft([AnswerRequest(QUESTION, [PASSAGES[i][1] for i in ids], [1.0] * len(ids), ids=ids)])[0]


def test_a_cited_rule_referring_to_another_in_the_corpus_is_followed_and_cited():
    d = draft(answerer(), ["p-951"])
    assert [p.cited for p in d.parts] == [(0,), (1,)]  # the citing rule [1], then the rule it refers to [2]
    assert "five business days" in d.parts[1].text
    assert d.followed == [Followed(1, "Rule 9.5.2", 2, "p-952")]
    assert [p.id for p in d.added] == ["p-952"]


def test_a_target_among_the_given_passages_keeps_its_number():
    d = draft(answerer(), ["p-951", "p-311", "p-952"])
    assert {n for p in d.parts for n in p.cited} >= {0, 2}  # cited through the gate, or followed as [3]
    assert all(f.target == 3 for f in d.followed) and d.added == []


def test_off_by_default_and_without_ids_nothing_is_followed():
    plain = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [True] * len(texts))
    plain.attach_references(graph(), {pid: text for pid, (_, text) in PASSAGES.items()})
    assert plain.config.follow_references is False
    assert draft(plain, ["p-951"]).followed == []
    no_ids = answerer().draft([AnswerRequest(QUESTION, [CITING], [1.0])])[0]
    assert no_ids.followed == [] and len(no_ids.parts) == 1


def test_a_rule_the_answer_does_not_need_is_not_followed():
    d = draft(answerer(), ["p-953"])  # refers to Rule 3.1.1 (marketing records): nothing to do with the question
    assert d.followed == [] and d.added == []
    assert all(p.cited == (0,) for p in d.parts)


def test_a_rule_outside_the_corpus_is_not_followed():
    d = draft(answerer(follow_ratio=0.0), ["p-954"])  # Rule 12.4.4: no such passage
    assert d.followed == [] and d.added == []


def test_the_length_limit_holds():
    """A followed rule grows the bound by the cap on another passage's unit (extra_unit_words), no more: it is
    quoted when the answer's budget plus that cap holds it, left out when it does not fit even so."""
    words, target = len(CITING.split()), len(TARGET.split())
    d = draft(answerer(max_words=words, extra_unit_words=target), ["p-951"])  # the budget is spent: the cap holds it
    assert d.followed and sum(len(p.text.split()) for p in d.parts) <= words + target
    d = draft(answerer(max_words=words, extra_unit_words=target - 1), ["p-951"])  # longer than the cap
    assert d.followed == [] and len(d.parts) == 1
    d = draft(answerer(max_words=words - 5, extra_unit_words=target), ["p-951"])
    assert d.followed and sum(len(p.text.split()) for p in d.parts) <= words + target


def test_the_answer_record_shows_what_was_followed():
    a = answerer()
    [answer] = answer_items([("q1", QUESTION, [RetrievedPassage("p-951", CITING, 1.0, 1, "9.5.1")])], a)
    record = json.loads(json.dumps(answer.to_record()))
    assert record["RetrievedIDs"] == ["p-951", "p-952"]  # the followed rule is numbered after the retrieved one
    assert record["Followed"] == [{"source": 1, "reference": "Rule 9.5.2", "target": 2, "target_id": "p-952"}]
    assert "[1]" in record["Answer"] and "[2]" in record["Answer"]
    assert [p.id for p in answer.cited] == ["p-951", "p-952"]


def test_the_graph_file_is_read_when_present(tmp_path):
    rows = xref_graph.graph_rows([xref_records.Passage(pid, "1", "General Rulebook (GEN)", number, text)
                            for pid, (number, text) in PASSAGES.items()])
    xref_graph.write_graph(rows, xref_graph.graph_summary(rows, len(PASSAGES)), tmp_path / "xref")
    g = ReferenceGraph(tmp_path)
    assert g.graph == tmp_path / "xref" / "references.jsonl"
    assert [(link.surface, link.targets) for link in g.links("p-951")] == [("Rule 9.5.2", ("p-952",))]
    assert g.links("p-954") == []  # unresolved references are not links


def test_ask_shows_the_followed_reference():
    from rirag.cli.answers import format_answer
    from rirag.data.obliqa import Passage

    a = answerer().attach_references(graph(), {pid: Passage(pid, 1, number, text)
                                               for pid, (number, text) in PASSAGES.items()})
    [answer] = answer_items([("q1", QUESTION, [RetrievedPassage("p-951", CITING, 1.0, 1, "9.5.1")])], a)
    shown = format_answer(answer, {1: "General Rulebook (GEN)"})
    assert "followed: Rule 9.5.2 -> [2] (referred to by [1])" in shown
    assert "[2] General Rulebook (GEN) · 9.5.2 · id p-952" in shown  # the added passage, with its rule number


def test_by_default_only_a_retrieved_rule_is_followed_whatever_its_score_against_the_lead():
    """The default decision rests on the link and the retrieval: a rule the cited one refers to is cited when it is
    among the passages retrieved for the question (even scoring far below the lead), never from the rest of the
    corpus."""
    default = FocusedConfig()
    assert (default.follow_scope, default.follow_ratio, default.follow_in_unit) == ("retrieved", 0.0, False)
    strict = {"follow_ratio": default.follow_ratio, "follow_scope": default.follow_scope,
              "max_passages": 1}  # the answer's own selection cites one passage: any other is cited by following
    alone = draft(answerer(**strict), ["p-951"])
    assert alone.followed == [] and alone.added == []  # Rule 9.5.2 is in the corpus, not retrieved: not followed
    both = draft(answerer(**strict), ["p-951", "p-311", "p-952"])
    assert both.followed == [Followed(1, "Rule 9.5.2", 3, "p-952")] and both.added == []
    assert [p.cited for p in both.parts] == [(0,), (2,)]  # the citing rule, then the rule it refers to
    lead_ratio = draft(answerer(**{**strict, "follow_ratio": 0.9}), ["p-951", "p-311", "p-952"])
    assert lead_ratio.followed == []  # the old gate: a share of the lead unit's score stops it


def test_an_unknown_follow_scope_is_an_error_naming_the_choices():
    with pytest.raises(ValueError, match="follow_scope must be one of retrieved, corpus, got 'everywhere'"):
        draft(answerer(follow_scope="everywhere"), ["p-951"])


def test_two_cited_rules_one_referring_to_the_other_are_joined_when_following():
    """Following on, a rule the answer cites anyway is not followed again: it is quoted right after the rule
    referring to it, its number marked at the reference; off, the answer keeps the gate's order and no marker."""
    from rirag.generation.render import render

    ids = ["p-952", "p-311", "p-951"]  # the two rules refer to each other; an unrelated one between them
    on = draft(answerer(follow_scope="retrieved", follow_ratio=0.0), ids)
    cited = [p.cited for p in on.parts]
    assert (0,) in cited and (2,) in cited
    assert abs(cited.index((2,)) - cited.index((0,))) == 1  # side by side (the lead stays first)
    assert "Rule 9.5.1 [3]" in render(on)
    assert [(f.source, f.target) for f in on.followed] == [(1, 3)]  # one join, not also 9.5.1's reference back
    plain = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [True] * len(texts))
    plain.attach_references(graph(), {pid: text for pid, (_, text) in PASSAGES.items()})
    off = draft(plain, ids)
    assert "Rule 9.5.1 [3]" not in render(off) and off.followed == []


def test_a_followed_rule_is_not_quoted_through_a_sentence_pointing_at_another_passage(monkeypatch):
    """A target passage opening "This is not an exhaustive list." points at a list in some other passage: quoted
    alone it says nothing, so the rule is quoted through its next sentence (as it was not before the rule)."""
    from rirag.generation.focused import follow

    pointing = "This is not an exhaustive list. " + TARGET
    passages = {**PASSAGES, "p-952": ("9.5.2", pointing)}

    def followed_text() -> str:
        a = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [True] * len(texts),
                            config=FocusedConfig(follow_references=True, follow_ratio=0.3, follow_scope="corpus"))
        a.attach_references(ReferenceGraph(passages=[xref_records.Passage(pid, "1", "General Rulebook (GEN)", n, text)
                                                     for pid, (n, text) in passages.items()]),
                            {pid: text for pid, (_, text) in passages.items()})
        d = draft(a, ["p-951"])
        assert [p.cited for p in d.parts] == [(0,), (1,)]
        return d.parts[1].text

    assert followed_text().startswith("The notification of a breach")
    monkeypatch.setattr(follow, "POINTER_MAX_WORDS", 0)  # without the rule the pointer is what gets quoted
    assert followed_text() == "This is not an exhaustive list."
