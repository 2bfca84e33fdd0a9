"""The evaluate module loads offline from the local folder and agrees with the library scorer."""

import doctest
import os
from pathlib import Path

import pytest
from _scoring_fixtures import tiny_models

from rirag.scoring.repass import RePASsScorer

MODULE_DIR = str(Path(__file__).resolve().parents[1] / "evaluate_scripts" / "repass")


@pytest.fixture(scope="module")
def metric():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import evaluate

    return evaluate.load(MODULE_DIR, **tiny_models(), batch_size=4, device="cpu", show_progress=False)


def test_load_offline_and_compute_matches_library(metric):
    preds = ["Firms must keep records for six years. The sky is blue.", "", "It is not green."]
    passages = [["Firms must keep records for six years.", "Client money must be held separately."],
                ["The sky is blue."], ["It is green. Firms must report to the regulator."]]
    out = metric.compute(predictions=preds, passages=passages)
    expected = RePASsScorer(**tiny_models(), device="cpu", show_progress=False).score(preds, passages)
    assert out == expected
    assert set(out) >= {"entailment", "contradiction", "obligation_coverage", "repass", "per_item"}
    assert out["skipped"] == [1] and len(out["per_item"]["repass"]) == 3
    assert 0.0 <= out["repass"] <= 1.0


def test_single_string_passages_and_mode_override(metric):
    preds = ["Firms keep records for six years."]
    as_string = metric.compute(predictions=preds, passages=["Firms must keep records for six years."])
    as_list = metric.compute(predictions=preds, passages=[["Firms must keep records for six years."]])
    assert as_string == as_list
    paper = metric.compute(predictions=preds, passages=[["Firms must keep records for six years."]], mode="paper")
    assert paper["entailment"] == as_list["entailment"]  # E and C do not depend on the mode for one passage
    with pytest.raises(TypeError, match="unknown RePASs arguments"):
        metric.compute(predictions=preds, passages=["x."], modes="paper")


def test_length_mismatch_is_an_error(metric):
    with pytest.raises(ValueError):
        metric.compute(predictions=["a.", "b."], passages=[["x."]])


def test_module_constants_and_doctest():
    import importlib.util

    spec = importlib.util.spec_from_file_location("repass_module", os.path.join(MODULE_DIR, "repass.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "@inproceedings" in module._CITATION and "RePASs" in module._DESCRIPTION
    parser = doctest.DocTestParser()
    test = parser.get_doctest(module._KWARGS_DESCRIPTION, {"evaluate": None}, "kwargs", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 2


def test_card_front_matter_and_limitations():
    card = Path(MODULE_DIR, "README.md").read_text()
    assert card.startswith("---\n") and "0.011" in card and "mode" in card
