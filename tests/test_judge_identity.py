"""benchmarks/judge_identity.py: every unique answer sentence (markers removed) judged against itself."""

import gzip
import json

import pytest

from _scoring_fixtures import NLI_LABELS, tiny_bert
from _scripts import load_script


def test_identity_pairs_are_judged_once_per_sentence_and_bucketed(tmp_path):
    module = load_script("benchmarks/judge_identity.py")
    answers = tmp_path / "answers.json.gz"
    records = [{"QuestionID": "a", "RetrievedPassages": ["x"],
                "Answer": "Firms must keep records [1]. Firms must report [2]."},
               {"QuestionID": "b", "RetrievedPassages": ["x"], "Answer": "Firms must keep records [3]."},
               {"QuestionID": "c", "RetrievedPassages": ["x"], "Answer": ""}]
    with gzip.open(answers, "wt", encoding="utf-8") as f:
        json.dump(records, f)
    model = tiny_bert("identity_nli", NLI_LABELS, seed=5)
    out = tmp_path / "res.json"
    res = module.main(module.Config(answers=str(answers), nli_model=model, threads=1, out=str(out)))
    assert res["sentences"] == 2  # "Firms must keep records." once, markers removed
    assert sum(b["n"] for b in res["by_length"].values()) == 2
    # each sentence is judged against itself: the means equal the tiny model's own identity-pair probabilities
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok, nli = AutoTokenizer.from_pretrained(model), AutoModelForSequenceClassification.from_pretrained(model).eval()
    pairs = ["Firms must keep records.", "Firms must report."]
    with torch.no_grad():
        probs = torch.softmax(nli(**tok(pairs, pairs, padding=True, return_tensors="pt")).logits, -1).mean(0)
    e, c = res["identity_entailment"], res["identity_contradiction"]
    assert e == pytest.approx(float(probs[1]), abs=1e-3) and c == pytest.approx(float(probs[0]), abs=1e-3)
    assert res["repass_ceiling_with_full_coverage"] == pytest.approx((e - c + 2) / 3, abs=1e-3)
    assert json.loads(out.read_text())["sentences"] == 2
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps([records[2]]))
    with pytest.raises(ValueError, match="no answer sentences"):
        module.main(module.Config(answers=str(empty), nli_model=model, threads=1, out=str(out)))
