"""The passage-set metrics of rirag.scoring.answer_quality: precision, recall and F1 of the cited passages, the share
of answers citing every gold passage beside its ceiling (the share whose context held them all), and the counts that
show an answer citing one of three."""

from __future__ import annotations

import re

import pytest

from rirag.scoring.answer_quality import answer_quality, format_quality

# three questions over contexts of three passages: a cites both golds, b one of two, c both golds not in its context
ANSWERS = ["Both rules apply [1]. The second says how [2].", "Only the first [1].", "Something else [1]."]
CONTEXTS = [["g1", "g2", "x"], ["h1", "h2", "x"], ["x", "y", "k1"]]
GOLDS = [["g1", "g2"], ["h1", "h2"], ["k1", "k2"]]


def test_cite_all_is_reported_beside_its_ceiling():
    out = answer_quality(ANSWERS, CONTEXTS, GOLDS)
    assert out["cite_all_share"] == pytest.approx(1 / 3)  # only a
    assert out["context_all_share"] == pytest.approx(2 / 3)  # c's context lacks k2
    assert out["context_recall"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert out["cited_per_answer"] == pytest.approx(4 / 3) and out["gold_per_question"] == 2.0
    # precision 1, 1, 0; recall 1, 0.5, 0; F1 1, 2/3, 0
    assert out["gold_citation_precision"] == pytest.approx(2 / 3)
    assert out["gold_citation_recall"] == pytest.approx(0.5)
    assert out["gold_citation_f1"] == pytest.approx((1 + 2 / 3) / 3)
    assert out["per_item"]["cites_all_gold"] == [True, False, False]
    assert out["per_item"]["context_holds_all_gold"] == [True, True, False]
    table = format_quality(out)
    assert "Cite every gold passage (context holds them all)  0.3333 (0.6667)" in table
    assert re.search(r"Gold-citation recall \(context holds\)\s+0\.5000 \(0\.8333\)", table)  # beside its ceiling


def test_words_per_cited_passage_counts_only_answers_that_cite():
    out = answer_quality(["One two three four [1] [2].", "No citation here."], [["a", "b"], ["c"]])
    assert out["words_per_cited_passage"] == 2.0  # 4 words over 2 passages; the uncited answer is left out
    assert out["cite_all_share"] is None and out["context_all_share"] is None  # no gold: not known, not zero


def test_gold_of_a_questions_file_is_mapped_by_text(tiny_data_dir, tmp_path):
    """`rirag evaluate answers --questions FILE`: gold given as passage text (as ukfin_xref gives it) is mapped to the
    corpus and scored, where the corpus's own splits know nothing of these questions."""
    import json

    from rirag.scoring.answers import answer_quality_of

    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"QuestionID": "x1", "Question": "How long are client money records kept?",
                                      "Gold": [{"text": "must maintain client money records for six years"},
                                               {"text": "may require a report on client money at any time"}]}]))
    records = [{"QuestionID": "x1", "Question": "How long?", "RetrievedIDs": ["d3-p1", "d3-p2"],
                "RetrievedPassages": ["…", "…"], "Answer": "Six years [1]."}]
    without = answer_quality_of(records, str(tiny_data_dir))
    assert without["questions_with_gold"] == 0 and without["cite_all_share"] is None
    out = answer_quality_of(records, str(tiny_data_dir), str(questions))
    assert out["questions_with_gold"] == 1
    assert out["gold_citation_recall"] == 0.5 and out["cite_all_share"] == 0.0 and out["context_all_share"] == 1.0
