"""The in-domain NLI probe builder on a tiny corpus: rules, leakage, determinism."""

import re
from collections import Counter

import pytest

from rirag.data.obliqa import Passage
from rirag.scoring import nli_probe as P


def split_sentences(text):
    return [s.strip() + "." for s in text.split(".") if s.strip()]


SENTENCES = {
    1: ["An Authorised Person must keep adequate records of every client transaction for six years",
        "Where a Client requests it, the firm must promptly provide a written statement of its holdings",
        "A Fund Manager may appoint a custodian that is independent of the fund and its operator"],
    2: ["The Regulator shall publish the register of approved persons on its website every quarter",
        "A Reporting Entity must not issue a prospectus without the prior approval of the Regulator",
        "A Person may apply to the Regulator for a waiver if the rule is unduly burdensome for it"],
    3: ["The Insurer shall establish appropriate systems to monitor its exposure to credit risk daily",
        "An Exempt Person may carry on the activity if it notifies the Regulator in writing beforehand",
        "No person may carry on a Regulated Activity in the market unless authorised to do so"],
    4: ["A Clearing House must ensure that its default rules are published and kept up to date",
        "The Board shall review the remuneration policy of the firm at least once in every year"],
}


def corpus():
    return [Passage(id=f"d{d}", document_id=d, passage_id="1", text=". ".join(ss) + ".") for d, ss in SENTENCES.items()]


def test_negation_flips_the_first_modal_both_ways():
    assert P.negate("A firm must keep records.") == "A firm must not keep records."
    assert P.negate("A firm may appoint a custodian.") == "A firm may not appoint a custodian."
    assert P.negate("The Regulator shall publish it.") == "The Regulator shall not publish it."
    assert P.negate("A firm must not issue a prospectus.") == "A firm must issue a prospectus."
    # only the first modal changes
    assert P.negate("A firm must file what the Regulator shall prescribe.") == \
        "A firm must not file what the Regulator shall prescribe."
    with pytest.raises(ValueError, match="no modal"):
        P.negate("A firm keeps records.")


def test_candidates_skip_sentences_with_a_negator_before_the_modal():
    assert not P.is_candidate("No person may carry on a Regulated Activity in the market unless authorised.")
    assert P.is_candidate("A Person may apply to the Regulator for a waiver if the rule is burdensome.")
    assert not P.is_candidate("A firm must comply.")  # too short


def content_words(text):
    return Counter(w.lower() for w in re.findall(r"[A-Za-z]+", text))


def test_paraphrase_keeps_meaning_words_and_changes_the_surface():
    original = "Where a Client requests it, the firm must promptly provide a written statement of its holdings."
    para = P.paraphrase(original)
    assert para == "The firm must without delay provide a written statement of its holdings where a Client requests it."
    swapped = {w for k in P.SYNONYMS for w in k.split()}
    kept = content_words(original) - Counter({w: 99 for w in swapped})
    assert not kept - content_words(para)  # every word that is not a synonym-table key survives
    assert "must" in para and " not " not in f" {para} "
    trailing = "A Person may apply to the Regulator for a waiver, if the rule is unduly burdensome for it."
    assert P.paraphrase(trailing) == ("If the rule is unduly burdensome for it, a Person may apply to the Regulator "
                                      "for a waiver.")
    # without a comma the clause boundary is not certain: no reordering (and no synonym here), so no paraphrase
    assert P.paraphrase(trailing.replace(", if", " if")) is None
    assert P.paraphrase("The Board shall review the remuneration policy of the firm at least once in every "
                        "year.") is None


def test_triples_types_labels_and_unrelated_from_another_document():
    candidates = P.candidate_sentences(corpus(), split_sentences)
    doc_of = {c["sentence"]: c["document_id"] for c in candidates}
    triples = P.make_triples(candidates, per_type=3, seed=0)
    by_type = Counter(t["type"] for t in triples)
    assert by_type["identity"] == by_type["negation"] == by_type["unrelated"] == 3 and 1 <= by_type["paraphrase"] <= 3
    for t in triples:
        assert t["label"] == P.PROBE_LABELS[t["type"]]
        if t["type"] == "identity":
            assert t["hypothesis"] == t["premise"]
        elif t["type"] == "negation":
            assert P.negate(t["hypothesis"]) == t["premise"]
        elif t["type"] == "unrelated":
            assert doc_of[t["hypothesis"]] != t["document_id"]
    assert triples == P.make_triples(candidates, per_type=3, seed=0)
    assert triples != P.make_triples(candidates, per_type=3, seed=1)
    with pytest.raises(ValueError, match="two documents"):
        P.make_triples([c for c in candidates if c["document_id"] == 1], per_type=1, seed=0)


def test_probe_uses_only_held_out_documents_and_training_only_train_documents():
    docs = {"train": [1, 2], "validation": [3], "test": [4]}
    out = P.build_probe_splits(corpus(), docs, split_sentences, probe_per_type=2, train_per_type=2, seed=5)
    assert {t["document_id"] for t in out["train"]} <= {1, 2}
    assert {t["document_id"] for t in out["test"]} <= {3, 4}
    train_texts = {s for d in (1, 2) for s in split_sentences(". ".join(SENTENCES[d]) + ".")}
    assert not {t["hypothesis"] for t in out["test"]} & train_texts
    with pytest.raises(ValueError, match="both train"):
        P.build_probe_splits(corpus(), {"train": [1, 3], "validation": [3], "test": [4]}, split_sentences)


def test_accuracy_per_type():
    rows = [{"type": "negation", "label": "contradiction"}, {"type": "negation", "label": "contradiction"},
            {"type": "identity", "label": "entailment"}]
    res = P.accuracy_per_type(rows, ["contradiction", "neutral", "entailment"])
    assert res["accuracy"] == pytest.approx(2 / 3)
    assert res["per_type"] == {"negation": {"accuracy": 0.5, "n": 2}, "identity": {"accuracy": 1.0, "n": 1}}
    with pytest.raises(ValueError, match="predictions"):
        P.accuracy_per_type(rows, ["entailment"])
