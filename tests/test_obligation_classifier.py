"""Training smoke test of train/obligation_classifier.py on a tiny BERT: weights change, the save reloads."""

import json

import pytest

from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert
from _scripts import load_script


def load_train_script(name):
    return load_script(f"train/{name}.py")


def test_binary_metrics_hand_computed():
    m = load_train_script("obligation_classifier").binary_metrics([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert m["accuracy"] == pytest.approx(0.6)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)


def test_bad_record_names_file_index_and_field(tmp_path):
    bad = tmp_path / "obl.json"
    bad.write_text(json.dumps([{"Text": "Firms must keep records.", "Obligation": True},
                               {"Text": "", "Obligation": False}]))
    with pytest.raises(ValueError, match=r"obl.json: record 1: field 'Text'"):
        load_train_script("obligation_classifier").load_records(str(bad))


def test_training_smoke_changes_weights_and_reloads(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainingArguments

    script = load_train_script("obligation_classifier")
    base = tiny_bert("obl_base", OBLIGATION_LABELS, seed=5, head_scale=1.0)
    data = [{"Text": f"Firms must keep records for {w} years.", "Obligation": True} for w in "abcdefghij"]
    data += [{"Text": f"The sky is blue on day {w}.", "Obligation": False} for w in "abcdefghij"]
    (tmp_path / "obl.json").write_text(json.dumps(data))
    out = tmp_path / "model"
    args = script.ObligationScriptArguments(data_path=str(tmp_path / "obl.json"), model_name_or_path=base,
                                            results_path=str(tmp_path / "res.json"))
    targs = TrainingArguments(output_dir=str(out), max_steps=4, per_device_train_batch_size=8, learning_rate=5e-3,
                              report_to="none", use_cpu=True, save_strategy="no", eval_strategy="no",
                              logging_steps=1, disable_tqdm=True)
    before = AutoModelForSequenceClassification.from_pretrained(base).state_dict()
    result = script.main(args, targs)
    assert {"accuracy", "f1"} <= set(json.loads((tmp_path / "res.json").read_text()))
    assert result["n_test"] == 4 and result["n_train"] == 16  # 80/20 of 20 records
    model = AutoModelForSequenceClassification.from_pretrained(out)
    after = model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before if k in after)
    assert model.config.id2label == {0: "non-obligation", 1: "obligation"}
    assert (out / "README.md").read_text().startswith("---\n")
    tok = AutoTokenizer.from_pretrained(out)
    batch = tok(["Firms must keep records.", "The sky is blue."], padding=True, return_tensors="pt")
    model.eval()
    again = AutoModelForSequenceClassification.from_pretrained(out).eval()
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, again(**batch).logits)
