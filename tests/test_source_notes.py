"""A cited passage quoted through a bare source note ("[Note: Art. 109 of the CRD]") is quoted through its rule
instead (rirag.generation.focused.selection.rules_for_notes), its citation and the answer's bound unchanged."""

from __future__ import annotations

import json

import numpy as np

from rirag.generation.focused.scorer import ScoredUnit
from rirag.generation.focused.selection import NOTE_RULE_MIN_WORDS, rules_for_notes
from rirag.text.sentences import punkt_split
from rirag.text.units import is_source_note, split_units

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
