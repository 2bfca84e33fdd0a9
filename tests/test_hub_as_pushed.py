"""What the Hub holds works as pushed (issue 49): every repo `make publish` assembles (tiny artifacts of every kind
in the manifest) is served by a local stand-in for the Hub (:class:`_standalone.HubServer`, 127.0.0.1 only) and used
as a Hub user uses it, with ``HF_ENDPOINT`` pointing at the stand-in and nothing else: each card's snippets run as
written in a clean environment built from the card's own ``pip install`` line (no system site-packages, no
PYTHONPATH, rirag only where the card installs it), every split each dataset card lists loads, both Spaces start
from what the stand-in serves (a folder named ``app``, ``python app.py``, the Space's requirements and its pinned
Gradio) and answer or score over HTTP. Environments are made once per kind (session) from this interpreter's
installed distributions (symlinks, no download)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from _hub_project import MANIFEST, REPO, build_tiny_project
from _scoring_fixtures import tiny_models
from _standalone import HubServer, snippet_driver, venv_from_requirements
from conftest import write_tiny_obliqa
from rirag.hub.clean_env import card_installs, space_requirements
from tiny_encoder import tiny_sentence_transformer

#: Runs each snippet file in a fresh namespace (a ``>>>`` block as a doctest); prints what each bound or failed.
DRIVER = snippet_driver('{k: type(v).__name__ for k, v in namespace.items() if not k.startswith("__") '
                        'and type(v).__name__ not in ("module", "function", "type")}')


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    return root, build_tiny_project(root)


@pytest.fixture(scope="module")
def hub(project, tmp_path_factory):
    """Every assembled repo, and stand-ins for the Hub repos they name that are not ours (the metric's official NLI
    models, MiniLM, the RAFT base model, RegNLP/ObliQA), served from 127.0.0.1."""
    from rirag.data.obliqa import HUB_DATASET_ID
    from rirag.scoring.constants import OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL

    root, rows = project
    extra = tmp_path_factory.mktemp("stand-ins")
    models = tiny_models()
    repos = {("model", OFFICIAL_NLI_MODEL): models["nli_model"],
             ("model", OFFICIAL_COVERAGE_MODEL): models["coverage_model"],
             ("model", "sentence-transformers/all-MiniLM-L6-v2"): tiny_sentence_transformer(extra / "minilm"),
             ("model", "HuggingFaceTB/SmolLM2-135M-Instruct"): root / "artifacts/models/smollm2-135m-instruct",
             ("dataset", HUB_DATASET_ID): write_tiny_obliqa(extra / "obliqa")}
    repos.update({(_repo_type(r.kind), r.repo_id): Path(r.folder) for r in rows.values() if r.status == "assembled"})
    with HubServer(repos) as server:
        yield server, rows


def _repo_type(kind: str) -> str:
    from rirag.hub.manifest import REPO_TYPES

    return REPO_TYPES[kind]


@pytest.fixture(scope="session")
def environments(tmp_path_factory):
    """Clean environments by what they install (one per set of requirements, made once for the session)."""
    made: dict[tuple[str, ...], Path] = {}
    folder = tmp_path_factory.mktemp("venvs")

    def get(requirements) -> Path:
        key = tuple(sorted(set(requirements)))
        if key not in made:
            made[key] = venv_from_requirements(folder / f"env{len(made)}", key, rirag_src=REPO / "src" / "rirag")
            assert (made[key].parent / "hf").is_file()  # console scripts, as pip writes them (`hf download`)
        return made[key]

    return get


def _user_env(server: HubServer, home: Path, python: Path) -> dict:
    """Only what a Hub user has: PATH (the environment's scripts first), a home of their own, the endpoint."""
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TMPDIR")}
    return {**keep, "PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(home), "HF_HOME": str(home / "hf"),
            "HF_ENDPOINT": server.url, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_UPDATE_DOWNLOAD_COUNTS": "0", "TOKENIZERS_PARALLELISM": "false", "GRADIO_ANALYTICS_ENABLED": "False"}


def _card(row) -> str:
    return (Path(row.folder) / "README.md").read_text(encoding="utf-8")


#: The cards whose snippets are run here (the Spaces are started by their own test).
SNIPPET_CARDS = ("obliqa-leakage-free", "obliqa-original", "raft-instances", "nli-judge-data",
                 "encoder-ct-leakage-free", "encoder-et-ct-leakage-free", "learned-fusion-leakage-free",
                 "reranker-leakage-free", "obligation-classifier", "nli-judge", "raft-adapter", "raft-merged",
                 "repass-metric")


@pytest.mark.parametrize("name", SNIPPET_CARDS)
def test_every_card_snippet_runs_as_written_in_a_clean_environment(hub, environments, tmp_path, name):
    from rirag.hub.cards import code_blocks

    server, rows = hub
    row = rows[name]
    assert row.status == "assembled", row.detail
    card = _card(row)
    python = environments(card_installs(card))
    env = _user_env(server, tmp_path / "home", python)
    work = tmp_path / "work"
    work.mkdir()
    blocks = [(lang, code) for lang, code in code_blocks(card) if lang in ("python", "bash")
              and not code.lstrip().startswith("pip install")]
    assert blocks, "the card has no snippet"
    paths = []
    for i, (lang, code) in enumerate(blocks):
        if lang == "bash":  # run as written, in the user's shell
            done = subprocess.run(["bash", "-e", "-c", code], cwd=work, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, (code, done.stderr[-3000:], server.missed())
            continue
        paths.append(str(tmp_path / f"snippet{i}.py"))
        Path(paths[-1]).write_text(code)
    if paths:
        (tmp_path / "driver.py").write_text(DRIVER)
        done = subprocess.run([str(python), str(tmp_path / "driver.py"), *paths], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (done.stderr[-3000:], server.missed())
        out = json.loads(done.stdout.split("RESULTS ", 1)[1])
        assert all(o.get("doctest", [1, 0])[1] == 0 for o in out), out
    if name == "learned-fusion-leakage-free":
        assert (work / "run.trec").read_text().strip()  # the retrieve command wrote a ranking


def _saved_splits(folder: Path) -> dict[str, int]:
    """The splits a saved DatasetDict holds (``dataset_dict.json``), with their rows, read without the card."""
    from datasets import load_from_disk

    return {split: len(part) for split, part in load_from_disk(str(folder)).items()}


def _card_splits(card: str) -> dict[str, list[str]]:
    """config -> the splits the card's ``configs:`` list."""
    from huggingface_hub import DatasetCard

    out = {}
    for config in DatasetCard(card).data.to_dict().get("configs") or []:
        files = config.get("data_files")
        out[config["config_name"]] = [f["split"] for f in files] if isinstance(files, list) and \
            isinstance(files[0], dict) else ["train"]
    return out


LOAD_SPLITS = r'''
import json, sys
from datasets import load_dataset
repo, wanted = sys.argv[1], json.loads(sys.argv[2])
got = {}
for config, splits in wanted.items():
    for split in splits:
        try:
            got[f"{config}/{split}"] = len(load_dataset(repo, config, split=split))
        except ValueError as err:  # a split the builder saved empty (a tiny fixture's test split) has no rows
            if "corresponds to no data" not in str(err):
                raise
            got[f"{config}/{split}"] = 0
got["whole"] = {k: len(v) for k, v in load_dataset(repo, *(list(wanted)[:1] if len(wanted) > 1 else [])).items()}
print("RESULTS " + json.dumps(got))
'''


@pytest.mark.parametrize("name", ["obliqa-leakage-free", "raft-instances", "nli-judge-data"])
def test_every_split_each_dataset_card_lists_loads_from_the_hub(hub, environments, tmp_path, name):
    server, rows = hub
    row = rows[name]
    card = _card(row)
    wanted = _card_splits(card)
    assert wanted, "the card lists no configs: load_dataset would guess the splits from the file names"
    python = environments(card_installs(card))
    (tmp_path / "load.py").write_text(LOAD_SPLITS)
    done = subprocess.run([str(python), str(tmp_path / "load.py"), row.repo_id, json.dumps(wanted)], cwd=tmp_path,
                          env=_user_env(server, tmp_path / "home", python), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, (done.stderr[-3000:], server.missed())
    got = json.loads(done.stdout.split("RESULTS ", 1)[1])
    folder = Path(row.folder)
    if (folder / "dataset_dict.json").is_file():  # one DatasetDict: every split it holds, as many rows
        saved = _saved_splits(folder)
        assert got["whole"] == saved and {f"default/{s}": n for s, n in saved.items()} == \
            {k: v for k, v in got.items() if k != "whole"}
    else:  # one DatasetDict per config: each split of each config the card lists, as saved
        for config, splits in wanted.items():
            saved = _saved_splits(folder / config) if (folder / config / "dataset_dict.json").is_file() else None
            assert saved is None or set(saved) == set(splits), (config, saved, splits)
            for split in splits:
                assert got[f"{config}/{split}"] == (saved[split] if saved else got[f"{config}/{split}"])
            assert saved is not None or got[f"{config}/{splits[0]}"] > 0


def _space_env(folder: Path, environments) -> Path:
    """The Space's environment as the Hub builds it: its requirements.txt and the Gradio its card pins."""
    return environments(space_requirements(folder))


def _download_space(server: HubServer, environments, repo_id: str, tmp_path: Path) -> Path:
    """The Space's files as the stand-in serves them (``hf download REPO --repo-type space``, in a clean
    environment)."""
    python = environments(["huggingface_hub"])
    folder = tmp_path / "download"
    done = subprocess.run([str(python.parent / "hf"), "download", repo_id, "--repo-type", "space", "--local-dir",
                           str(folder)], env=_user_env(server, tmp_path / "home", python), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, (done.stderr[-3000:], server.missed())
    return folder


@pytest.mark.parametrize("name", ["repass-metric", "demo"])
def test_each_space_starts_from_what_the_hub_serves_and_answers_over_http(hub, environments, tmp_path, name):
    from rirag.hub.load import run_space
    from rirag.hub.manifest import load_manifest

    server, rows = hub
    row = rows[name]
    downloaded = _download_space(server, environments, row.repo_id, tmp_path)
    python = _space_env(downloaded, environments)
    manifest = load_manifest(MANIFEST)
    entry = next(e for e in manifest.entries if e.name == name)
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}
    variables = {k: ids.get(v, v) for k, v in entry.space_variables.items()}  # Hub ids, as push_all sets them
    said = run_space(entry.kind, downloaded, variables, python=str(python), timeout=300,
                     environ=_user_env(server, tmp_path / "home", python))
    assert said.startswith(f"gradio {manifest.space_sdk_version}, started as app/"), said
    assert ("answered over HTTP" if name == "demo" else "scored over HTTP") in said, said


def test_a_space_that_loads_its_folder_by_name_fails_to_start_as_app(hub, environments, tmp_path):
    """The can-fail twin of the metric Space: the old app.py (``evaluate.load`` of its own folder) does not start in a
    folder named ``app``, and a card pinning Gradio 3 is refused before anything starts."""
    import shutil

    from rirag.hub.load import check_space_sdk, run_space

    server, rows = hub
    folder = tmp_path / "repass"
    shutil.copytree(rows["repass-metric"].folder, folder)
    (folder / "app.py").write_text("import os\nimport evaluate\nmodule = evaluate.load(os.path.dirname("
                                   "os.path.abspath(__file__)))\n")
    python = _space_env(folder, environments)
    with pytest.raises(RuntimeError, match="exited"):
        run_space("metric-space", folder, python=str(python), timeout=300,
                  environ=_user_env(server, tmp_path / "home", python))
    card = (folder / "README.md").read_text()
    (folder / "README.md").write_text(re.sub(r"^sdk_version: .*$", "sdk_version: 3.19.1", card, flags=re.M))
    with pytest.raises(RuntimeError, match="gradio 3.19.1"):
        check_space_sdk(folder)


def test_upload_folders_hold_only_what_was_assembled_after_the_load_check(hub):
    """The load check ran every Space and snippet (the dry run's load column); nothing it wrote is in an upload
    folder, and what a push would send is exactly the assembled list."""
    from rirag.hub.push import unlisted_files

    _, rows = hub
    assembled = [r for r in rows.values() if r.status == "assembled"]
    assert {r.name for r in assembled} >= {"demo", "repass-metric"}
    for row in assembled:
        assert row.load.startswith("ok"), (row.name, row.load)
        assert unlisted_files(Path(row.folder), row.paths) == [], row.name
        assert not [p for p in row.paths if p.startswith(".cache") or "/.cache/" in p], row.name
    assert rows["demo"].files == len(rows["demo"].paths)


def test_the_load_check_leaves_no_cache_in_the_demos_upload_folder(hub, monkeypatch):
    """The demo's load check as `make publish` runs it in a plain shell (the caches at their default, ``.cache/``
    of the working directory; byte-code written): the Space's caches stay out of its upload folder."""
    from rirag.hub.load import check_load, local_ids
    from rirag.hub.manifest import load_manifest
    from rirag.hub.push import unlisted_files

    _, rows = hub
    row = rows["demo"]
    root = Path(row.folder).parents[2]  # <project>/artifacts/hub/<repo>
    manifest = load_manifest(MANIFEST)
    monkeypatch.delenv("RIRAG_CACHE_DIR", raising=False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    entry = next(e for e in manifest.entries if e.name == "demo")
    said = check_load(entry, manifest, row.folder, local_ids(manifest, root))
    assert said.startswith("ok") and "answered over HTTP" in said, said
    assert unlisted_files(Path(row.folder), row.paths) == []


def _check_clean(root: Path, name: str, folder) -> str:
    """One entry's load check as ``hub_push/push.py --clean-env`` runs it on the tiny project."""
    from rirag.hub.load import check_load, local_ids
    from rirag.hub.manifest import load_manifest

    manifest = load_manifest(MANIFEST)
    entry = next(e for e in manifest.entries if e.name == name)
    return check_load(entry, manifest, folder, local_ids(manifest, root), clean=True)


def test_the_clean_check_runs_the_rankers_shell_block_as_written(project, tmp_path, monkeypatch):
    """Issue 68: with --clean-env the ranker card's `hf download` and `rirag retrieve` run with bash in a clean
    environment of what the card installs (not a library equivalent in this process), and the run file holds a
    ranking; the can-fail twin: a flag the command line refuses, which the library equivalent never sees."""
    import shutil

    root, rows = project
    monkeypatch.setenv("RIRAG_DATA_DIR", str(root / "obliqa"))
    monkeypatch.setenv("RIRAG_CACHE_DIR", str(root / "cache"))
    row = rows["learned-fusion-leakage-free"]
    said = _check_clean(root, row.name, row.folder)
    assert said.startswith("ok (`rirag retrieve` as written: ") and said.endswith("in a clean environment)"), said
    broken = tmp_path / "learned-fusion"
    shutil.copytree(row.folder, broken)
    card = (broken / "README.md").read_text(encoding="utf-8")
    assert "--out run.trec" in card
    (broken / "README.md").write_text(card.replace("--out run.trec", "--out run.trec --no-such-flag"))
    said = _check_clean(root, row.name, broken)
    assert said.startswith("failed: RuntimeError: in a clean environment: ") and "--no-such-flag" in said, said


def test_the_clean_check_starts_the_metric_space_in_what_the_hub_installs(project, tmp_path):
    """Issue 68: with --clean-env the metric Space starts in a clean environment of its requirements.txt and its
    pinned Gradio, not with this interpreter; the can-fail twin: an app.py that imports what is installed here but
    not in its requirements (lightgbm) does not start."""
    import shutil

    root, rows = project
    row = rows["repass-metric"]
    assert "lightgbm" not in " ".join(space_requirements(row.folder))
    broken = tmp_path / "repass"
    shutil.copytree(row.folder, broken)
    (broken / "app.py").write_text("import lightgbm  # noqa\n" + (broken / "app.py").read_text(encoding="utf-8"))
    said = _check_clean(root, row.name, broken)
    assert said.startswith("failed: RuntimeError: the Space exited") and "lightgbm" in said, said
    said = _check_clean(root, row.name, row.folder)
    assert said.startswith("ok (") and "in a clean environment" in said.split("; Space: gradio ")[1], said


def test_the_push_uploads_the_assembled_list_and_nothing_else(tmp_path, monkeypatch):
    from huggingface_hub import HfApi

    from rirag.hub.push import push_folder, unlisted_files

    folder = tmp_path / "up"
    (folder / ".cache" / "rirag").mkdir(parents=True)
    (folder / "app.py").write_text("x")
    (folder / "data[1].txt").write_text("x")
    (folder / ".cache" / "rirag" / "bm25.npz").write_text("cache")
    assert unlisted_files(folder, ("app.py", "data[1].txt")) == [".cache/rirag/bm25.npz"]  # can-fail twin
    calls = {}
    monkeypatch.setattr(HfApi, "create_repo", lambda self, *a, **k: None)
    monkeypatch.setattr(HfApi, "upload_folder", lambda self, **k: calls.update(k) or "url")
    push_folder(folder, "me/up", "space", token="t", files=("app.py", "data[1].txt"))
    import fnmatch

    sent = [p for p in ("app.py", "data[1].txt", ".cache/rirag/bm25.npz")
            if any(fnmatch.fnmatch(p, pat) for pat in calls["allow_patterns"])]
    assert sent == ["app.py", "data[1].txt"]


def test_each_card_names_how_to_install_what_it_runs(hub):
    from rirag.hub.cards import SOURCE_REPOSITORY, code_blocks, missing_installs, snippet_needs, with_install

    _, rows = hub
    runs_rirag = []
    for row in rows.values():
        if row.status != "assembled":
            continue
        card = _card(row)
        assert missing_installs(card) == [], row.name
        if any(n.startswith("rirag") for lang, code in code_blocks(card) for n in snippet_needs(lang, code)):
            runs_rirag.append(row.name)
            assert f"git+{SOURCE_REPOSITORY}" in card, row.name
    assert "learned-fusion-leakage-free" in runs_rirag
    bare = "# x\n\n```python\nfrom peft import PeftModel\n```\n"  # can-fail twin: a card without its install line
    assert missing_installs(bare) == ["peft", "transformers", "torch"]
    assert missing_installs(with_install(bare)) == []


def test_the_recorded_training_command_reproduces_the_world_size():
    from accelerate.commands.launch import launch_command_parser

    from rirag.hub.card_data import training_command
    from rirag.models import CPU_MULTIPROCESS_CONFIG, GPU_MULTIPROCESS_CONFIG

    two = training_command("train/contrastive_tuning.py", ["--config", "recipes/x y.yaml"], 2)
    words = shlex.split(two)
    assert words[:2] == ["accelerate", "launch"]
    parsed = launch_command_parser().parse_args(words[2:])
    assert parsed.num_processes == 2 and parsed.training_script == "train/contrastive_tuning.py"
    assert parsed.training_script_args == ["--config", "recipes/x y.yaml"]
    # run verbatim on a CPU machine, a bare --num_processes 2 starts one process: the card names the gloo config
    assert parsed.config_file == CPU_MULTIPROCESS_CONFIG and (REPO / parsed.config_file).is_file()
    gpus = SimpleNamespace(world_size=8, device=SimpleNamespace(type="cuda"))
    parsed = launch_command_parser().parse_args(shlex.split(training_command("train/raft.py", [], gpus))[2:])
    assert parsed.num_processes == 8 and parsed.config_file == GPU_MULTIPROCESS_CONFIG
    cpus = SimpleNamespace(world_size=2, device=SimpleNamespace(type="cpu"))
    assert CPU_MULTIPROCESS_CONFIG in training_command("train/raft.py", [], cpus)
    one = training_command("train/contrastive_tuning.py", ["--a", "1"], 1)
    assert one == "python train/contrastive_tuning.py --a 1"
    trainers = [p for p in (REPO / "train").glob("*.py") if "world_size" in p.read_text()]
    for path in trainers:  # no trainer that knows its world size records a bare `python train/...` command
        assert not re.search(r'"(python )?train/\w+\.py " \+', path.read_text()), path.name


def test_the_cards_pin_what_their_spaces_run(hub):
    """Both Space cards pin the manifest's Gradio, inside the demo's requirements; the demo lists the models its
    variables name and no other; `license: other` cards name their licence; the classifier states its dtype."""
    from huggingface_hub import DatasetCard, ModelCard, SpaceCard

    from rirag.hub.manifest import load_manifest

    manifest = load_manifest(MANIFEST)
    _, rows = hub
    for name in ("demo", "repass-metric"):
        data = SpaceCard(_card(rows[name])).data.to_dict()
        assert data["sdk_version"] == manifest.space_sdk_version, name
    demo = SpaceCard(_card(rows["demo"])).data.to_dict()
    entry = next(e for e in manifest.entries if e.name == "demo")
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}
    assert sorted(demo["models"]) == sorted(ids.get(v, v) for v in entry.space_variables.values())
    for row in rows.values():
        if row.status == "assembled" and row.kind == "dataset":
            data = DatasetCard(_card(row)).data.to_dict()
            assert data["license"] != "other" or data.get("license_name"), row.name
    for name in ("nli-judge-data", "nli-judge"):  # trained on research-use-only pairs: their licences, not Apache-2.0
        row = rows[name]
        data = (DatasetCard if row.kind == "dataset" else ModelCard)(_card(row)).data.to_dict()
        assert (data["license"], data["license_link"]) == ("other", "LICENCES.md"), name
        assert "CC BY-NC 4.0" in (Path(row.folder) / "LICENCES.md").read_text(encoding="utf-8"), name
    assert "Weights: stored as **float32**" in _card(rows["obligation-classifier"])
    assert ModelCard(_card(rows["obligation-classifier"])).data.to_dict()["license"] == "apache-2.0"
    assert sys.version_info >= (3, 10)


def test_the_metric_spaces_model_variables_are_the_ones_the_check_sets():
    """app.py cannot import rirag: its variable table and the load check's are compared here (each names the
    ``evaluate.load`` option of the default model it replaces)."""
    import ast

    from rirag.hub.load import metric_model_variables
    from rirag.scoring.constants import OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL, OFFICIAL_OBLIGATION_MODEL

    tree = ast.parse((REPO / "evaluate_scripts" / "repass" / "app.py").read_text())
    table = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "MODEL_VARIABLES")
    defaults = {"nli_model": OFFICIAL_NLI_MODEL, "coverage_model": OFFICIAL_COVERAGE_MODEL,
                "obligation_model": OFFICIAL_OBLIGATION_MODEL}
    assert {name: defaults[option] for name, option in table.items()} == metric_model_variables()
