"""Results keys never collide with metric names: what a trainer records about its configuration (the precision it
trained in, the batch, the machine) never overwrites a metric it measured (the obligation classifier's held-out
``precision`` was lost to ``precision: fp32``).

Every dict a trainer in ``train/`` builds is read from its source (``ast``): a ``**record(...)`` spread of a known
configuration record never repeats a key written beside it, nor a metric name; a spread of an unknown call fails the
test until it is classified here. The obligation classifier's results are checked end to end in
``tests/test_precision.py`` (``test_obligation_classifier_with_epoch_checkpoints_leaves_only_the_model``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from rirag.hub.cards import ANSWER_METRICS, CLASSIFICATION_METRICS, GOLD_CITATION_METRICS, RETRIEVAL_METRICS
from rirag.io import provenance
from rirag.training.precision import PRECISION_KEY, hardware_record
from rirag.training.runner import batch_facts

REPO = Path(__file__).resolve().parents[1]
TRAINERS = sorted((REPO / "train").glob("*.py"))

#: Every metric name a results file or a card's model-index reads.
METRIC_NAMES = (set(CLASSIFICATION_METRICS) | set(RETRIEVAL_METRICS) | set(ANSWER_METRICS)
                | set(GOLD_CITATION_METRICS) | {"loss", "eval_loss", "train_loss", "overall_3way_accuracy"})


def _record_keys() -> dict[str, set[str]]:
    """The keys of each configuration record a trainer spreads into its results."""
    args = SimpleNamespace(world_size=1, per_device_train_batch_size=2, gradient_accumulation_steps=1, max_steps=1,
                           num_train_epochs=1.0)
    return {"hardware_record": set(hardware_record("fp32")), "batch_facts": set(batch_facts(args, steps=1)),
            "provenance": set(provenance())}


#: Calls whose spread is itself a set of metrics (the focused scorer's and the passage-set decision's grid rows: a
#: setting and its metrics).
METRIC_PRODUCERS = {"evaluate_selection", "set_metrics"}


def _spreads(path: Path):
    """(line, literal keys, {spread call name: line}) of each dict display of ``path`` that spreads a call."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Dict):
            continue
        literal = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        calls = {}
        for key, value in zip(node.keys, node.values):
            if key is None and isinstance(value, ast.Call):
                func = value.func
                calls[func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "?")] = value.lineno
        if calls:
            yield node.lineno, literal, calls


def test_configuration_records_hold_no_metric_name():
    for name, keys in _record_keys().items():
        assert not keys & METRIC_NAMES, (name, keys & METRIC_NAMES)
    assert PRECISION_KEY in _record_keys()["hardware_record"] and "precision" not in _record_keys()["hardware_record"]


@pytest.mark.parametrize("path", TRAINERS, ids=lambda p: p.name)
def test_no_results_dict_lets_a_record_overwrite_a_key_beside_it(path):
    records = _record_keys()
    for line, literal, calls in _spreads(path):
        assert len(literal) == len(set(literal)), f"{path.name}:{line}: a key written twice"
        for call, call_line in calls.items():
            if call in METRIC_PRODUCERS:
                continue
            assert call in records, (f"{path.name}:{call_line}: **{call}(...) is spread into a results dict; "
                                     "classify it in tests/test_results_keys.py")
            clash = records[call] & set(literal)
            assert not clash, f"{path.name}:{line}: **{call}(...) overwrites {sorted(clash)}"


def test_the_obligation_classifier_keeps_its_four_metrics_beside_the_records():
    """The dict the obligation classifier writes holds accuracy, F1, precision and recall as literal keys, and no
    record spread into it has any of them (the bug: ``**hardware_record`` replaced ``precision``)."""
    path = REPO / "train" / "obligation_classifier.py"
    found = [(literal, calls) for _, literal, calls in _spreads(path) if "hardware_record" in calls]
    assert len(found) == 1
    literal, calls = found[0]
    assert set(CLASSIFICATION_METRICS) <= set(literal)
    for call in calls:
        assert not _record_keys()[call] & set(CLASSIFICATION_METRICS)


def test_the_judges_kept_training_keys_and_the_focused_grid_hold_no_metric():
    """The NLI judge's ``--eval_only`` keeps TRAINING_KEYS of the old results beside the new metrics; the focused
    scorer's grid rows merge a setting with its metrics: neither side may carry the other's names."""
    from _scripts import load_script

    judge = load_script("train/nli_judge.py", "nli_judge_keys")
    assert not set(judge.TRAINING_KEYS) & (METRIC_NAMES - {"train_loss"})
    assert PRECISION_KEY in judge.TRAINING_KEYS and "precision" not in judge.TRAINING_KEYS
    focused = load_script("train/focused_scorer.py", "focused_scorer_keys")
    args = focused.FocusedScorerArguments(gate_weight_grid="1", gate_margin_grid="0.1", gate_max_passages_grid="3",
                                          gate_keep_ratio_grid="0.5")
    setting_keys = {k for s in focused.selection_settings(args) for k in s}
    metric_keys = {"gold_citation_precision", "gold_citation_recall", "words_median", "words_p95", "words_max",
                   "gold_below_rank1_cited", "questions"}
    assert not setting_keys & metric_keys
