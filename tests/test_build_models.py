"""make models (rirag.training.plan): dependency order, skip when current, stale after a recipe or upstream change,
failures stop what depends on them, the table; fake stage commands (no training). Also: the real stage list matches
the recipes and the scripts it names."""

import json
import os
import shlex
from pathlib import Path

import pytest
import yaml

from _scripts import load_script
from rirag import models
from rirag.training import plan as bm

REPO = Path(__file__).resolve().parents[1]


def fake(name, needs=(), fail=False, minutes=1.0):
    """A stage whose command writes artifacts/<name>/config.json (recording its recipe's text), or fails."""
    body = ("import sys; sys.exit('boom: no data')" if fail else
            f"import os; os.makedirs('artifacts/{name}', exist_ok=True); "
            f"open('artifacts/{name}/config.json', 'w').write(open('recipes/{name}.yaml').read())")
    return models.Stage(name, f"artifacts/{name}", "config.json",
                    f"python -c {shlex.quote(body)} --config recipes/{name}.yaml", minutes, tuple(needs))


@pytest.fixture
def root(tmp_path):
    (tmp_path / "recipes").mkdir()
    for name in ("a", "b", "c", "d"):
        (tmp_path / "recipes" / f"{name}.yaml").write_text(f"lr: 1\nname: {name}\n")
    return tmp_path


def statuses(rows):
    return {r.stage.name: r.status for r in rows}


def test_build_skips_current_and_rebuilds_stale_with_dependents(root):
    stages = [fake("a"), fake("b", ["a"]), fake("c")]
    assert statuses(bm.build(stages, root, dry_run=True, show_progress=False)) == {
        "a": "would build (missing)", "b": "would build (missing)", "c": "would build (missing)"}
    assert not (root / "artifacts").exists()  # a dry run runs nothing

    first = bm.build(stages, root, show_progress=False)
    assert statuses(first) == {"a": "built", "b": "built", "c": "built"}
    assert all(r.minutes is not None for r in first)
    assert (root / "artifacts/.build/b.json").is_file() and (root / "artifacts/logs/models/a.log").is_file()
    assert sorted(os.listdir(root / "artifacts/a")) == ["config.json"]  # the stamp is not inside the artifact

    mtime = (root / "artifacts/c/config.json").stat().st_mtime_ns
    assert statuses(bm.build(stages, root, show_progress=False)) == {"a": "current", "b": "current", "c": "current"}
    assert (root / "artifacts/c/config.json").stat().st_mtime_ns == mtime  # not rerun

    # a changed recipe makes its artifact stale; what needs it is rebuilt too, the rest stays
    (root / "recipes/a.yaml").write_text("lr: 2\nname: a\n")
    assert statuses(bm.build(stages, root, dry_run=True, show_progress=False)) == {
        "a": "would build (stale)", "b": "would build (current)", "c": "current"}
    rows = bm.build(stages, root, show_progress=False)
    assert statuses(rows) == {"a": "built", "b": "built", "c": "current"}
    assert (root / "artifacts/a/config.json").read_text().startswith("lr: 2")

    # a deleted artifact is missing again; --rebuild retrains a current one
    import shutil

    shutil.rmtree(root / "artifacts/c")
    assert statuses(bm.build(stages, root, only=["c"], dry_run=True))["c"] == "would build (missing)"
    assert statuses(bm.build(stages, root, rebuild=["a"], dry_run=True, show_progress=False)) == {
        "a": "would build (current)", "b": "would build (current)", "c": "would build (missing)"}


def test_unstamped_artifact_is_kept_and_only_adds_what_is_needed(root):
    stages = [fake("a"), fake("b", ["a"]), fake("c")]
    (root / "artifacts/a").mkdir(parents=True)
    (root / "artifacts/a/config.json").write_text("{}")  # trained by hand, before make models
    rows = bm.build(stages, root, only=["b"], show_progress=False)
    assert statuses(rows) == {"a": "present (no stamp)", "b": "built"}  # c not selected; a not retrained
    assert (root / "artifacts/a/config.json").read_text() == "{}"
    with pytest.raises(ValueError, match="unknown stage.*nope"):
        bm.build(stages, root, only=["nope"])
    with pytest.raises(ValueError, match="b needs a"):
        bm.check_order([fake("b", ["a"]), fake("a")])


def test_a_failure_blocks_what_needs_it_and_the_table_says_so(root):
    stages = [fake("a", fail=True), fake("b", ["a"]), fake("c")]
    rows = bm.build(stages, root, show_progress=False)
    assert statuses(rows) == {"a": "failed", "b": "not run", "c": "built"}
    assert bm.failed(rows)
    table = bm.format_table(rows).splitlines()
    assert table[0] == "| artifact | status | minutes | command |"
    assert len(table) == 2 + 3
    assert "| artifacts/a | failed: exit 1; boom: no data (log" in table[2]
    assert "| artifacts/b | not run: needs a |  |" in table[3]
    assert table[4].startswith("| artifacts/c | built | ") and "`python -c " in table[4]
    # the failed stage is not stamped, so the next run tries it again
    assert not (root / "artifacts/.build/a.json").exists()
    assert statuses(bm.build(stages, root, dry_run=True))["a"] == "would build (missing)"


def test_dry_run_table_shows_estimates(root):
    rows = bm.build([fake("a", minutes=12.5)], root, dry_run=True)
    assert "| artifacts/a | would build (missing) | ~12.5 |" in bm.format_table(rows)


def test_script_prints_the_table_and_exit_codes(root, capsys, monkeypatch):
    script = load_script("scripts/models.py")
    monkeypatch.setattr(script, "STAGES", (fake("a"), fake("b", ["a"])))
    assert script.main(script.parse_args(["--root", str(root)])) == 0
    assert capsys.readouterr().out.count("| built |") == 2
    assert script.main(script.parse_args(["--root", str(root), "--dry-run"])) == 0
    assert capsys.readouterr().out.count("| current |") == 2
    assert script.main(script.parse_args(["--root", str(root), "--only", "zzz"])) == 2
    record = root / "build.json"
    assert script.main(script.parse_args(["--root", str(root), "--record", str(record)])) == 0
    data = json.loads(record.read_text())
    assert [(r["stage"], r["status"]) for r in data["rows"]] == [("a", "current"), ("b", "current")]
    assert all(r["minutes"] is not None for r in data["rows"])  # the minutes the first build measured
    assert data["cpu_cores"] == os.cpu_count() and data["cpu_capability"]


def test_real_stages_match_recipes_scripts_and_hints():
    bm.check_order(models.STAGES)
    names = [s.name for s in models.STAGES]
    assert len(names) == len(set(names))
    for kind in ("obligation-classifier", "nli-judge", "et-train", "et-ct-train", "ct-train", "learned-fusion-train",
                 "raft"):
        assert kind in names
    for stage in models.STAGES:
        argv = bm.argv_of(stage.command)
        script = next(w for w in argv if w.startswith("train/"))
        assert (REPO / script).is_file(), stage.command
        for path in bm.command_files(stage.command):
            assert (REPO / path).is_file(), path
        recipe = yaml.safe_load((REPO / bm.command_files(stage.command)[-1]).read_text())
        words = shlex.split(stage.command)
        out = words[words.index("--output_dir") + 1] if "--output_dir" in words else recipe["output_dir"]
        assert os.path.normpath(out) == os.path.normpath(stage.artifact), stage.name  # the command writes there
        hint = models.build_hint(stage.artifact + "/")
        assert "`make models`" in hint and stage.command in hint
    assert models.build_hint("artifacts/something-else") is None


def test_missing_artifact_error_names_it_make_models_and_its_trainer(tmp_path, monkeypatch):
    from rirag.scoring.constants import TRAIN_COMMANDS
    from rirag.scoring.models import MissingModelError, load_classifier, missing_model_message

    monkeypatch.chdir(tmp_path)  # a fresh clone: no artifacts/
    with pytest.raises(MissingModelError) as err:
        load_classifier("artifacts/obligation_classifier")
    message = str(err.value)
    assert "\n" not in message and "'artifacts/obligation_classifier' does not exist" in message
    assert "`make models`" in message and "make models ONLY=obligation-classifier" in message
    assert TRAIN_COMMANDS["artifacts/obligation_classifier"] in message
    encoder = missing_model_message("artifacts/contrastive_tuning/minilm-et-ct-train")
    assert "make models ONLY=et-ct-train" in encoder and "train/contrastive_tuning.py" in encoder
    assert "make models" not in missing_model_message("artifacts/mine")  # not one of ours: no false promise


def test_trainer_estimate_is_read_from_the_stage_log(tmp_path, caplog):
    import logging

    from transformers import TrainerControl, TrainerState

    from rirag.training.runner import run_estimate

    log = tmp_path / "x.log"
    assert bm.trainer_estimate(log) is None
    caplog.set_level(logging.INFO, "rirag.training.runner")
    now = [0.0]
    callback = run_estimate(measure_steps=5, what="NLI judge", clock=lambda: now[0])  # the line a trainer logs
    state, control = TrainerState(max_steps=3143), TrainerControl()
    callback.on_train_begin(None, state, control)
    for step in range(1, 6):
        now[0] += 4.0
        state.global_step = step
        callback.on_step_end(None, state, control)
    log.write_text(caplog.text + "step 6\n")
    assert bm.trainer_estimate(log) == pytest.approx(4.0 * 3143 / 60, abs=0.05)


def test_cli_check_of_a_missing_artifact_names_make_models(tmp_path, monkeypatch):
    from rirag.errors import UsageError
    from rirag.models import model_available

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as err:
        model_available("artifacts/nli_judge", "--nli-model")
    assert "\n" not in str(err.value) and "--nli-model artifacts/nli_judge: folder not found" in str(err.value)
    assert "`make models` builds it" in str(err.value) and "train/nli_judge.py" in str(err.value)
