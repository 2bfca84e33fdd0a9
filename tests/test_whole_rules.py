"""Issue 64: each cited rule quoted whole where it fits, the rule that refers to a cited one cited before it, and
the gold-text measures (coverage of each gold rule, precision of the answer's words)."""

from __future__ import annotations

from rirag.generation.focused.answer import FocusedAnswer
from rirag.generation.focused.referring import add_referring
from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.focused.whole_rules import whole_rules
from rirag.generation.render import render
from rirag.scoring.gold_text import content_words, coverage, gold_text_metrics, precision
from rirag.text.units import split_units
from rirag.xref.graph import Link

RULE = ("A firm must notify the PRA before it enters into an outsourcing arrangement. The notice must describe the "
        "service provider. This does not apply to intra-group arrangements approved under Rule 4.2.")
OTHER = "Market abuse is prohibited in every market the firm trades on."
TARGET = "Rule 4.2 approval is given where the group's controls are equivalent to the firm's own controls."


def _answer(passages, kept_at):
    """A focused answer over ``passages`` keeping the units at ``kept_at`` ((passage, unit index) pairs)."""
    scored = [ScoredUnit(u, 0.9 - 0.1 * u.passage - 0.01 * u.index)
              for i, p in enumerate(passages) for u in split_units(p, i)]
    kept = [s for at in kept_at for s in scored if (s.unit.passage, s.unit.index) == at]
    return FocusedAnswer("What must a firm do before outsourcing?", kept, scored, 0.9, True)


def test_a_cited_rule_is_quoted_whole_in_its_own_order():
    passages = [RULE, OTHER]
    answer = _answer(passages, [(0, 1), (1, 0)])  # the selection kept the rule's second sentence and the other rule
    whole = whole_rules(answer, passages, rule_max_words=100, answer_max_words=400)
    assert [(s.unit.passage, s.unit.index) for s in whole.kept] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    text = render(whole.draft)
    assert text.index("must notify the PRA") < text.index("describe the service provider") < text.index("intra-group")
    assert text.index("intra-group") < text.index("Market abuse")


def test_a_rule_too_long_or_past_the_answer_bound_keeps_the_selected_units():
    passages = [RULE, OTHER]
    answer = _answer(passages, [(0, 1)])
    assert whole_rules(answer, passages, rule_max_words=10, answer_max_words=400) is answer
    assert whole_rules(answer, passages, rule_max_words=100, answer_max_words=15) is answer
    assert whole_rules(_answer(passages, []), passages, 100, 400).kept == []


def test_the_rule_referring_to_a_cited_rule_is_cited_before_it_and_marked_at_the_reference():
    passages = [TARGET, OTHER, RULE]
    answer = _answer(passages, [(0, 0)])
    start = RULE.index("Rule 4.2")
    link = Link("Rule 4.2", start, start + len("Rule 4.2"), ("t",))
    added = add_referring(answer, passages, ["t", "o", "r"], {(2, 0): link}, floor=0.0)
    assert [s.unit.passage for s in added.kept] == [2, 0]
    assert added.kept[0].unit.text.startswith("This does not apply")  # the unit that holds the reference
    assert [str(f) for f in added.followed] == ["[3] Rule 4.2 -> [1]"]
    assert "approved under Rule 4.2 [1]" in render(added.draft)
    # a floor above the referring rule's score, or no link to a cited rule: nothing added
    assert add_referring(answer, passages, ["t", "o", "r"], {(2, 0): link}, floor=0.95) is answer
    assert add_referring(answer, passages, ["t", "o", "r"], {(2, 1): link}, floor=0.0) is answer


def test_gold_text_measures_pull_against_each_other():
    gold = ["A firm must notify the PRA before outsourcing.", "Notice must describe the provider."]
    assert content_words("The firm [1] must notify the PRA.") == ["firm", "must", "notify", "pra"]
    whole = " ".join(gold)
    assert coverage(whole, gold[0]) == coverage(whole, gold[1]) == 1.0
    assert coverage(gold[0], gold[1]) < 0.5
    assert precision(whole, gold) == 1.0
    padded = whole + " Market abuse is prohibited everywhere."
    assert precision(padded, gold) < 0.8
    metrics, per = gold_text_metrics([gold[0], padded], [["g1", "g2"], ["g1"]], [["g1", "g2"], ["g1", "g2"]],
                                     {"g1": gold[0], "g2": gold[1]})
    assert per["gold_rule_coverage_min"][0] < 0.5 and per["gold_rule_coverage_min"][1] == 1.0
    assert metrics["questions_context_holds"] == 1  # the second context lacks g2
    assert metrics["gold_rule_coverage_min_context_holds"] == per["gold_rule_coverage_min"][0]


class _Graph:
    """A reference graph of given links, forward and reverse (what the footnote pass asks of one)."""

    def __init__(self, links):
        self._links = links

    def links(self, pid):
        return self._links.get(pid, [])

    def referrers(self, pid):
        return [(s, link) for s, links in self._links.items() for link in links if pid in link.targets]


def test_a_rule_is_quoted_with_its_footnote_and_a_footnote_with_its_rule():
    from types import SimpleNamespace

    from rirag.generation.focused.footnotes import with_footnotes

    rule = "Important business services must be mapped by the firm 25 before the deadline."
    note = "25. Important business services are those defined in the Operational Continuity Part."
    start = rule.index("25")
    mark = Link("25", start, start + 2, ("n",))
    corpus = {"r": SimpleNamespace(text=rule, marks=((start, start + 2),), document_id=1, passage_id="2.1"),
              "n": SimpleNamespace(text=note, marks=(), document_id=1, passage_id="footnote 25"),
              "o": SimpleNamespace(text=OTHER, marks=(), document_id=1, passage_id="3.1")}
    graph = _Graph({"r": [mark]})
    # the rule cited, its footnote not retrieved: the footnote comes from the corpus, quoted right after it
    answer = _answer([rule, OTHER], [(0, 0), (1, 0)])
    out = with_footnotes(answer, [rule, OTHER], ["r", "o"], graph, corpus, 100, 400)
    assert [a.id for a in out.added] == ["n"] and [s.unit.passage for s in out.kept] == [0, 2, 1]
    assert [str(f) for f in out.followed] == ["[1] 25 -> [3]"]
    # the footnote cited alone: its rule comes before it
    alone = _answer([note, OTHER], [(0, 0)])
    back = with_footnotes(alone, [note, OTHER], ["n", "o"], graph, corpus, 100, 400)
    assert [a.id for a in back.added] == ["r"] and [s.unit.passage for s in back.kept] == [2, 0]
    # a reference that is not a footnote mark, or no room left: nothing added
    plain = _Graph({"r": [Link("Rule 3.1", 0, 4, ("n",))]})
    assert with_footnotes(answer, [rule, OTHER], ["r", "o"], plain, corpus, 100, 400) is answer
    assert with_footnotes(answer, [rule, OTHER], ["r", "o"], graph, corpus, 100, 20) is answer


def test_a_written_graph_answers_who_refers_to_a_passage(tmp_path):
    import json

    from rirag.xref.graph import ReferenceGraph

    rows = [{"source_id": "a", "surface": "Rule 2", "start": 0, "end": 6, "targets": ["b"], "resolved": True},
            {"source_id": "c", "surface": "2", "start": 3, "end": 4, "targets": ["b", "d"], "resolved": True},
            {"source_id": "e", "surface": "Rule 9", "start": 0, "end": 6, "targets": [], "resolved": False}]
    path = tmp_path / "references.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    graph = ReferenceGraph(graph=path)
    assert sorted(s for s, _ in graph.referrers("b")) == ["a", "c"]
    assert [s for s, _ in graph.referrers("d")] == ["c"] and graph.referrers("a") == []


def test_a_cited_footnote_before_its_cited_rule_moves_after_it():
    from types import SimpleNamespace

    from rirag.generation.focused.footnotes import with_footnotes

    rule = "Important business services must be mapped by the firm 25 before the deadline."
    note = "25. Important business services are those defined in the Operational Continuity Part."
    start = rule.index("25")
    corpus = {"r": SimpleNamespace(text=rule, marks=((start, start + 2),)), "n": SimpleNamespace(text=note, marks=())}
    graph = _Graph({"r": [Link("25", start, start + 2, ("n",))]})
    answer = _answer([note, rule], [(0, 0), (1, 0)])  # the footnote ranked and quoted first
    out = with_footnotes(answer, [note, rule], ["n", "r"], graph, corpus, 100, 400)
    assert [s.unit.passage for s in out.kept] == [1, 0]


def test_an_answer_whose_lead_is_linked_keeps_its_linked_rules_alone():
    from dataclasses import replace

    from rirag.generation.focused.answer import Followed
    from rirag.generation.focused.paired import linked_set

    passages = [RULE, OTHER, TARGET]
    answer = _answer(passages, [(0, 0), (1, 0), (2, 0)])
    assert linked_set(answer) is answer  # no link: every cited rule stays
    linked = replace(answer, followed=[Followed(1, "Rule 4.2", 3, "t")])
    assert [s.unit.passage for s in linked_set(linked).kept] == [0, 2]
    # a link between two rules other than the lead leaves the answer as it is
    other = replace(answer, followed=[Followed(2, "x", 3, "t")])
    assert linked_set(other) is other
