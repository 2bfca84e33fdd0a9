"""Tiny fixtures whose rendered answers (focused and extractive) are frozen in tests/fixtures/rendering_golden.json:
the text and the record's citations each answerer produced before the answerers returned drafts (issue 32, item 4).
Regenerate only on purpose: ``python tests/_rendering_cases.py > tests/fixtures/rendering_golden.json``."""

from __future__ import annotations

import json

FUND = [
    "A Fund Manager must keep records of every transaction for six years. Records must be kept in English. "
    "The records must be available to the Regulator on request.",
    "A Fund Manager must pay the annual fee by 31 January. A licence may be withdrawn for unpaid fees. "
    "A Fund Manager must notify the Regulator within 10 business days of any change of its auditor.",
]
RULE = "A Fund Manager must notify the Regulator within 10 business days of any change of its auditor."
HEADED = ("RECORDS\nA Fund Manager must keep records for six years.\n(1)\tIt must keep—\n(a)\tledgers; and\n"
          "(b)\tinvoices;\nfor the Regulator.\nThe Regulator may inspect them at any time.")
INSURER = "An Insurer must hold base capital in the form of paid up ordinary shares and general reserves."

#: (question, passages, retrieval scores, focused config)
CASES = [
    ("Within how many business days must a Fund Manager notify the Regulator of a change of its auditor?",
     FUND, [1.0, 0.9], {}),
    ("Within how many business days must a Fund Manager notify the Regulator of a change of its auditor?",
     [FUND[0], f"{RULE} The notice must be in writing.", f"{RULE} The notice must be in writing."], [0.9, 1.0, 0.95],
     {"passage_margin": 1.0, "max_passages": 3, "passage_weight": 0.2, "keep_ratio": 1.01, "min_score": 0.0,
      "max_words": 200}),
    ("What must a Fund Manager publish about redemptions of Units?", [INSURER], [1.0], {}),
    ("What records must a Fund Manager keep, and what are the consequences of not keeping them?",
     [HEADED, FUND[0]], [1.0, 0.7], {}),
    ("Who must keep ledgers and for how long?", [HEADED, FUND[1], INSURER], [0.8, 0.75, 0.2],
     {"max_words": 1000, "keep_ratio": 0.0, "min_score": 0.0}),
    ("What is required?", ["HEADING ONLY\nPART 2"], [1.0], {}),
    ("Within how many business days must a Fund Manager notify the Regulator of a change of its auditor, and what "
     "are the consequences of a late notice?", [HEADED, FUND[1], FUND[0]], [1.0, 0.9, 0.8], {}),
    ("What are examples of records a Fund Manager must keep for six years, and who may inspect them?",
     [HEADED, FUND[1], FUND[0]], [1.0, 0.9, 0.8], {}),
]


def focused(config: dict):
    from rirag.generation.focused import FocusedAnswerer, FocusedConfig
    from tests.test_focused import bag_of_words, no_obligations

    # the missing-part sentences on (off by default since issue 63): the golden answers were written with them
    return FocusedAnswerer(encode=bag_of_words, is_obligation=no_obligations,
                           config=FocusedConfig(**{"say_missing": True, **config}))


def extractive():
    from rirag.generation.extractive import MODAL_CUES, ExtractiveComposer

    return ExtractiveComposer(classifier=MODAL_CUES)


def records(generator, question: str, passages: list[str], scores: list[float]) -> dict:
    """The answer record ``answer_items`` writes for one case (text, citations, warnings)."""
    from rirag.generation.pipeline import RetrievedPassage, answer_items

    given = [RetrievedPassage(f"p{i}", p, s) for i, (p, s) in enumerate(zip(passages, scores))]
    record = answer_items([("q", question, given)], generator)[0].to_record()
    return {k: record.get(k) for k in ("Answer", "Citations", "Warnings")}


def rendered() -> list[dict]:
    return [{"focused": records(focused(config), q, ps, scores), "extractive": records(extractive(), q, ps, scores)}
            for q, ps, scores, config in CASES]


if __name__ == "__main__":
    print(json.dumps(rendered(), indent=1, ensure_ascii=False))
