"""Every torch trainer under 2 CPU processes (gloo, ``recipes/accelerate/cpu-2proc.yaml``) on the tests' tiny models,
and RePASs' sharded ``score_dataset``: exit 0, one writer (one output folder, no checkpoint or temporary folder),
the card's world size and global batch, and a training loss within a tolerance of one process on the same global
batch and seed. A launch that cannot start the processes it was asked for stops with one line naming the config
that works and writes nothing. Marked ``distributed`` (``pytest -m distributed``); each launch takes tens of seconds
on a loaded 2-core machine (start-up and imports of two processes dominate).

Learned fusion trains LightGBM in one process (no torch data parallelism) and refuses a multi-process launch
(``rirag.training.runner.single_process_only``): exit 2, which ``accelerate launch`` reports as its own 1. The focused
scorer is fitted by rank 0 alone, which alone writes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert
from rirag.training.runner import CPU_MULTIPROCESS_CONFIG

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[1]
ACCELERATE = [sys.executable, "-c", "from accelerate.commands.launch import main; main()"]
#: Relative tolerance on the mean training loss, 2 processes vs 1 (same global batch and seed). Dropout and the
#: masking RNG differ per rank, so the runs are not bit-identical (measured here: at most 0.5 % apart); a
#: per-device objective (MNRL without gathering: ln 2 instead of ln 4) or a loss scaled by the process count (x2) is
#: far outside it.
LOSS_RTOL = 0.05


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1",
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


def run_trainer(script: str, config: dict, folder: Path, processes: int,
                launcher: list[str] | None = None) -> subprocess.CompletedProcess:
    """``train/<script>`` on ``config`` (written to ``folder/config.yaml``): one process with python, several through
    the CPU multi-process accelerate config (or ``launcher``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    target = [str(REPO / "train" / script), "--config", str(path)]
    if launcher is not None:
        cmd = launcher + target
    elif processes == 1:
        cmd = [sys.executable, *target]
    else:
        cmd = ACCELERATE + ["--config_file", str(REPO / CPU_MULTIPROCESS_CONFIG), "--num_processes", str(processes),
                            "--main_process_port", str(_free_port()), *target]
    # caches (the BM25 index of the reranker's negatives) go beside the folder, which holds only what the run writes
    env = _env() | {"RIRAG_CACHE_DIR": str(folder.parent / f"{folder.name}-cache")}
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr[-4000:]


def _one_output(root: Path, expected: set[str]) -> None:
    """Exactly the expected entries beside the config: no second copy, no temporary sibling, no checkpoint."""
    assert {p.name for p in root.iterdir()} - {"config.yaml"} == expected
    for name in expected:
        if (root / name).is_dir():
            assert not [p.name for p in (root / name).iterdir() if p.name.startswith("checkpoint-")]


def _card(folder: Path) -> dict:
    return json.loads((folder / "card_data.json").read_text())


def _launched_processes(command: str) -> int:
    """How many processes a recorded command starts: ``accelerate launch``'s ``--num_processes`` (read by accelerate's
    own parser), 1 for ``python SCRIPT``."""
    import shlex

    from accelerate.commands.launch import launch_command_parser

    words = shlex.split(command)
    if words[:2] != ["accelerate", "launch"]:
        assert words[0] == "python", command
        return 1
    return int(launch_command_parser().parse_args(words[2:]).num_processes)


def _assert_scale(card: dict, world: int, per_device: int, accumulation: int = 1) -> None:
    assert card["world_size"] == world and card["per_device_batch"] == per_device
    assert _launched_processes(card["command"]) == world, card["command"]  # the recorded command reproduces it
    assert card["global_batch"] == per_device * accumulation * world
    assert f"Processes: {world}; batch {per_device} per device, {card['global_batch']} in all" in \
        (Path(card["_folder"]) / "README.md").read_text()


def _card_at(folder: Path) -> dict:
    return _card(folder) | {"_folder": str(folder)}


def _close(two: float, one: float) -> None:
    assert two == pytest.approx(one, rel=LOSS_RTOL), (two, one)


#: What sentence-transformers' trainer logs each time it writes a model folder (final model or checkpoint).
SAVE_LINE = "Saving model checkpoint to"


def _two_and_one(script: str, config: dict, tmp_path: Path, per_device: int):
    """The 2-process run (per-device batch ``per_device``) and the 1-process run on the same global batch, and how
    many model folders each wrote (sentence-transformers' log line: twice as many would mean two writers)."""
    two = tmp_path / "two"
    proc2 = run_trainer(script, config | {"per_device_train_batch_size": per_device}, two, 2)
    _ok(proc2)
    one = tmp_path / "one"
    proc1 = run_trainer(script, config | {"per_device_train_batch_size": 2 * per_device}, one, 1)
    _ok(proc1)
    return two, one, (proc2.stderr.count(SAVE_LINE), proc1.stderr.count(SAVE_LINE))


def _classifier_data(tmp_path: Path) -> Path:
    data = [{"Text": f"Firms must keep records for {w} years.", "Obligation": True} for w in "abcdefghijklmnop"]
    data += [{"Text": f"The sky is blue on day {w}.", "Obligation": False} for w in "abcdefghijklmnop"]
    path = tmp_path / "obl.json"
    path.write_text(json.dumps(data))
    return path


COMMON = {"report_to": "none", "use_cpu": True, "seed": 42, "disable_tqdm": True, "precision": "fp32",
          "logging_steps": 1}


def test_obligation_classifier_two_processes(tmp_path):
    base = tiny_bert("dist_obl_base", OBLIGATION_LABELS, seed=5, head_scale=1.0)
    config = COMMON | {"data_path": str(_classifier_data(tmp_path)), "model_name_or_path": base, "max_steps": 3,
                       "learning_rate": 5e-3, "output_dir": "obl", "results_path": "obl.json",
                       "eval_strategy": "no", "save_strategy": "no", "per_device_eval_batch_size": 4}
    two, one, _ = _two_and_one("obligation_classifier.py", config, tmp_path, per_device=4)
    _one_output(two, {"obl", "obl.json"})
    card = _card_at(two / "obl")
    _assert_scale(card, 2, 4)
    res2, res1 = (json.loads((d / "obl.json").read_text()) for d in (two, one))
    assert res2["world_size"] == 2 and res1["world_size"] == 1 and res2["global_batch"] == res1["global_batch"] == 8
    assert res2["examples_seen"] == res1["examples_seen"] == 24
    _close(res2["train_loss"], res1["train_loss"])  # was doubled: the Trainer scaled a per-batch mean by 2
    _close(res2["eval_loss"], res1["eval_loss"])


def test_nli_judge_two_processes_with_the_committed_recipe(tmp_path):
    """The committed recipe (ddp_find_unused_parameters not set) trains under DDP: no 'mark a variable ready only
    once' crash on the classifier bias."""
    from test_nli_judge import fake_nli_root

    recipe = yaml.safe_load((REPO / "recipes" / "nli_judge" / "offline.yaml").read_text())
    assert "ddp_find_unused_parameters" not in recipe
    base = tiny_bert("dist_nli_base", (("0", "LABEL_0"), ("1", "LABEL_1"), ("2", "LABEL_2")), seed=7,
                     head_scale=1.0)
    root = fake_nli_root(tmp_path, n=40)
    config = recipe | {"data_dir": str(root), "model_name_or_path": base, "sources": "snli,anli,rte",
                       "test_per_source": 4, "train_caps": "", "max_length_cap": 24, "in_domain_train_per_type": 0,
                       "probe_per_type": 0, "output_dir": "judge", "results_path": "judge.json", "max_steps": 3,
                       "learning_rate": 5e-3, "max_train_minutes": None, "precision": "fp32", "logging_steps": 1,
                       "warmup_steps": 0}
    two, one, _ = _two_and_one("nli_judge.py", config, tmp_path, per_device=4)
    _one_output(two, {"judge", "judge.json"})
    card = _card_at(two / "judge")
    _assert_scale(card, 2, 4)
    res2, res1 = (json.loads((d / "judge.json").read_text()) for d in (two, one))
    assert res2["train_pairs_seen"] == card["examples_seen"] == 3 * 8 == res1["train_pairs_seen"]
    _close(res2["train_loss"], res1["train_loss"])


def test_reranker_two_processes_with_the_committed_recipe(tmp_path, tiny_data_dir):
    from tiny_encoder import tiny_mlm

    recipe = yaml.safe_load((REPO / "recipes" / "reranker" / "offline.yaml").read_text())
    assert "ddp_find_unused_parameters" not in recipe
    base = tiny_mlm(tmp_path / "tiny", dropout=0.0)
    config = recipe | COMMON | {"model_name_or_path": str(base), "data": str(tiny_data_dir),
                                "train_split": "original-dev", "negatives_retriever": "bm25",
                                "negatives_model": None, "negatives_per_question": 2, "negatives_depth": 5,
                                "max_train_questions": None, "max_length": 48, "output_dir": "rr", "max_steps": 3,
                                "learning_rate": 1e-3, "warmup_steps": 0}
    two, one, saves = _two_and_one("reranker.py", config, tmp_path, per_device=4)
    _one_output(two, {"rr"})
    assert saves[0] == saves[1] == 1  # written once (sentence-transformers' _save runs on every rank unguarded)
    card2, card1 = _card_at(two / "rr"), _card_at(one / "rr")
    _assert_scale(card2, 2, 4)
    assert card2["examples_seen"] == card1["examples_seen"] == 24
    _close(card2["settings"]["train loss"], card1["settings"]["train loss"])


def test_entailment_tuning_two_processes(tmp_path, tiny_data_dir):
    from tiny_encoder import tiny_mlm

    base = tiny_mlm(tmp_path / "tiny-mlm", dropout=0.0)
    config = COMMON | {"model_name_or_path": str(base), "data": str(tiny_data_dir), "train_split": "original-dev",
                       "max_length": 48, "output_dir": "et", "max_steps": 2, "learning_rate": 1e-3,
                       "save_strategy": "no"}
    two, one, _ = _two_and_one("entailment_tuning.py", config, tmp_path, per_device=3)
    _one_output(two, {"et"})
    assert (two / "et" / "modules.json").is_file()
    card2, card1 = _card_at(two / "et"), _card_at(one / "et")
    _assert_scale(card2, 2, 3)
    assert card2["examples_seen"] == card1["examples_seen"] == 12
    # the hypothesis masks are drawn per rank: a looser check than the other trainers' would still catch a x2
    _close(card2["settings"]["train loss"], card1["settings"]["train loss"])


def test_contrastive_tuning_two_processes_gathers_the_negatives(tmp_path):
    """MNRL over the global batch on 2 processes: the starting loss of a global batch of 4 is about ln 4 (a
    per-device objective would give ln 2), as in one process."""
    import math

    from conftest import write_tiny_obliqa
    from tiny_encoder import tiny_sentence_transformer

    data = write_tiny_obliqa(tmp_path / "obliqa", n_docs=8)
    base = tiny_sentence_transformer(tmp_path / "tiny-st", dropout=0.0)
    config = COMMON | {"model_name_or_path": str(base), "data": str(data), "train_split": "original-dev",
                       "eval_split": "", "eval_holdout_fraction": 0.2, "eval_corpus_size": 0,
                       "max_seq_length": 48, "output_dir": "ct", "results_path": "ct/selection.json",
                       "max_steps": 1, "learning_rate": 1e-6, "eval_strategy": "steps", "eval_steps": 1,
                       "save_strategy": "steps", "save_steps": 1, "load_best_model_at_end": True,
                       "dataloader_drop_last": True}
    two, one, saves = _two_and_one("contrastive_tuning.py", config, tmp_path, per_device=2)
    _one_output(two, {"ct"})
    assert saves[0] == saves[1] == 2  # the checkpoint and the final model, each written once
    card2 = _card_at(two / "ct")
    _assert_scale(card2, 2, 2)
    sel2, sel1 = (json.loads((d / "ct" / "selection.json").read_text()) for d in (two, one))
    assert sel2["global_batch"] == sel1["global_batch"] == 4 and sel2["world_size"] == 2
    assert sel2["examples_seen"] == sel1["examples_seen"] == 4  # one step of the global batch
    _close(sel2["train_loss"], sel1["train_loss"])
    assert abs(sel2["train_loss"] - math.log(4)) < abs(sel2["train_loss"] - math.log(2))


def test_raft_lora_two_processes(tmp_path):
    from _raft_fixtures import save_tiny_raft_dataset
    from tiny_causal_lm import tiny_causal_lm

    base = tiny_causal_lm(tmp_path / "base")
    save_tiny_raft_dataset(tmp_path / "data")
    recipe = yaml.safe_load((REPO / "recipes" / "raft" / "offline.yaml").read_text())
    config = recipe | {"dataset_name": str(tmp_path / "data"), "model_name_or_path": str(base),
                       "from_offline_gguf": False, "output_dir": "out", "merged_output_dir": "merged",
                       "results_path": "summary.json", "max_train_samples": 8, "max_eval_samples": 2,
                       "gradient_accumulation_steps": 2, "logging_steps": 1, "max_steps": 2, "learning_rate": 0.01,
                       "warmup_steps": 0, "disable_tqdm": True, "per_device_train_batch_size": 1}
    # the same global batch of 4 without padding on either side: 2 processes x 2 accumulated, 1 x 4
    two, one = tmp_path / "two", tmp_path / "one"
    _ok(run_trainer("raft.py", config, two, 2))
    _ok(run_trainer("raft.py", config | {"gradient_accumulation_steps": 4}, one, 1))
    _one_output(two, {"out", "merged", "summary.json"})
    card = _card_at(two / "out")
    _assert_scale(card, 2, 1, accumulation=2)
    s2, s1 = (json.loads((d / "summary.json").read_text())["summary"] for d in (two, one))
    assert s2["global_batch"] == s1["global_batch"] == 4 and s2["examples_seen"] == s1["examples_seen"] == 8
    # tokens seen are summed over both ranks: the same rows as one process
    assert card["tokens_seen"] == s2["tokens_seen"] == s1["tokens_seen"] > 0
    _close(s2["train_loss"], s1["train_loss"])


def test_a_launch_that_starts_one_process_instead_of_two_stops_and_writes_nothing(tmp_path):
    """``accelerate launch --cpu --num_processes 2`` starts ONE process: the trainer says so in one line naming the
    config that works (exit 2) before anything is written."""
    base = tiny_bert("dist_obl_base", OBLIGATION_LABELS, seed=5, head_scale=1.0)
    config = COMMON | {"data_path": str(_classifier_data(tmp_path)), "model_name_or_path": base, "max_steps": 1,
                       "output_dir": "obl", "results_path": "obl.json", "save_strategy": "no"}
    proc = run_trainer("obligation_classifier.py", config, tmp_path / "run", 2,
                       launcher=ACCELERATE + ["--cpu", "--num_processes", "2", "--main_process_port",
                                              str(_free_port())])
    # the trainer's own last word is one line and its status 2; accelerate's launcher then exits 1 (its status for any
    # failed child) with its CalledProcessError traceback naming the child's 2
    assert proc.returncode == 1 and "returned non-zero exit status 2" in proc.stderr, proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("ERROR:rirag.training.runner:")]
    assert len(said) == 1 and CPU_MULTIPROCESS_CONFIG in said[0] and "runs in 1" in said[0]
    assert "Traceback" not in proc.stderr.split(said[0])[0]  # no traceback from the trainer before it
    assert {p.name for p in (tmp_path / "run").iterdir()} == {"config.yaml"}


def test_a_single_process_trainer_launched_with_two_exits_2_and_accelerate_1(tmp_path):
    """Learned fusion trains in one process: ``accelerate launch --cpu --num_processes 2`` (one process started)
    gets its one line and status 2, which accelerate turns into its own 1 (a traceback ending "returned non-zero exit
    status 2"; with ``--quiet``, 1 and no traceback); ``python`` alone would give the 2 (the README says so)."""
    for quiet in (False, True):
        folder = tmp_path / f"run-{quiet}"
        launcher = ACCELERATE + ["--cpu", "--num_processes", "2", "--main_process_port", str(_free_port())]
        proc = run_trainer("learned_fusion.py", {"output_dir": "lf"}, folder, 2,
                           launcher=launcher + (["--quiet"] if quiet else []))
        # the trainer's own line (accelerate's traceback quotes the child's stderr again, after "RuntimeError: ")
        said = [line for line in proc.stderr.splitlines() if line.startswith("ERROR rirag.training.runner:")]
        assert proc.returncode == 1 and len(said) == 1 and "trains in one process" in said[0], proc.stderr[-3000:]
        assert ("Traceback" in proc.stderr) is (not quiet)
        assert ("returned non-zero exit status 2" in proc.stderr) is (not quiet)
        assert {p.name for p in folder.iterdir()} == {"config.yaml"}


def _focused_scorer_job(tmp_path: Path) -> dict:
    """A focused-scorer config on the tiny data (selection options only, the tests' tiny encoder, no benchmark
    sample) whose outputs go to ``tmp_path``: the tracked files are never touched."""
    import shutil

    from conftest import write_tiny_obliqa
    from rirag.data.obliqa import load_obliqa
    from rirag.data.runs import write_trec
    from rirag.data.splits import split_questions
    from tiny_encoder import tiny_sentence_transformer

    data = write_tiny_obliqa(tmp_path / "obliqa", n_docs=8)
    encoder = tiny_sentence_transformer(tmp_path / "st", dropout=0.0)
    obliqa = load_obliqa(str(data))
    ids = sorted(obliqa.corpus)
    # each question its gold passages first, then the others in its own order (another context for its partner)
    run = {q.id: {pid: float(len(ids) - i) for i, pid in enumerate(
        list(q.gold) + [p for p in ids[3 * n:] + ids[:3 * n] if p not in q.gold])}
        for n, q in enumerate(split_questions(obliqa, "original-dev"))}
    write_trec(run, tmp_path / "tune.trec")
    scorer = tmp_path / "scorer.json"
    shutil.copy(REPO / "src" / "rirag" / "generation" / "focused" / "focused_scorer.json", scorer)
    return {"data": str(data), "tune_run": str(tmp_path / "tune.trec"), "tune_split": "original-dev",
            "benchmark_sample": 0, "encoder": str(encoder), "selection_only": True, "output": str(scorer),
            "results": str(tmp_path / "results.json"), "keep_ratio_grid": "0.5", "min_score_grid": "0.1"}


def test_focused_scorer_under_two_processes_writes_once(tmp_path):
    """``accelerate launch --config_file recipes/accelerate/cpu-2proc.yaml train/focused_scorer.py``: rank 0 fits
    and writes the scorer and the results once; rank 1 says so in one line and writes nothing."""
    config = _focused_scorer_job(tmp_path)
    before = (tmp_path / "scorer.json").read_text()
    tracked = [REPO / "src" / "rirag" / "generation" / "focused" / "focused_scorer.json",
               REPO / "benchmarks" / "results" / "focused_scorer.json"]
    tracked_before = [p.read_bytes() for p in tracked]
    proc = run_trainer("focused_scorer.py", config, tmp_path / "run", 2)
    _ok(proc)
    for path in (config["output"], config["results"]):
        assert proc.stderr.count(f"wrote {path}") == 1, proc.stderr[-3000:]
    assert proc.stderr.count("rank 1 of 2: the focused scorer is fitted and written by the main process") == 1
    assert proc.stderr.count("tuning questions (original-dev") == 1  # the work itself ran once
    scorer = json.loads((tmp_path / "scorer.json").read_text())
    assert scorer != json.loads(before) and scorer["provenance"]["encoder"] == config["encoder"]
    assert json.loads((tmp_path / "results.json").read_text())["tuning"]["chosen"]["questions"] > 0
    assert [p.read_bytes() for p in tracked] == tracked_before
    assert {p.name for p in (tmp_path / "run").iterdir()} == {"config.yaml"}


ANSWERS = ["Firms must keep records for six years. The sky is blue.", "Client money must be held separately.",
           "It is not green. Firms must report to the regulator within six days.", "", "Firms must file returns."]
PASSAGES = [["Firms must keep records for six years.", "Client money must be held separately."],
            "Firms must report to the regulator. Client money is held separately.",
            ["It is green.", "A person must notify the regulator within days."], ["Firms must file."], []]
SCORE = """import json, sys
from accelerate import PartialState
from datasets import Dataset
from rirag.scoring.repass import RePASsScorer
job = json.load(open(sys.argv[1]))
state = PartialState(cpu=True)
ds = Dataset.from_dict({"Answer": job["answers"], "RetrievedPassages": job["passages"]})
res = RePASsScorer(**job["models"], device="cpu", show_progress=False).score_dataset(ds)
if state.is_main_process:
    json.dump({"n": state.num_processes, "result": res.to_dict()}, open(sys.argv[2], "w"), default=str)
"""


def test_repass_score_dataset_sharded_over_two_processes_equals_one(tmp_path):
    """RePASs' sharded path: score_dataset under 2 processes (each scores its shard, gathered in input order) gives
    the 1-process result, skipped items and counts included. (``compute()`` of the evaluate metric scores in its
    one process: it does not shard.)"""
    from _scoring_fixtures import tiny_models

    script, job = tmp_path / "score.py", tmp_path / "job.json"
    script.write_text(SCORE)
    job.write_text(json.dumps({"answers": ANSWERS, "passages": [p if isinstance(p, list) else [p] for p in PASSAGES],
                               "models": tiny_models()}))
    outs = {}
    for n in (2, 1):
        out = tmp_path / f"res{n}.json"
        cmd = (ACCELERATE + ["--config_file", str(REPO / CPU_MULTIPROCESS_CONFIG), "--num_processes", "2",
                             "--main_process_port", str(_free_port())] if n == 2 else [sys.executable])
        proc = subprocess.run(cmd + [str(script), str(job), str(out)], cwd=tmp_path, env=_env(), capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs[n] = json.loads(out.read_text())
    assert outs[2]["n"] == 2 and outs[1]["n"] == 1
    two, one = outs[2]["result"], outs[1]["result"]
    assert len(two["per_item"]["repass"]) == len(ANSWERS) and two["skipped"] == one["skipped"]
    assert two["n_scored"] == one["n_scored"] > 0 and two["no_passage_text"] == one["no_passage_text"]
    for key, values in one["per_item"].items():
        assert two["per_item"][key] == pytest.approx(values, abs=1e-5), key
    assert two["repass"] == pytest.approx(one["repass"], abs=1e-6)
