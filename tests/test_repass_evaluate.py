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


def test_module_constants_and_doctest(metric, monkeypatch):
    """The module's docstring example runs as written (``import evaluate`` included): ``evaluate.load`` of the
    published id, here answered by the tiny models."""
    import sys
    import types

    module = sys.modules[type(metric).__module__]
    assert "@inproceedings" in module._CITATION and "RePASs" in module._DESCRIPTION
    parser = doctest.DocTestParser()
    loads = []
    stub = types.SimpleNamespace(load=lambda name, **kwargs: loads.append((name, kwargs)) or metric)
    monkeypatch.setitem(sys.modules, "evaluate", stub)  # the example's own `import evaluate` gets the stub
    test = parser.get_doctest(module._KWARGS_DESCRIPTION, {"evaluate": stub}, "kwargs", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 3
    assert loads == [("rirag/repass", {"nli_model": "rirag/rirag-nli-judge", "coverage_model": "rirag/rirag-nli-judge",
                                       "obligation_model": "rirag/rirag-obligation-classifier"})]


def test_card_front_matter_and_limitations():
    card = Path(MODULE_DIR, "README.md").read_text()
    assert card.startswith("---\n") and "0.011" in card and "mode" in card


PASSAGE_A = "Firms must keep records for six years. The sky is blue."
PASSAGE_B = "Client money must be held separately. It is green."


def _library(preds, passages):
    return RePASsScorer(**tiny_models(), device="cpu", show_progress=False).score(preds, passages)


def test_none_answer_first_or_later_is_skipped_with_its_index(metric):
    preds = [None, "Firms must keep records for six years.", None]
    out = metric.compute(predictions=preds, passages=[PASSAGE_A, [PASSAGE_A], [PASSAGE_B]])
    assert out["skipped"] == [0, 2] and out["n_scored"] == 1
    assert out["per_item"]["repass"][0] is None and out["per_item"]["repass"][2] is None
    assert out["repass"] == _library(["Firms must keep records for six years."], [[PASSAGE_A]])["repass"]


def test_non_string_items_are_type_errors_naming_the_index(metric):
    with pytest.raises(TypeError, match=r"predictions\[1\] must be a string"):
        metric.compute(predictions=["Firms keep records.", 7], passages=[PASSAGE_A, PASSAGE_A])
    with pytest.raises(TypeError, match=r"passages\[1\] must be a string or a list"):
        metric.compute(predictions=["a.", "b."], passages=[PASSAGE_A, {"text": PASSAGE_A}])
    with pytest.raises(TypeError, match=r"passages\[0\]\[1\] must be a string"):
        metric.compute(predictions=["a."], passages=[[PASSAGE_A, 3]])
    # the metric still works after the errors
    assert metric.compute(predictions=["Firms keep records."], passages=[PASSAGE_A])["n_scored"] == 1


@pytest.mark.parametrize("order", ["list-then-string", "string-then-list"])
def test_mixed_passage_formats_are_normalised_item_by_item(metric, order):
    preds = ["Firms must keep records for six years.", "Client money must be held separately."]
    passages = ([[PASSAGE_A, PASSAGE_B], PASSAGE_B] if order == "list-then-string"
                else [PASSAGE_A, [PASSAGE_B, PASSAGE_A]])
    out = metric.compute(predictions=preds, passages=passages)
    as_lists = [p if isinstance(p, list) else [p] for p in passages]
    assert out["per_item"] == _library(preds, as_lists)["per_item"]


def test_bare_string_call_then_valid_call(metric):
    one = metric.compute(predictions="Firms must keep records for six years.", passages=[PASSAGE_A, PASSAGE_B])
    assert one["n_scored"] == 1
    assert one["per_item"] == _library(["Firms must keep records for six years."], [[PASSAGE_A, PASSAGE_B]])["per_item"]
    again = metric.compute(predictions=["Firms must keep records for six years.", "It is green."],
                           passages=[[PASSAGE_A], PASSAGE_B])
    assert again["n_scored"] == 2


def test_add_batch_then_compute(metric):
    metric.add_batch(predictions=[None, "Firms must keep records for six years."], passages=[PASSAGE_A, [PASSAGE_A]])
    metric.add(prediction="It is green.", passages=PASSAGE_B)
    out = metric.compute()
    assert out["skipped"] == [0] and out["n_scored"] == 2


def test_load_by_relative_path_offline(monkeypatch):
    import evaluate

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(Path(MODULE_DIR).parents[1])
    module = evaluate.load("evaluate_scripts/repass", **tiny_models(), device="cpu", show_progress=False)
    out = module.compute(predictions=["Firms must keep records for six years."], passages=[PASSAGE_A])
    assert out["n_scored"] == 1 and 0.0 <= out["repass"] <= 1.0


def test_card_front_matter_is_what_the_evaluate_space_template_expects():
    import yaml

    card = Path(MODULE_DIR, "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n")[1])
    # sdk_version is not in the source card: assembling the Space writes the manifest's space_sdk_version into it
    # (rirag.hub.entry_cards.with_sdk_version), one source for the Gradio every Space pins
    assert {"title", "emoji", "colorFrom", "colorTo", "sdk", "app_file", "pinned", "tags", "description"} <= set(meta)
    assert "sdk_version" not in meta
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and meta["pinned"] is False
    assert meta["tags"] == ["evaluate", "metric"]
    # the app is today's Gradio (gr.Interface): evaluate's launch_gradio_widget needs Gradio 3, which no longer
    # starts; it loads its metric by the script's own name, never by its folder's (on a Space that folder is `app`)
    app = Path(MODULE_DIR, "app.py").read_text(encoding="utf-8")
    assert "from evaluate.utils import launch_gradio_widget" not in app and "gr.Interface(" in app
    assert 'evaluate.load(os.path.join(HERE, "repass.py")' in app
    # the corrected statements are there, the false ones gone
    assert "IndexError" in card and "position_biased_input=False" in card and "LABEL_1" in card
    assert "0.309 / 0.318" in card and "E 0.77" not in card
    assert "loads the obligation classifier but never calls it" not in card and "October 2024" in card


def test_a_refused_batch_keeps_the_batches_added_before_it(metric):
    """A batch is validated before evaluate stores anything: the refused one raises, the earlier ones stay."""
    metric.add_batch(predictions=["Firms must keep records for six years."], passages=[PASSAGE_A])
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        metric.add_batch(predictions=[7], passages=[PASSAGE_B])
    metric.add_batch(predictions=["It is green."], passages=[[PASSAGE_B]])  # the other passage form, same store
    out = metric.compute()
    assert out["n_scored"] == 2 and out["skipped"] == []
    assert out["per_item"] == _library(["Firms must keep records for six years.", "It is green."],
                                       [[PASSAGE_A], [PASSAGE_B]])["per_item"]
