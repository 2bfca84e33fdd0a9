"""Say what is missing: the question's parts, the sentence for each part no given or cited passage states (off by
default, ``--say-missing``), and the metrics."""

from __future__ import annotations

from dataclasses import replace

from rirag.scoring.answer_quality import answer_quality, broken_units, gold_below_rank1
from rirag.text.missing_parts import (
    MISSING_PREFIX,
    asked_parts,
    has_missing_statement,
    missing_parts,
    stated_kinds,
    statement,
)


def test_parts_are_read_from_the_question():
    kinds = [p.kind for p in asked_parts("Could you provide examples of the consequences of failing to report, and "
                                         "within what timeframe must the report be made?")]
    assert kinds == ["examples", "consequences", "when"]
    assert asked_parts("Must an Authorised Person keep records of client orders?") == []


def test_a_part_is_missing_only_when_no_unit_states_it():
    question = "What are the consequences if a Fund Manager fails to notify the Regulator?"
    silent = ["A Fund Manager must notify the Regulator of any change of its auditor."]
    stating = silent + ["A Fund Manager that fails to do so may be liable to a financial penalty."]
    assert [p.kind for p in missing_parts(question, silent)] == ["consequences"]
    assert missing_parts(question, stating) == []
    days = "How many days' notice must be given?"
    assert missing_parts(days, ["Notice must be given at least 10 business days before the change."]) == []
    assert [p.kind for p in missing_parts(days, ["Notice must be given in writing under Rule 9.5.2."])] == ["threshold"]


def test_parts_phrased_as_asks_are_read_and_premises_are_not():
    def kinds(question):
        return [p.kind for p in asked_parts(question)]

    assert kinds("What is the expected timeline for a Representative Office to report a breach?") == ["when"]
    assert kinds("Under what condition would a Designated Officer be liable?") == ["circumstances"]
    assert kinds("Can you outline the key elements that must be included in an Outsourcing Agreement?") == ["contents"]
    assert kinds("What might be the outcome for a Representative Office if it fails to comply?") == ["consequences"]
    # a threshold named as the question's premise is not asked for; one asked for is
    assert kinds("If a stakeholder plans to exceed the control threshold, what must they do beforehand?") == []
    assert kinds("What is the threshold for a Large Exposure?") == ["threshold"]


def test_kind_specific_evidence_decides_stated():
    contents = "What specific information must be provided to the Regulator on a dismissal?"
    assert missing_parts(contents, ["A statement of the reasons for the dismissal must be given to the Regulator."]) \
        == []
    silent = ["An Approved Person may be dismissed by the Authorised Person."]
    assert [p.kind for p in missing_parts(contents, silent)] == ["contents"]
    when = "Within what period must the notice be given?"
    assert missing_parts(when, ["The notice must be given within 14 days of the change."]) == []
    assert [p.kind for p in missing_parts(when, ["The notice must be given in writing."])] == ["when"]
    # what follows a failure is a consequence even without a penalty: the method must stop, the PRA may challenge
    happens = "What happens if the institution does not meet the conditions of Article 273a(2)?"
    for stating in ("An institution shall cease to calculate the exposure values in accordance with Section 5.",
                    "The PRA may challenge the appropriateness of a zero capital requirement for such risk."):
        assert missing_parts(happens, [stating]) == [], stating
    assert [p.kind for p in missing_parts(happens, ["An institution may use the method of Section 5."])] \
        == ["consequences"]
    # a period in words, in hours or weeks, states when ("within twelve hours from the point of a request")
    for stating in ("The details must be made available within twelve hours of a request.",
                    "The firm must notify the PRA twenty-one days before the change.",
                    "A report is due 6 weeks after the year end."):
        assert missing_parts(when, [stating]) == [], stating


def test_the_sentence_names_its_part_and_is_read_back():
    answer = ("A Fund Manager must notify the Regulator [1]. " + statement(asked_parts("Give examples")[0]))
    assert answer.endswith(f"{MISSING_PREFIX} examples.")
    assert stated_kinds(answer) == ["examples"] and has_missing_statement(answer)
    assert not has_missing_statement("A Fund Manager must notify the Regulator [1].")
    assert broken_units(answer) == 0  # the uncited sentence is not an answer unit cut from a list


def test_the_focused_answer_says_what_its_units_leave_out():
    from tests.test_focused import answerer

    passages = ["A Fund Manager must notify the Regulator within 10 business days of any change of its auditor."]
    result = answerer(say_missing=True).answer("What are the consequences if a Fund Manager does not notify the "
                                               "Regulator of a change of its auditor?", passages, [1.0])
    assert result.addressed and [p.kind for p in result.missing] == ["consequences"]
    assert result.text.endswith("auditor [1]. The retrieved provisions do not state the consequences.")
    quiet = answerer().answer(result.question, passages, [1.0])  # off by default (issue 63)
    assert MISSING_PREFIX not in quiet.text and not quiet.missing


def test_recall_metrics():
    ids = [["g", "x"], ["x", "g"], ["x", "g"], ["g"]]
    golds = [["g"], ["g"], ["g"], ["g"]]
    answers = ["Rule [1].", "Rule [1]. Other rule [2].", f"Rule [1]. {MISSING_PREFIX} examples.", "Rule [1]."]
    result = answer_quality(answers, ids, golds)
    assert result["cites_two_or_more"] == 0.25
    assert result["gold_below_rank1_questions"] == 2 and result["gold_below_rank1_cited"] == 0.5
    assert result["missing_part_rate"] == 0.25
    assert gold_below_rank1(["g"], ["g", "x"], ["g"]) is None


def test_a_bare_including_is_no_example():
    examples = "Could you give examples of conflicts of interest?"
    assert [p.kind for p in missing_parts(examples, ["Conflicts arise in many cases, including remuneration."])] \
        == ["examples"]
    assert missing_parts(examples, ["Conflicts arise, for example, where staff trade for themselves."]) == []


def test_an_unless_clause_states_the_condition():
    question = "Under what condition would an Offer of Islamic Securities be exempt from this chapter?"
    assert missing_parts(question, ["This chapter applies to any Person who Offers Islamic Securities in the ADGM, "
                                    "unless the Offer is an Exempt Offer."]) == []
    assert [p.kind for p in missing_parts(question, ["This chapter applies to any Person who Offers Islamic "
                                                     "Securities in the ADGM."])] == ["circumstances"]


def test_the_flag_is_scored_against_questions_whose_passages_state_none_of_their_parts():
    from _scripts import load_script

    module = load_script("benchmarks/missing_parts_eval.py")
    records = [{"QuestionID": q, "parts": [{"stated": s} for s in stated]}
               for q, stated in (("a", [False]), ("b", [False, True]), ("c", [False, False]), ("d", [True]))]
    answerability = {"a": 0.2, "b": 0.3, "c": 0.9, "d": 0.95}
    low = module.score_flag(records, answerability, 0.5)  # flags a (none stated) and b (one part stated)
    assert (low["not_addressed"], low["flagged"], low["right"]) == (2, 2, 1)
    assert low["precision"] == 0.5 and low["recall"] == 0.5
    high = module.score_flag(records, answerability, 0.99)  # flags all: every not-addressed one is caught
    assert high["recall"] == 1.0 and high["precision"] == 0.5
    assert module.score_flag(records, answerability, 0.1)["precision"] is None


#: The PRA outsourcing guidance (SS2/21, 5.14) as `rirag data ingest` reads it, cut to its first three sentences.
OUTSOURCING = ("Notifications 2.3(1)(e) requires all PRA-regulated firms, including credit unions and NDFs, to notify "
               "the PRA when 'entering, or significantly changing a material outsourcing arrangement'. The PRA expects "
               "these notifications to be made before entering into the outsourcing arrangement. The PRA also expects "
               "firms to submit these notifications before an outsourcing arrangement that was not material becomes "
               "material.")
OUTSOURCING_QUESTION = "When must a firm notify the PRA of a material outsourcing arrangement?"


def test_no_missing_part_line_for_a_part_the_cited_rule_states():
    """Issue 63: 'do not state when or how often' was said beside a cited rule saying 'before entering into the
    outsourcing arrangement'."""
    assert [p.kind for p in asked_parts(OUTSOURCING_QUESTION)] == ["when"]
    assert missing_parts(OUTSOURCING_QUESTION, [OUTSOURCING]) == []
    assert [p.kind for p in missing_parts(OUTSOURCING_QUESTION, ["Firms must notify the PRA in writing."])] == ["when"]
    from tests.test_focused import answerer

    result = answerer(say_missing=True, answerable_threshold=0.0).answer(OUTSOURCING_QUESTION, [OUTSOURCING], [1.0])
    assert result.addressed and result.kept and result.missing == []
    assert MISSING_PREFIX not in result.text


def test_a_part_a_followed_passage_states_is_not_said_missing():
    """The guard after following: a passage added to the answer (outside the given ones the part was checked
    against) that states the part takes its sentence away; a kept unit that does not state it leaves it."""
    from rirag.generation.focused.answer import Added, unsaid_where_cited
    from tests.test_focused import answerer

    silent = ["Firms must notify the PRA of a material outsourcing arrangement."]
    said = answerer(say_missing=True, answerable_threshold=0.0).answer(OUTSOURCING_QUESTION, silent, [1.0])
    assert [p.kind for p in said.missing] == ["when"]
    assert unsaid_where_cited(said) is said
    followed = replace(said, added=[Added("ss2-21-5.14", OUTSOURCING)])
    assert unsaid_where_cited(followed).missing == []
    assert MISSING_PREFIX not in unsaid_where_cited(followed).text


def test_the_learned_decision_is_trained_on_one_block_and_says_what_the_evidence_does_not_state():
    from _scripts import load_script

    module = load_script("benchmarks/missing_parts_eval.py")

    def record(q, text, kind):
        return {"QuestionID": q, "Question": text, "parts": [{"kind": kind, "stated": False, "borderline": False}]}

    topics = ("conflicts", "breaches", "controls", "records")
    train = [record(f"e{i}", f"Could you give examples of {t}?", "examples") for i, t in enumerate(topics)] \
        + [record(f"c{i}", f"What are the consequences of {t}?", "consequences") for i, t in enumerate(topics)]
    test = [record("t1", "Could you give examples of conflicts of interest?", "examples"),
            record("t2", "Could you give examples of good records?", "examples")]
    answered = module.Answered({}, {}, {"t1": True, "t2": True}, {"t1": [], "t2": ["For example, ledgers."]}, {}, 0.5)
    setting = {"features": "tfidf", "C": 10.0, "threshold": 0.5, "evidence": "cues"}
    said = module.learned_said(train, test, answered, setting)
    assert said == {"t1": ["examples"], "t2": []}  # t2's passage gives an example: not said
    assert module.score(test, said)["precision"] == 1.0
