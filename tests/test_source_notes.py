"""A cited passage quoted through a bare source note ("[Note: Art. 109 of the CRD]") is quoted through its rule
instead (rirag.generation.focused.selection.rules_for_notes), its citation and the answer's bound unchanged."""

from __future__ import annotations

import json

import numpy as np

from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.focused.selection import NOTE_RULE_MIN_WORDS, rules_for_notes
from rirag.text.sentences import punkt_split
from rirag.text.units import Unit, is_source_note, split_units

LEAD = "A firm must keep records of client money for six years."
ITEMS = "\n".join(f"({chr(97 + i)}) keep a separate ledger of the client money held for customer group {i} and "
                  "reconcile it with the bank statement every business day" + (";" if i < 5 else ".")
                  for i in range(6))
LIST_RULE = f"A firm that holds client money must:\n{ITEMS}\n[Note: Art. 109 of the CRD]"  # a 151-word list, a note
PASSAGES = [LEAD, LIST_RULE, "[Note 2: Related provisions are in Chapter 4.]"]
QUESTION = "What records of client money must a firm keep and how must it reconcile them?"


def _scored() -> list[ScoredUnit]:
    units = [u for i, p in enumerate(PASSAGES) for u in split_units(p, i, punkt_split)]
    scores = {LEAD: 0.9}
    return [ScoredUnit(u, scores.get(u.text, 0.6 if is_source_note(u.text) else 0.3), 1.0 - 0.1 * u.passage)
            for u in units]


def _by_text(scored, start: str) -> ScoredUnit:
    return next(s for s in scored if s.unit.text.startswith(start))


def test_a_source_note_is_recognised_and_a_rule_that_mentions_one_is_not():
    assert is_source_note("[Note: Art. 109 of the CRD]")
    assert is_source_note(" [Note 1: This rule corresponds to Article 5 of the Regulation]. ")
    assert is_source_note("[note: CRD]")
    assert is_source_note("[Note Art 79(d) of the CRD]")
    assert not is_source_note("A firm must keep records [Note: Art. 109 of the CRD]")
    assert not is_source_note("[Note: Art. 109] and [Art. 110]")
    assert not is_source_note("Note: a firm must keep records.")


def test_a_note_is_quoted_through_its_passage_s_rule_cut_to_what_the_bound_leaves():
    scored = _scored()
    lead, note = _by_text(scored, LEAD), _by_text(scored, "[Note: Art. 109")
    out = rules_for_notes([lead, note], scored, PASSAGES, bound=160, first_cap=300, other_cap=100)
    assert [k.unit.passage for k in out] == [0, 1]  # the same passages cited, in the same order
    rule = out[1].unit
    assert rule.text.startswith("A firm that holds client money must:") and rule.clipped
    assert NOTE_RULE_MIN_WORDS <= rule.words <= 100  # the cap on another passage's unit
    assert LIST_RULE[rule.start:rule.end].split()[:6] == rule.text.split()[:6]  # offsets point at the quote
    tight = rules_for_notes([lead, note], scored, PASSAGES, bound=lead.unit.words + 60, first_cap=300,
                            other_cap=100)
    assert tight[1].unit.words <= 60 and sum(k.unit.words for k in tight) <= lead.unit.words + 60


def test_a_note_stays_where_no_rule_fits_or_its_passage_has_none_and_goes_where_its_rule_is_quoted():
    scored = _scored()
    lead, note, bare = (_by_text(scored, LEAD), _by_text(scored, "[Note: Art. 109"),
                        _by_text(scored, "[Note 2"))
    room = lead.unit.words + NOTE_RULE_MIN_WORDS - 1
    assert rules_for_notes([lead, note], scored, PASSAGES, room, 300, 100) == [lead, note]  # too little room
    assert rules_for_notes([lead, bare], scored, PASSAGES, 160, 300, 100) == [lead, bare]  # a passage of a note
    rule = _by_text(scored, "A firm that holds")
    assert rules_for_notes([lead, rule, note], scored, PASSAGES, 400, 300, 300) == [lead, rule]
    twin = ScoredUnit(note.unit, note.score, note.passage_score, also=(3,))  # it cites a near-duplicate: kept
    assert [k.unit.text for k in rules_for_notes([lead, rule, twin], scored, PASSAGES, 400, 300, 300)][-1] \
        == note.unit.text
    assert rules_for_notes([lead], scored, PASSAGES, 160, 300, 100) == [lead]


def test_the_answerer_quotes_a_decided_passage_through_its_rule_not_its_note(tmp_path):
    """The passage set decides the list passage; its only unit within the 100-word cap is the note. With
    ``note_rules`` (the default) the answer quotes the list's lead-in and first items instead; off, the note."""
    from rirag.generation.focused import FocusedAnswerer
    from rirag.generation.focused.config import FocusedConfig
    from rirag.generation.focused.passage_set import PASSAGE_FEATURES

    every = tmp_path / "every.json"
    every.write_text(json.dumps({"features": list(PASSAGE_FEATURES), "mean": [0.0] * len(PASSAGE_FEATURES),
                                 "scale": [1.0] * len(PASSAGE_FEATURES), "coef": [0.0] * len(PASSAGE_FEATURES),
                                 "intercept": 10.0, "threshold": 0.5, "max_passages": 2}))

    def encode(texts):
        v = np.asarray([[1.0, t.count("client money") + 0.1, t.count("reconcile") + 0.1] for t in texts])
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def answer(**switches):
        answerer = FocusedAnswerer(config=FocusedConfig(passage_set=True, passage_set_file=str(every), **switches),
                                   encode=encode, is_obligation=lambda ts: [True] * len(ts))
        return answerer.answer(QUESTION, PASSAGES[:2], [1.0, 0.9])

    on, off = answer(), answer(note_rules=False)
    assert sorted({n for k in on.kept for n in k.numbers}) == sorted({n for k in off.kept for n in k.numbers}) \
        == [1, 2]
    assert "[Note: Art. 109 of the CRD]" in off.text and "[Note" not in on.text
    assert "A firm that holds client money must:" in on.text


def test_a_rule_is_never_cut_to_its_lead_in_alone():
    """Where the room ends inside a list's first item, the cut takes the first words (lead-in and the start of the
    item) rather than the bare lead-in ending on its colon; without the switch the cut stops at the colon."""
    from rirag.text.units import clip_unit

    item = " ".join(["the firm keeps a ledger"] * 8)  # 40 words
    passage = f"The risk management processes include:\n(a) {item};\n(b) {item}."
    unit = split_units(passage, 0, punkt_split)[0]
    assert unit.is_list and unit.words > 30
    assert clip_unit(unit, passage, 30).text.endswith("include:")
    cut = clip_unit(unit, passage, 30, lead_in_alone=False)
    assert cut.clipped and cut.words == 30 and "(a) the firm keeps a ledger" in cut.text
    assert clip_unit(unit, passage, 60, lead_in_alone=False).text.endswith(";")  # the first item fits whole


def test_a_note_citing_near_duplicates_is_kept_and_a_short_rule_is_quoted_whole():
    """A note cited with other passages' notes (near-duplicates by their text) stays a note: its rule is not theirs.
    A rule shorter than the 20-word floor is quoted whole where it fits."""
    scored = _scored()
    lead, note = _by_text(scored, LEAD), _by_text(scored, "[Note: Art. 109")
    twin = ScoredUnit(note.unit, note.score, note.passage_score, also=(3,))
    assert rules_for_notes([lead, twin], scored, PASSAGES, 400, 300, 100) == [lead, twin]
    passages = [LEAD, "A firm must notify the PRA of a breach.\n[Note: Art. 109 of the CRD]"]
    units = [ScoredUnit(u, 0.9 if i == 0 else 0.5) for i, p in enumerate(passages)
             for u in split_units(p, i, punkt_split)]
    short = next(s for s in units if s.unit.text.startswith("A firm must notify"))
    bound = units[0].unit.words + short.unit.words + 1  # room for the 9-word rule, not for 20 words
    out = rules_for_notes([units[0], units[-1]], units, passages, bound, 300, 100)
    assert [k.unit.text for k in out] == [LEAD, short.unit.text]


def test_a_first_note_gives_its_place_to_its_passage_s_rule():
    """The note came first and its passage's rule is kept further on: the rule moves to the note's place, so the
    first passage (whose unit may stand alone up to the longer cap) stays first."""
    scored = _scored()
    lead, note, rule = (_by_text(scored, LEAD), _by_text(scored, "[Note: Art. 109"),
                        _by_text(scored, "A firm that holds"))
    out = rules_for_notes([note, lead, rule], scored, PASSAGES, 400, 300, 300)
    assert [k.unit.passage for k in out] == [1, 0] and out[0] is rule


def test_a_rule_cut_to_its_lead_in_alone_leaves_the_note_and_a_word_cut_drops_a_dangling_label():
    from rirag.text.units import clip_unit

    lead_in = ("The countercyclical buffer rate that a firm applies for an exposure located in that jurisdiction is "
               "determined as follows and is:")  # 21 words
    passage = (f"{lead_in}\n(a) " + " ".join(["the rate set by the designated authority"] * 3)
               + ";\n(b) the rate set by the PRA.\n[Note: Art. 140 of the CRD]")
    units = [ScoredUnit(u, 0.5) for u in split_units(passage, 1, punkt_split)]
    rule, note = units[0], units[-1]
    assert clip_unit(rule.unit, passage, 22, lead_in_alone=False).text.endswith("and is:")  # not "is: (a)"
    assert clip_unit(rule.unit, passage, 22).text.endswith("and is:")
    lead = ScoredUnit(Unit(LEAD, 0, 0, 0, len(LEAD)), 0.9)
    room = 22
    out = rules_for_notes([lead, note], [lead, *units], [LEAD, passage], lead.unit.words + room, 300, 100)
    assert out[1] is note  # only the lead-in would fit
    out = rules_for_notes([lead, note], [lead, *units], [LEAD, passage], lead.unit.words + 25, 300, 100)
    assert out[1].unit.text.startswith(lead_in) and "(a) the rate" in out[1].unit.text


def test_a_followed_note_is_quoted_through_its_rule_after_two_cited_rules_were_joined():
    """p1 refers to p2 (both cited: joined), p2 refers to p3, whose only unit within the cap is its note: following
    p2's reference quotes p3's rule, and the join recorded before following stays recorded."""
    from _scoring_fixtures import bag_of_words
    from rirag.generation.base import AnswerRequest
    from rirag.generation.focused import FocusedAnswerer
    from rirag.generation.focused.config import FocusedConfig
    from rirag.xref import records as xref_records
    from rirag.xref.graph import ReferenceGraph

    texts = {"p1": ("9.5.1", "An Authorised Person must notify the Regulator in writing of any breach of its client "
                             "money requirements, subject to Rule 9.5.2."),
             "p2": ("9.5.2", "The notification of a breach of client money requirements under Rule 9.5.1 must be "
                             "made in writing within five business days, and the records kept as Rule 9.5.3 "
                             "requires."),
             "p3": ("9.5.3", LIST_RULE)}
    graph = ReferenceGraph(passages=[xref_records.Passage(pid, "1", "General Rulebook (GEN)", n, t)
                                     for pid, (n, t) in texts.items()])
    question = ("Within how many business days must an Authorised Person notify the Regulator of a breach of client "
                "money requirements?")

    def draft(note_rules):
        answerer = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda ts: [True] * len(ts),
                                   config=FocusedConfig(follow_references=True, note_rules=note_rules))
        answerer.attach_references(graph, {pid: t for pid, (_, t) in texts.items()})
        ids = ["p1", "p2", "p3"]
        return answerer.draft([AnswerRequest(question, [texts[i][1] for i in ids], [1.0, 0.9, 0.1], ids=ids)])[0]

    on, off = draft(True), draft(False)
    assert [str(f) for f in on.followed] == ["[1] Rule 9.5.2 -> [2]", "[2] Rule 9.5.3 -> [3]"]
    assert [p.cited for p in on.parts] == [p.cited for p in off.parts] == [(0,), (1,), (2,)]
    assert is_source_note(off.parts[-1].text)
    assert on.parts[-1].text.startswith("A firm that holds client money must:")


def test_notes_are_never_near_duplicates_so_passages_sharing_a_note_are_not_cited_as_twins():
    from rirag.generation.focused.selection import near_duplicates

    assert not near_duplicates("[Note: Art. 109 of the CRD]", "[Note: Art. 110 of the CRD]", 90)
    assert not near_duplicates("[Note: CRD]", "[Note: CRD]", 90)
    assert near_duplicates(LEAD, LEAD.replace("six", "6"), 90)


def test_a_followed_rule_that_the_answer_states_already_is_cited_there_not_quoted_again():
    """p1 refers to Rule 9.5.3, a rule of the corpus (not retrieved) whose text is p2's, which the answer quotes:
    following cites 9.5.3 with p2's sentence instead of quoting the same rule twice."""
    from _scoring_fixtures import bag_of_words
    from rirag.generation.base import AnswerRequest
    from rirag.generation.focused import FocusedAnswerer
    from rirag.generation.focused.config import FocusedConfig
    from rirag.xref import records as xref_records
    from rirag.xref.graph import ReferenceGraph

    rule = "A firm must reconcile its client money ledgers with the bank statements every business day."
    texts = {"p1": ("9.5.1", "An Authorised Person must notify the Regulator in writing of any breach of its client "
                             "money requirements, subject to Rule 9.5.3."),
             "p2": ("8.2.1", rule), "p3": ("9.5.3", rule.replace("business day", "Business Day"))}
    graph = ReferenceGraph(passages=[xref_records.Passage(pid, "1", "General Rulebook (GEN)", n, t)
                                     for pid, (n, t) in texts.items()])
    answerer = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda ts: [True] * len(ts),
                               config=FocusedConfig(follow_references=True, follow_scope="corpus"))
    answerer.attach_references(graph, {pid: t for pid, (_, t) in texts.items()})
    question = "Must an Authorised Person notify the Regulator of a client money breach, and reconcile its ledgers?"
    draft = answerer.draft([AnswerRequest(question, [texts["p1"][1], texts["p2"][1]], [1.0, 0.9],
                                          ids=["p1", "p2"])])[0]
    assert [str(f) for f in draft.followed] == ["[1] Rule 9.5.3 -> [3]"]
    assert [p.cited for p in draft.parts] == [(0,), (1, 2)]  # p2's sentence cites 9.5.3 too
    assert sum("reconcile" in p.text for p in draft.parts) == 1


def test_the_sentences_of_a_split_note_are_notes_and_a_note_keeps_its_opening_when_titles_repeat():
    """"[Note: Art." ends like an in-line title; a second note quoted after a first kept its text only from the
    article number on ("213(2) of the Solvency II Directive]"), which no longer read as a note."""
    from rirag.generation.focused.selection import drop_repeated_titles

    assert is_source_note("[Note: Rule 1.3 corresponds to the first subparagraph of Article 391 of CRR.")
    assert is_source_note("The second subparagraph of Article 391 of CRR contains transitional provisions]")
    assert not is_source_note("The firm must apply the rate in [Article 391].")
    notes = ["[Note: Art. 212(1)(c) of the Solvency II Directive]", "[Note: Art. 213(2) of the Solvency II Directive]"]
    kept = [ScoredUnit(Unit(t, i, 0, 0, len(t)), 0.5) for i, t in enumerate(notes)]
    assert [k.unit.text for k in drop_repeated_titles(kept, notes, punkt_split)] == notes
