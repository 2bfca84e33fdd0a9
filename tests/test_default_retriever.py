"""The default retriever of ask / answer / submit / the demo is the CV table's best row needing no trained model."""

from __future__ import annotations

import json
import logging
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from rirag.constants import HYBRID_ALPHA, LEARNED_FUSION_RANKER, OFFLINE_ENCODER
from rirag.errors import UsageError
from rirag.retrieval.defaults import (
    CV_RESULTS,
    CV_RESULTS_ENV_VAR,
    CV_ROWS,
    FALLBACK_RETRIEVER,
    RANKER_ENV_VAR,
    cv_row_spec,
    default_retriever,
    default_spec,
    trained_ranker,
    with_default_retriever,
)
from rirag.retrieval.registry import RETRIEVERS

REPO = Path(__file__).resolve().parents[1]


def _row(key, r10, map10=0.5, **more):
    return {"row": CV_ROWS[key], "recall@10": r10, "map@10": map10, "mrr@10": 0.5, **more}


def _table(tmp_path, *rows, model="org/encoder") -> Path:
    path = tmp_path / "retrieval_cv.json"
    path.write_text(json.dumps({"model": model, "rows": list(rows)}), encoding="utf-8")
    return path


def test_the_best_usable_row_of_the_table_is_the_default(tmp_path):
    path = _table(tmp_path, _row("bm25", 0.79), _row("rrf", 0.80), _row("rank-fusion", 0.81),
                  _row("learned-fusion", 0.90))  # a trained ranker: never the default
    spec = default_retriever(path)
    assert (spec.name, spec.model, spec.options) == ("rank-fusion", None, {})
    path = _table(tmp_path, _row("bm25", 0.79), _row("hybrid-tuned", 0.82, alpha=0.3), _row("rank-fusion", 0.81))
    spec = default_retriever(path)
    assert (spec.name, spec.model, spec.options) == ("hybrid", "org/encoder", {"alpha": 0.3})
    # ties by MAP@10; the paper's α where the row's label says so; the table's encoder
    spec = default_retriever(_table(tmp_path, _row("zero-shot", 0.8, 0.60), _row("hybrid", 0.8, 0.61)))
    assert (spec.name, spec.model, spec.options) == ("hybrid", "org/encoder", {"alpha": HYBRID_ALPHA})


def test_rows_without_what_their_retriever_needs_are_skipped(tmp_path):
    # an older table's tuned row without its α, and rows of no CLI retriever, are passed over
    path = _table(tmp_path, _row("bm25", 0.79), _row("hybrid-tuned", 0.82), {"row": "ET+CT", "recall@10": 0.9},
                  {"row": CV_ROWS["rrf"], "recall@10": None})
    assert default_retriever(path).name == "bm25"
    assert cv_row_spec(_row("hybrid-tuned", 0.8)) is None
    assert cv_row_spec(_row("zero-shot", 0.8)).model == OFFLINE_ENCODER


def test_missing_unreadable_or_useless_tables_give_the_fallback(tmp_path, monkeypatch):
    assert default_retriever(tmp_path / "absent.json").name == FALLBACK_RETRIEVER
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert default_retriever(bad).name == FALLBACK_RETRIEVER
    assert default_retriever(_table(tmp_path, _row("learned-fusion", 0.9))).name == FALLBACK_RETRIEVER
    monkeypatch.setenv(CV_RESULTS_ENV_VAR, str(_table(tmp_path, _row("bm25", 0.7))))
    assert default_retriever().name == "bm25"


def test_the_committed_table_chooses_a_cli_retriever_without_a_trained_artifact(monkeypatch):
    monkeypatch.delenv(CV_RESULTS_ENV_VAR)
    spec = default_retriever()
    assert CV_RESULTS.is_file() and CV_RESULTS == REPO / "benchmarks" / "results" / "retrieval_cv.json"
    assert spec.name in RETRIEVERS and not any(o.required for o in RETRIEVERS[spec.name].options.values())
    rows = json.loads(CV_RESULTS.read_text(encoding="utf-8"))["rows"]
    usable = [r for r in rows if cv_row_spec(r) is not None]
    best = max(usable, key=lambda r: (r["recall@10"], r["map@10"]))
    assert cv_row_spec(best).name == spec.name


def test_commands_without_retriever_take_the_default_and_keep_their_own_options(tmp_path, monkeypatch, caplog):
    from rirag.cli.answers import retriever_spec_from_args

    monkeypatch.setenv(CV_RESULTS_ENV_VAR, str(_table(tmp_path, _row("bm25", 0.8), _row("rank-fusion", 0.7))))
    monkeypatch.chdir(tmp_path)  # no trained ranker here
    args = Namespace(retriever=None, model=None, option=[("k1", 1.2)])
    with caplog.at_level(logging.INFO, logger="rirag.retrieval.defaults"):
        spec = retriever_spec_from_args(args)
    assert (spec.name, spec.options) == ("bm25", {"k1": 1.2, "xref_select": "auto"})
    assert args.retriever is None and args.option == [("k1", 1.2)]  # resolved once into a spec: args unchanged
    assert "retriever: bm25" in caplog.text and "learned-fusion" not in caplog.text
    explicit = Namespace(retriever="rank-fusion", model=None, option=[])
    assert retriever_spec_from_args(explicit).name == "rank-fusion"
    # the user's option wins over the default's
    assert with_default_retriever(None, [("alpha", 0.5)])[2][-1] == ("alpha", 0.5)


def _ranker(folder: Path, encoders: list[str]) -> Path:
    folder.mkdir(parents=True)
    (folder / "ranker.txt").write_text("tree", encoding="utf-8")
    (folder / "learned_fusion.json").write_text(json.dumps({"encoders": encoders, "candidate_depth": 100,
                                                            "vote_depth": 10, "feature_names": []}))
    return folder


def test_a_trained_ranker_is_the_default_and_the_log_says_why(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(RANKER_ENV_VAR)
    assert trained_ranker() == (None, f"no trained ranker in {LEARNED_FUSION_RANKER}; `make models` builds it")
    _ranker(tmp_path / LEARNED_FUSION_RANKER, [OFFLINE_ENCODER])
    with caplog.at_level(logging.INFO, logger="rirag.retrieval.defaults"):
        name, model, options = with_default_retriever(None, [])
    assert (name, model, dict(options)) == ("learned-fusion", None, {"ranker": LEARNED_FUSION_RANKER,
                                                                    "xref_select": "auto"})
    assert f"the trained ranker in {LEARNED_FUSION_RANKER}" in caplog.text
    # a dense model asked for is not silently ignored by the ranker: the CV row runs with it
    name, model, _ = with_default_retriever("my-encoder", [])
    assert (name, model) != ("learned-fusion", "my-encoder") and model == "my-encoder"
    assert "--model my-encoder given" in default_spec(model="my-encoder")[1]
    # a ranker whose encoder is not at hand is not the default, and the line says why
    monkeypatch.setenv(RANKER_ENV_VAR, str(_ranker(tmp_path / "other", ["artifacts/missing-encoder"])))
    spec, why = default_spec()
    assert spec.name != "learned-fusion" and "cannot run" in why and "missing-encoder" in why


def test_the_demo_defaults_to_the_same_choice(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "spaces" / "demo"))
    try:
        from backend import DemoSettings
    finally:
        sys.path.remove(str(REPO / "spaces" / "demo"))
    monkeypatch.setenv(CV_RESULTS_ENV_VAR, str(_table(tmp_path, _row("hybrid-tuned", 0.82, alpha=0.2))))
    s = DemoSettings.from_env({})
    assert (s.retriever, s.model, s.options) == ("hybrid", "org/encoder", {"alpha": 0.2, "xref_select": "auto"})
    s = DemoSettings.from_env({"RIRAG_DEMO_MODEL": "mine", "RIRAG_DEMO_RETRIEVER_OPTIONS": "depth=50"})
    assert (s.model, s.options) == ("mine", {"alpha": 0.2, "xref_select": "auto", "depth": "50"})
    assert DemoSettings.from_env({"RIRAG_DEMO_RETRIEVER": "bm25"}).retriever == "bm25"



def test_a_published_ranker_by_hub_id_is_the_default_where_it_can_be_had(tmp_path, monkeypatch):
    import huggingface_hub

    from rirag.retrieval.learned_fusion import _hub_snapshot, load_ranker_config, ranker_folder
    from rirag.validation import path_or_hub_id

    monkeypatch.chdir(tmp_path)
    published = _ranker(tmp_path / "hub-cache" / "snapshot", [OFFLINE_ENCODER])
    asked = []

    def snapshot_download(repo_id, **_):
        asked.append(repo_id)
        if repo_id != "rirag/rirag-learned-fusion":
            raise huggingface_hub.errors.RepositoryNotFoundError(f"{repo_id} not found")
        return str(published)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    _hub_snapshot.cache_clear()
    monkeypatch.setenv(RANKER_ENV_VAR, "rirag/rirag-learned-fusion")
    folder, why = trained_ranker()
    assert folder == "rirag/rirag-learned-fusion" and "the trained ranker in rirag/rirag-learned-fusion" in why
    assert ranker_folder(folder) == published and load_ranker_config(folder)["encoders"] == [OFFLINE_ENCODER]
    assert default_spec()[0].options["ranker"] == "rirag/rirag-learned-fusion"
    assert asked == ["rirag/rirag-learned-fusion"]  # resolved once a process, however often it is asked
    # a Hub id that cannot be had (offline without it in the cache, unknown) is no default, and the line says why
    monkeypatch.setenv(RANKER_ENV_VAR, "rirag/no-such-ranker")
    folder, why = trained_ranker()
    assert folder is None and "'rirag/no-such-ranker': not a folder here and not to be had from the Hub" in why
    before = list(asked)
    assert ranker_folder("artifacts/learned_fusion/x") == Path("artifacts/learned_fusion/x")
    assert asked == before  # a local path never goes to the Hub
    assert path_or_hub_id("rirag/rirag-learned-fusion") == "rirag/rirag-learned-fusion"
    with pytest.raises(UsageError, match="neither a path here nor a Hub id"):
        path_or_hub_id("no-such-folder")
