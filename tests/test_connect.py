"""How two quoted rules connect, said in one line from the links the answer followed (issue 64, point 3)."""

from __future__ import annotations

from dataclasses import replace

from rirag.generation.focused.answer import FocusedAnswer, Followed
from rirag.generation.focused.config import FocusedConfig, command_defaults
from rirag.generation.focused.connect import connected
from rirag.generation.focused.passes import PASSES
from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.render import written
from rirag.text.citations import parse_citations
from rirag.text.units import split_units

CITING = ("A firm must keep the records described in Depositor Protection 11.1 to 11.2 and send them to the PRA "
          "within twelve hours of a request.")
TARGET = "A firm must mark accounts held on behalf of beneficiaries so that they can be identified at once."
OTHER = "Market abuse is prohibited in every market the firm trades on."
NOTE = "5. The Combined Code developed for accounting periods beginning before 29 June 2010."


def _answer(passages, order, followed):
    """A focused answer quoting the first unit of each passage in ``order``, with ``followed`` links."""
    scored = [ScoredUnit(u, 0.9 - 0.1 * u.passage) for i, p in enumerate(passages) for u in split_units(p, i)]
    kept = [next(s for s in scored if s.unit.passage == i) for i in order]
    return FocusedAnswer("What must a firm keep and mark?", kept, scored, 0.9, True, followed=followed)


def test_the_rule_referred_to_opens_with_the_reference_as_the_citing_rule_writes_it():
    passages = [CITING, TARGET, OTHER]
    answer = connected(_answer(passages, [0, 1, 2], [Followed(1, "Depositor Protection 11.1  to 11.2", 2, "t")]))
    text, markers = written(answer.draft, None)
    lines = text.split("\n")
    assert lines[1] == 'Referred to by the rule above as "Depositor Protection 11.1 to 11.2":'
    assert lines[2].startswith("A firm must mark accounts") and lines[2].endswith("[2]. Market abuse is prohibited "
                                                                                  "in every market the firm trades "
                                                                                  "on [3].")
    # the markers are where the text has them, and the line cites nothing
    assert [text[at:at + 3] for at, _ in markers] == ["[1]", "[2]", "[3]"]
    parsed = parse_citations(text, ["c", "t", "o"])
    assert parsed.cited_ids == ["c", "t", "o"] and not parsed.invalid
    # the line opens the sentence that quotes the rule it introduces, so that sentence's citation covers it
    assert [s for s in parsed.sentences if "Referred to by" in s][0].rstrip().endswith("[2].")


def test_a_referring_rule_after_the_rule_it_refers_to_and_a_footnote_after_its_rule():
    passages = [TARGET, OTHER, CITING]
    answer = connected(_answer(passages, [0, 1, 2], [Followed(3, "Depositor Protection 11.1 to 11.2", 1, "t")]))
    assert answer.leads == {2: 'This rule refers to a rule above as "Depositor Protection 11.1 to 11.2":'}
    note = connected(_answer([CITING, OTHER, NOTE], [0, 1, 2], [Followed(1, "5", 3, "n")]))
    assert note.leads == {2: "Footnote 5 of a rule above:"}  # another rule comes between them


def test_no_line_without_a_link_between_quoted_rules_and_one_line_per_rule():
    passages = [CITING, TARGET, OTHER]
    plain = _answer(passages, [0, 2], [Followed(1, "Depositor Protection 11.1 to 11.2", 2, "t")])
    assert connected(plain) is plain  # the rule referred to is not quoted
    unlinked = _answer(passages, [0, 1, 2], [])
    assert connected(unlinked) is unlinked
    twice = connected(_answer(passages, [0, 1], [Followed(1, "DP\u200e 11.1", 2, "t"), Followed(1, "DP 11.2", 2, "t")]))
    assert twice.leads == {1: 'Referred to by the rule above as "DP 11.1":'}
    # a second unit of a led rule gets no line of its own
    both = replace(twice, kept=[*twice.kept, replace(twice.kept[1], unit=replace(twice.kept[1].unit, index=1))])
    assert [p.lead for p in both.draft.parts] == ["", 'Referred to by the rule above as "DP 11.1":', ""]


def test_the_pass_is_declared_last_and_on_in_the_commands():
    assert PASSES[-1].switch == "connect" and not PASSES[-1].needs_graph
    assert command_defaults()["connect"] is True and FocusedConfig().connect is False
