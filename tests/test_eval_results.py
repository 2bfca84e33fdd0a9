"""A model repo's ``.eval_results/*.yaml`` carry exactly the numbers of its card's model-index."""

from __future__ import annotations

import yaml
from huggingface_hub import parse_eval_result_entries

from rirag.hub.cards import Result, model_index
from rirag.hub.eval_results import eval_result_files, write_eval_results


def _card(results: list[Result]) -> str:
    meta = {"license": "apache-2.0", "tags": ["rirag"], "model-index": model_index("m", results)}
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n# m\n"


def _result(metric: str, value: float, split: str = "validation") -> Result:
    return Result("text-retrieval", "Passage retrieval", "ObliQA (leakage-free)", "rirag/obliqa-leakage-free",
                  None, split, metric, metric.replace("_", " "), value, "benchmarks/results/retrieval.json")


def test_each_model_index_number_is_one_eval_results_file(tmp_path):
    results = [_result("recall_at_10", 0.8578), _result("map_at_10", 0.734), _result("recall_at_10", 0.9221, "test")]
    written = write_eval_results(tmp_path, _card(results), "ns/m")
    assert len(written) == 3 and all(p.startswith(".eval_results/") and p.endswith(".yaml") for p in written)
    read = {}
    for name in written:
        (entry,) = parse_eval_result_entries(yaml.safe_load((tmp_path / name).read_text(encoding="utf-8")))
        read[(entry.task_id, entry.notes.split(" (")[0])] = (entry.dataset_id, entry.value, entry.source_url)
    assert read == {("validation", "recall at 10"): ("rirag/obliqa-leakage-free", 0.8578, "https://huggingface.co/ns/m"),
                    ("validation", "map at 10"): ("rirag/obliqa-leakage-free", 0.734, "https://huggingface.co/ns/m"),
                    ("test", "recall at 10"): ("rirag/obliqa-leakage-free", 0.9221, "https://huggingface.co/ns/m")}


def test_a_card_without_model_index_gets_no_file(tmp_path):
    assert eval_result_files("---\nlicense: apache-2.0\n---\n\n# m\n", "ns/m") == {}
    assert write_eval_results(tmp_path, "no front matter", "ns/m") == [] and not any(tmp_path.iterdir())


def test_the_same_metric_of_two_tasks_is_two_files(tmp_path):
    """An encoder's card holds recall@10 on validation alone and in a hybrid: two numbers, two files, none lost."""
    from dataclasses import replace

    alone = _result("recall_at_10", 0.70)
    hybrid = replace(_result("recall_at_10", 0.85), task_name="Passage retrieval (hybrid with BM25)")
    written = write_eval_results(tmp_path, _card([alone, hybrid]), "ns/m")
    values = sorted(e.value for name in written
                    for e in parse_eval_result_entries(yaml.safe_load((tmp_path / name).read_text(encoding="utf-8"))))
    assert len(written) == 2 and values == [0.70, 0.85]
