"""Prompts, citation parsing and the extractive composer on hand-made cases (no model weights)."""

from __future__ import annotations

import pytest

from rirag.generation import prompts
from rirag.generation.extractive import ExtractiveComposer
from rirag.generation.prompts import (
    CLOSED_BOOK,
    FEW_SHOT,
    FEW_SHOT_COT,
    NO_ANSWER,
    WORKED_EXAMPLES,
    ZERO_SHOT,
    build_messages,
    final_answer,
    passages_from_messages,
)
from rirag.text.citations import numbers_in, parse_citations, strip_citations

PASSAGES = ["An Authorised Person must keep records\nfor six years.", "The Regulator may ask for a report."]


def _split(text: str) -> list[str]:  # a deterministic splitter for the parser tests: on ". "
    parts, start = [], 0
    for i in range(len(text) - 1):
        if text[i] == "." and text[i + 1] == " ":
            parts.append(text[start:i + 1])
            start = i + 2
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


# -- prompts -------------------------------------------------------------------------------------------------------


def test_zero_shot_numbers_passages_in_order_on_one_line_each():
    msgs = build_messages("How long are records kept?", PASSAGES, ZERO_SHOT)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == prompts.SYSTEM_PROMPT
    user = msgs[1]["content"]
    assert "[1] An Authorised Person must keep records for six years." in user  # newline collapsed
    assert user.index("[1]") < user.index("[2]") < user.index("Question: How long are records kept?")
    assert passages_from_messages(msgs) == [" ".join(p.split()) for p in PASSAGES]


def test_few_shot_has_three_examples_and_one_no_answer_example():
    msgs = build_messages("Q?", PASSAGES, FEW_SHOT)
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    replies = [m["content"] for m in msgs if m["role"] == "assistant"]
    assert sum(r == NO_ANSWER for r in replies) == 1
    assert all("[" in r for r in replies if r != NO_ANSWER)  # the answering examples cite
    # the passages of the *last* user turn are the question's, not an example's
    assert passages_from_messages(msgs) == [" ".join(p.split()) for p in PASSAGES]


def test_few_shot_cot_examples_end_with_an_answer_line():
    msgs = build_messages("Q?", PASSAGES, FEW_SHOT_COT)
    assert prompts.COT_INSTRUCTION in msgs[0]["content"]
    for reply in (m["content"] for m in msgs if m["role"] == "assistant"):
        assert reply.splitlines()[-1].startswith(prompts.ANSWER_PREFIX)
        assert '"' in reply.splitlines()[0] or NO_ANSWER in reply  # reasoning quotes the passages


def test_closed_book_has_no_passages():
    msgs = build_messages("What must a bank do?", PASSAGES, CLOSED_BOOK)
    assert "Passages:" not in msgs[-1]["content"] and "keep records" not in str(msgs)
    with pytest.raises(ValueError, match="no passages"):
        passages_from_messages(msgs)


def test_unknown_strategy_is_named():
    with pytest.raises(ValueError, match="unknown prompting strategy 'cot'"):
        build_messages("Q", PASSAGES, "cot")


def test_final_answer_takes_the_last_answer_line():
    text = "Passage [1] says \"must keep\" [1].\nAnswer: first\nmore thought\nanswer: Records are kept [1]."
    assert final_answer(text, FEW_SHOT_COT) == ("Records are kept [1].", True)
    assert final_answer("no answer line here", FEW_SHOT_COT) == ("no answer line here", False)
    assert final_answer("  plain [1]. ", ZERO_SHOT) == ("plain [1].", True)


@pytest.mark.slow
def test_worked_examples_are_verbatim_training_questions(real_obliqa):
    from rirag.data.splits import split_questions

    train = {q.id: q for q in split_questions(real_obliqa, "train")}
    held_out = {q.id for s in ("validation", "test") for q in split_questions(real_obliqa, s)}
    dev = {q.id for q in real_obliqa.splits["dev"]}
    train_docs = {real_obliqa.corpus[g].document_id for q in train.values() for g in q.gold}
    for ex in WORKED_EXAMPLES:
        assert ex.question_id in train and ex.question_id in dev and ex.question_id not in held_out
        assert train[ex.question_id].text == ex.question
        for pid, text in zip(ex.passage_ids, ex.passages, strict=True):
            assert real_obliqa.corpus[pid].text == text
            assert real_obliqa.corpus[pid].document_id in train_docs
    answering = [ex for ex in WORKED_EXAMPLES if ex.answer != NO_ANSWER]
    for ex in answering:  # every answering example cites a gold passage of its question
        parsed = parse_citations(ex.answer, ex.passage_ids)
        assert set(parsed.cited_ids) <= set(train[ex.question_id].gold) and parsed.cited_ids
    no_answer = [ex for ex in WORKED_EXAMPLES if ex.answer == NO_ANSWER][0]
    assert not set(no_answer.passage_ids) & set(train[no_answer.question_id].gold)


# -- citations -----------------------------------------------------------------------------------------------------


def test_citation_forms_map_to_passage_ids():
    ids = ["a", "b", "c"]
    parsed = parse_citations("Keep records [1]. Report yearly [1, 3]. Both apply [2][3].", ids, split=_split)
    assert [(c.number, c.sentence, c.passage_id) for c in parsed.citations] == [
        (1, 0, "a"), (1, 1, "a"), (3, 1, "c"), (2, 2, "b"), (3, 2, "c")]
    assert parsed.cited_ids == ["a", "c", "b"]
    assert parsed.claims == ["Keep records.", "Report yearly.", "Both apply."]


def test_out_of_range_citation_is_recorded_invalid_not_dropped():
    parsed = parse_citations("Keep records [4]. Report [0]. Fine [2].", ["a", "b"], split=_split)
    assert [(c.number, c.valid) for c in parsed.citations] == [(4, False), (0, False), (2, True)]
    assert len(parsed.invalid) == 2 and parsed.cited_ids == ["b"]
    assert parsed.as_dict()["citations"][0] == {"n": 4, "sentence": 0, "ID": None, "valid": False}


def test_repeated_citation_counts_once_per_sentence_and_missing_gives_none():
    parsed = parse_citations("Keep records [1][1] and [1]. Nothing cited here.", ["a"], split=_split)
    assert [(c.number, c.sentence) for c in parsed.citations] == [(1, 0)]
    assert parsed.sentence_citations(1) == []
    assert parse_citations("", ["a"], split=_split).citations == []


def test_marker_after_full_stop_belongs_to_the_previous_sentence():
    parsed = parse_citations("Keep records. [2] Report yearly [1].", ["a", "b"], split=_split)
    assert parsed.sentences == ["Keep records. [2]", "Report yearly [1]."]
    assert [(c.number, c.sentence) for c in parsed.citations] == [(2, 0), (1, 1)]


def test_numbers_and_strip():
    assert numbers_in("x [1; 2] y [10]") == [1, 2, 10]
    assert strip_citations("Keep records [1, 2]. Report [3].") == "Keep records. Report."
    assert numbers_in("see section [a] and 2021") == []


def test_parse_with_the_default_punkt_splitter():
    parsed = parse_citations("An Authorised Person must keep records [1]. The Regulator may ask [2].", ["a", "b"])
    assert [c.passage_id for c in parsed.citations] == ["a", "b"] and len(parsed.sentences) == 2


# -- extractive composer -------------------------------------------------------------------------------------------


def _must(sentences):
    return ["must" in s or "shall" in s for s in sentences]


def test_extractive_keeps_obligations_in_rank_order_dedups_and_cites():
    passages = [
        "Guidance only. A firm must file a return each year.",
        "An overview sentence. A firm must file a return every year. The firm shall notify the Regulator.",
        "Nothing binding here. Must comply.",  # a must-sentence of two words: a heading, never used
    ]
    composer = ExtractiveComposer(is_obligation=_must)
    answer = composer.compose(passages)
    assert answer == ("A firm must file a return each year [1]. The firm shall notify the Regulator [2].")
    parsed = parse_citations(answer, ["p1", "p2", "p3"])
    assert [c.passage_id for c in parsed.citations] == ["p1", "p2"] and not parsed.invalid


def test_extractive_drops_leading_heading_lines_but_not_list_intros():
    from rirag.generation.extractive import passage_body

    headed = ("q)\tREGULATORY REQUIREMENTS FOR AUTHORISED PERSONS\nKey considerations for AML/CFT compliance\n"
              "Principle 6: Record keeping\nThe FSRA expects that firms must keep records.")
    assert passage_body(headed) == "The FSRA expects that firms must keep records."
    listed = "A Reporting Financial Institution may apply\n(a)\tthe due diligence procedures; or\n(b)\tnone."
    assert passage_body(listed) == listed  # a line followed by "(a) ..." introduces a list
    intro = "A PFP Operator that holds Client Assets must:\n(a)\tengage a custodian; or\n(b)\tcomply."
    assert passage_body(intro) == intro
    assert passage_body("Heading only\n\n") == "Heading only\n\n"  # all heading: kept whole
    wrapped = "Where a Person\ncarries on a Regulated Activity, it must notify the Regulator."
    assert passage_body(wrapped) == wrapped  # a hard-wrapped first line goes on in lower case: not a heading
    asked = ("HOW DOES RULE 7.2.1 INTERACT WITH OTHER DISCLOSURE OBLIGATIONS?\n"
             "The Listing Authority does not generally expect a Reporting Entity to Disclose information early.")
    assert passage_body(asked) == asked.split("\n")[1]  # a heading in capitals, question mark and all
    shout = "WARNING: A FIRM MUST NOT ACCEPT CASH FROM ANY CLIENT WHO HAS NOT BEEN IDENTIFIED UNDER THESE RULES.\nx"
    assert passage_body(shout) == shout  # more than HEADING_MAX_WORDS words: prose, even in capitals
    composer = ExtractiveComposer(is_obligation=_must)
    # without the heading rule Punkt glues the headings to the first sentence of the answer
    assert composer.compose([headed]) == "The FSRA expects that firms must keep records [1]."


def test_extractive_modal_cues_need_no_model():
    """classifier="modal-cues" (make demo on a fresh clone) keeps deontic sentences, case-insensitively, and never
    loads a model (no such folder exists)."""
    from rirag.generation.extractive import MODAL_CUES

    passages = ["Scope of the rules. Firms MUST keep records for six years.",
                "A Person may not act without a licence. The Regulator publishes guidance."]
    composer = ExtractiveComposer(classifier=MODAL_CUES)
    assert composer.compose(passages) == ("Firms MUST keep records for six years [1]. "
                                          "A Person may not act without a licence [2].")


def test_extractive_draft_keeps_offsets_and_falls_back_without_obligations():
    from rirag.generation.base import AnswerRequest
    from rirag.generation.render import render

    composer = ExtractiveComposer(is_obligation=_must)
    passages = ["First sentence. Second one. Third.", "Must-free text."]
    draft = composer.draft([AnswerRequest("Q?", passages)])[0]
    assert render(draft) == "First sentence [1]. Second one [1]."  # FALLBACK_SENTENCES = 2
    assert [(p.passage, p.cited) for p in draft.parts] == [(0, (0,)), (0, (0,))]
    assert [passages[0][p.start:p.end] for p in draft.parts] == ["First sentence.", "Second one."]


def _tiny_classifier(folder, favour: str):
    """A tiny BERT sequence classifier saved to ``folder`` whose head always predicts ``favour``; its labels are in
    the reverse of the reference order, so the composer must read id2label to get them right."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from tests.tiny_encoder import write_vocab

    vocab = write_vocab(folder)
    id2label = {0: "obligation", 1: "non-obligation"}
    config = BertConfig(vocab_size=len(vocab.read_text().split()), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=37, max_position_embeddings=128,
                        id2label=id2label, label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([5.0, -5.0] if favour == "obligation" else [-5.0, 5.0]))
    model.save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True).save_pretrained(folder)
    return str(folder)


def test_extractive_with_a_tiny_classifier_from_config(tmp_path):
    """The real loading path: a classifier folder on disk, loaded by RePASs' loader, labels read from id2label."""
    passages = [["A firm must file. It may wait a year. Then it reports."], ["A firm must file!"]]
    everything = ExtractiveComposer(_tiny_classifier(tmp_path / "yes", "obligation")).compose_many(passages)
    # every sentence is an obligation; the exact duplicate in the second list is its own item (no cross-item dedup)
    # ("Then it reports." has three words: too short to be used, whatever the classifier says)
    assert everything == ["A firm must file [1]. It may wait a year [1].", "A firm must file [1]!"]
    nothing = ExtractiveComposer(_tiny_classifier(tmp_path / "no", "non-obligation")).compose(passages[0])
    assert nothing == "A firm must file [1]. It may wait a year [1]."  # the fallback: top passage's first two
