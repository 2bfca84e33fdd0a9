"""hub_push: manifests, exact upload folders, and the push path recorded through a fake HfApi (nothing uploaded)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import yaml

from rirag.hub import manifest as hub_manifest
from rirag.hub.assemble import assemble_all
from rirag.hub.manifest import ManifestError, load_manifest
from rirag.hub.push import push_all, push_folder

REPO = Path(__file__).resolve().parents[1]
ENCODER_CONTEXT = {"base_model": "sentence-transformers/all-MiniLM-L6-v2", "description": "d", "train_data": "t"}


class FakeHfApi:
    """Records every call push_folder makes; class-level so the test sees the calls of every instance."""

    calls: list = []

    def __init__(self, token=None, **kwargs):
        FakeHfApi.calls.append(("init", {"token": token}))

    def whoami(self):
        FakeHfApi.calls.append(("whoami", {}))
        return {"name": "tester"}

    def create_repo(self, repo_id, **kwargs):
        FakeHfApi.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

    def upload_folder(self, **kwargs):
        FakeHfApi.calls.append(("upload_folder", kwargs))

        class Info:
            commit_url = f"https://hub.invalid/{kwargs['repo_id']}/commit/1"
            pr_url = "https://hub.invalid/pr/1" if kwargs.get("create_pr") else None

        return Info()


@pytest.fixture
def fake_api(monkeypatch):
    import huggingface_hub

    FakeHfApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHfApi)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    return FakeHfApi


def _trained_folder(folder: Path) -> None:
    """What a trainer leaves: weights, tokenizer, configs, its card, and things that must not be uploaded."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\1" * 2048)
    (folder / "tokenizer.json").write_text("{}")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text("{}")
    (folder / "README.md").write_text("trainer card\n")
    (folder / "checkpoint-500").mkdir()
    (folder / "checkpoint-500" / "optimizer.pt").write_bytes(b"x")
    (folder / "training_args.bin").write_bytes(b"x")
    (folder / "runs").mkdir()
    (folder / "runs" / "events.out").write_text("x")


def _write_manifest(root: Path, entries: list[dict], **top) -> Path:
    path = root / "manifest.yaml"
    path.write_text(yaml.safe_dump({"namespace": "me", "space_sdk_version": "6.31.0", "entries": entries, **top}))
    return path


@pytest.fixture
def project(tmp_path):
    _trained_folder(tmp_path / "artifacts" / "enc")
    ds = tmp_path / "artifacts" / "ds"
    (ds / "corpus").mkdir(parents=True)
    (ds / "corpus" / "data-00000-of-00001.arrow").write_bytes(b"\2" * 100)
    (ds / "corpus" / "cache-123.arrow").write_bytes(b"\3")
    (ds / "README.md").write_text("---\nlicense: apache-2.0\ntags: [rirag]\n---\n# ds\n")
    space = tmp_path / "space"
    space.mkdir()
    (space / "app.py").write_text("print('hi')\n")
    (space / "README.md").write_text("---\nsdk: gradio\napp_file: app.py\nlicense: apache-2.0\n"
                                     "tags: [evaluate, metric]\n---\n# m\n")
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "pkg" / "__init__.py").write_text("")
    manifest = _write_manifest(tmp_path, [
        {"name": "enc", "kind": "model", "source": "artifacts/enc", "repo": "enc-repo",
         "card": "sentence_transformer.md.j2", "context": ENCODER_CONTEXT},
        {"name": "ds", "kind": "dataset", "source": "artifacts/ds", "repo": "ds-repo"},
        {"name": "metric", "kind": "metric-space", "source": "space", "repo": "metric-repo",
         "vendor": {"lib/pkg": "pkg"},
         "space_variables": {"RIRAG_DEMO_GENERATOR_MODEL": "enc", "PLAIN": "x"}},
        {"name": "gone", "kind": "adapter", "source": "artifacts/not-trained-yet", "repo": "gone-repo"},
    ], private=True, create_pr=True)
    return tmp_path, manifest


def test_upload_folders_hold_exactly_what_belongs_on_the_hub(project):
    root, path = project
    manifest = load_manifest(path)
    rows = {r.name: r for r in assemble_all(manifest, root)}
    enc = root / "artifacts" / "hub" / "enc-repo"
    files = sorted(p.relative_to(enc).as_posix() for p in enc.rglob("*") if p.is_file())
    assert files == [".gitattributes", "1_Pooling/config.json", "README.md", "config.json", "model.safetensors",
                     "tokenizer.json"]
    assert "*.safetensors filter=lfs" in (enc / ".gitattributes").read_text()
    assert (root / "artifacts" / "enc" / "README.md").read_text() == "trainer card\n"  # the source card is untouched
    assert (enc / "README.md").read_text().startswith("---\nlibrary_name: sentence-transformers")
    ds = root / "artifacts" / "hub" / "ds-repo"
    assert (ds / "corpus" / "data-00000-of-00001.arrow").exists() and not (ds / "corpus" / "cache-123.arrow").exists()
    assert (root / "artifacts" / "hub" / "metric-repo" / "pkg" / "__init__.py").exists()  # vendored library
    assert rows["enc"].status == rows["ds"].status == rows["metric"].status == "assembled"
    assert rows["enc"].card == rows["ds"].card == rows["metric"].card == "ok"
    assert rows["enc"].files == 6 and rows["enc"].bytes == sum(p.stat().st_size for p in enc.rglob("*") if p.is_file())
    assert rows["gone"].status == "missing" and "artifacts/not-trained-yet: not found" in rows["gone"].detail


def test_reassembling_is_idempotent(project):
    root, path = project
    manifest = load_manifest(path)

    def snapshot():
        out = root / "artifacts" / "hub"
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    first = [r.as_dict() for r in assemble_all(manifest, root)]
    before = snapshot()
    second = [r.as_dict() for r in assemble_all(manifest, root)]
    assert second == first and snapshot() == before
    assert not [p for p in (root / "artifacts" / "hub").iterdir() if p.name.startswith(".")]  # no temp folders left


def test_push_records_repo_ids_types_folders_and_flags(project, fake_api):
    root, path = project
    manifest = load_manifest(path, namespace="my-org")
    rows = push_all(manifest, assemble_all(manifest, root))
    creates = [c for name, c in fake_api.calls if name == "create_repo"]
    uploads = [c for name, c in fake_api.calls if name == "upload_folder"]
    assert [(c["repo_id"], c["repo_type"], c["private"], c["exist_ok"]) for c in creates] == [
        ("my-org/enc-repo", "model", True, True), ("my-org/ds-repo", "dataset", True, True),
        ("my-org/metric-repo", "space", True, True)]
    assert creates[2]["space_sdk"] == "gradio" and creates[0]["space_sdk"] is None
    assert sorted(creates[2]["space_variables"], key=lambda v: v["key"]) == [
        {"key": "PLAIN", "value": "x"},
        {"key": "RIRAG_DEMO_GENERATOR_MODEL", "value": "my-org/enc-repo"}]  # an entry name became its repo id
    assert "space_variables" not in creates[0]
    assert [(c["repo_id"], c["repo_type"], Path(c["folder_path"]), c["create_pr"]) for c in uploads] == [
        ("my-org/enc-repo", "model", root / "artifacts" / "hub" / "enc-repo", True),
        ("my-org/ds-repo", "dataset", root / "artifacts" / "hub" / "ds-repo", True),
        ("my-org/metric-repo", "space", root / "artifacts" / "hub" / "metric-repo", True)]
    assert {c["token"] for name, c in fake_api.calls if name == "init"} == {"hf_test_token"}
    by_name = {r.name: r for r in rows}
    assert by_name["enc"].status == "pushed" and by_name["enc"].detail == "https://hub.invalid/pr/1"
    assert by_name["gone"].status == "missing"  # nothing pushed for a missing artifact


def test_push_flags_from_the_command_line_win(project, fake_api):
    root, path = project
    manifest = load_manifest(path)
    push_all(manifest, assemble_all(manifest, root, only=["enc"]), private=False, create_pr=False)
    (create,) = [c for n, c in fake_api.calls if n == "create_repo"]
    (upload,) = [c for n, c in fake_api.calls if n == "upload_folder"]
    assert create["repo_id"] == "me/enc-repo" and create["private"] is False and upload["create_pr"] is False


def test_a_card_that_does_not_parse_is_not_pushed(project, fake_api):
    root, path = project
    (root / "artifacts" / "ds" / "README.md").write_text("---\nlicense: [unclosed\n---\n")
    manifest = load_manifest(path)
    rows = {r.name: r for r in push_all(manifest, assemble_all(manifest, root, only=["ds"]))}
    assert rows["ds"].status == "assembled" and rows["ds"].card.startswith("invalid")
    assert "not pushed" in rows["ds"].detail and not [c for n, c in fake_api.calls if n == "upload_folder"]


def test_only_the_main_process_pushes(project, fake_api, monkeypatch):
    root, path = project
    monkeypatch.setenv("RANK", "1")
    assert push_folder(root / "artifacts" / "enc", "me/enc") is None
    assert fake_api.calls == []


def test_push_without_a_token_says_how_to_log_in(project, fake_api, monkeypatch):
    import huggingface_hub

    root, _ = project
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(PermissionError, match="hf auth login"):
        push_folder(root / "artifacts" / "enc", "me/enc")
    with pytest.raises(FileNotFoundError, match="not a folder"):
        push_folder(root / "nowhere", "me/enc", token="t")


@pytest.mark.parametrize("entry, message", [
    ({"name": "a", "kind": "weights", "source": "x", "repo": "r"}, "unknown kind 'weights'"),
    ({"name": "a", "kind": "model", "source": "x"}, "missing field 'repo'"),
    ({"name": "a", "kind": "model", "repo": "r"}, "missing field 'source'"),
    ({"name": "a", "kind": "model", "repo": "r", "source": "x", "colour": 1}, "unknown field"),
])
def test_bad_manifests_name_the_entry_and_field(tmp_path, entry, message):
    path = _write_manifest(tmp_path, [entry])
    with pytest.raises(ManifestError, match=message) as err:
        load_manifest(path)
    assert "entry 0 (a)" in str(err.value)


def test_namespace_override_order(tmp_path, monkeypatch):
    path = _write_manifest(tmp_path, [{"name": "a", "kind": "model", "source": "x", "repo": "r"}])
    monkeypatch.delenv(hub_manifest.NAMESPACE_ENV, raising=False)
    assert load_manifest(path).repo_id(load_manifest(path).entries[0]) == "me/r"
    monkeypatch.setenv(hub_manifest.NAMESPACE_ENV, "env-ns")
    assert load_manifest(path).namespace == "env-ns"
    assert load_manifest(path, namespace="cli-ns").namespace == "cli-ns"
    path.write_text(yaml.safe_dump({"entries": [{"name": "a", "kind": "model", "source": "x", "repo": "r"},
                                                {"name": "a", "kind": "model", "source": "y", "repo": "s"}]}))
    with pytest.raises(ManifestError, match="duplicate name 'a'"):
        load_manifest(path, namespace="n")


def _push_script(monkeypatch):
    import sys

    spec = importlib.util.spec_from_file_location("hub_push_push", REPO / "hub_push" / "push.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclass looks the module up
    spec.loader.exec_module(module)
    return module


def test_push_script_dry_run_prints_the_table_and_pushes_nothing(project, fake_api, capsys, monkeypatch):
    root, path = project
    push = _push_script(monkeypatch)
    rows = push.main(push.parse_args(["--manifest", str(path), "--dry-run", "--root", str(root), "--no-load-check"]))
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| name | repo | kind | status | files | bytes | card | results |"
    assert "| gone | me/gone-repo | adapter | missing | 0 | 0 |  | 0 |" in out
    assert "dry run: nothing pushed; 3 assembled, 1 missing" in out
    assert [r.status for r in rows] == ["assembled", "assembled", "assembled", "missing"]
    assert fake_api.calls == []
    # with the load check (the default): this project's hand-made encoder ("{}" configs) cannot load, and says so
    assert push.run(["--manifest", str(path), "--dry-run", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| name | repo | kind | status | files | bytes | card | results | load |"
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines()[2:] if line.startswith("| ")}
    assert "| failed: " in rows["enc"] and rows["gone"].endswith("| skipped: not assembled |")
    assert "| failed: the card has no usage snippet that loads me/metric-repo |" in rows["metric"]
    assert "loads: 3 failed, 1 skipped" in out and fake_api.calls == []
    with pytest.raises(ManifestError, match="unknown entr"):
        push.main(push.parse_args(["--manifest", str(path), "--dry-run", "--root", str(root), "--only", "nope"]))


def test_the_project_manifest_is_consistent():
    manifest = load_manifest(REPO / "hub_push" / "manifest.yaml", namespace="ns")
    templates = REPO / "model_cards"
    for entry in manifest.entries:
        if entry.card != "source":
            assert (templates / entry.card).exists(), entry.name
        if entry.kind in ("model", "adapter") and entry.card != "source":
            assert entry.results, f"{entry.name}: a model card without results files"
    kinds = {e.kind for e in manifest.entries}
    assert kinds == set(hub_manifest.REPO_TYPES)
    assert len({e.repo for e in manifest.entries}) == len(manifest.entries)


def test_a_folder_with_only_checkpoints_is_missing_not_published(tmp_path):
    (tmp_path / "artifacts" / "clf" / "checkpoint-115").mkdir(parents=True)
    (tmp_path / "artifacts" / "clf" / "checkpoint-115" / "model.safetensors").write_bytes(b"x")
    path = _write_manifest(tmp_path, [{"name": "clf", "kind": "model", "source": "artifacts/clf", "repo": "clf"}])
    (row,) = assemble_all(load_manifest(path), tmp_path)
    assert row.status == "missing" and "nothing to upload yet" in row.detail
    assert not (tmp_path / "artifacts" / "hub" / "clf").exists()
    (tmp_path / "artifacts" / "clf" / "config.json").write_text("{}")  # saved: assembled
    assert assemble_all(load_manifest(path), tmp_path)[0].status == "assembled"
    shutil.rmtree(tmp_path / "artifacts" / "clf")  # gone again: its stale upload folder goes too
    assert assemble_all(load_manifest(path), tmp_path)[0].status == "missing"
    assert not (tmp_path / "artifacts" / "hub" / "clf").exists()


def test_upload_folders_hold_copies_never_links_to_the_repository(project):
    root, path = project
    assemble_all(load_manifest(path), root)
    staged = root / "artifacts" / "hub" / "metric-repo"
    for rel in ("app.py", "pkg/__init__.py"):
        assert (staged / rel).stat().st_nlink == 1
    (staged / "app.py").write_text("edited in the upload folder\n")
    (staged / "pkg" / "__init__.py").write_text("x = 1\n")
    with open(root / "artifacts" / "hub" / "enc-repo" / "model.safetensors", "r+b") as f:
        f.write(b"\0")  # edited in place, as a tool that patches weights would
    assert (root / "space" / "app.py").read_text() == "print('hi')\n"
    assert (root / "lib" / "pkg" / "__init__.py").read_text() == ""
    assert (root / "artifacts" / "enc" / "model.safetensors").read_bytes() == b"\1" * 2048


def test_staging_the_project_never_links_tracked_files(tmp_path):
    """The real manifest's metric Space: its script and the vendored library are copies of the tracked files."""
    import subprocess

    manifest = load_manifest(REPO / "hub_push" / "manifest.yaml", namespace="ns")
    manifest.out_dir = str(tmp_path / "hub")
    (row,) = assemble_all(manifest, REPO, only=["repass-metric"])
    staged = Path(row.folder)
    tracked = subprocess.run(["git", "ls-files", "evaluate_scripts/repass", "src/rirag"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked and (staged / "repass.py").exists()
    for rel in tracked:
        target = staged / (rel.removeprefix("evaluate_scripts/repass/").replace("src/rirag/", "rirag/", 1))
        if target.exists() and rel.endswith(".py"):
            assert not target.samefile(REPO / rel) and target.stat().st_nlink == 1, rel
    before = (REPO / "evaluate_scripts" / "repass" / "repass.py").read_bytes()
    (staged / "repass.py").write_text("# edited\n")
    assert (REPO / "evaluate_scripts" / "repass" / "repass.py").read_bytes() == before


def _one_line_exit_2(push, argv, capsys, message):
    assert push.run(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [captured.err.strip()] and message in captured.err, captured.err
    assert captured.err.startswith("error: ") and "Traceback" not in captured.err + captured.out


def test_no_token_or_no_hub_is_one_line_exit_2_before_anything_is_assembled(project, fake_api, capsys, monkeypatch):
    import huggingface_hub
    from huggingface_hub import errors

    root, path = project
    push = _push_script(monkeypatch)
    argv = ["--manifest", str(path), "--root", str(root)]
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)  # nor a saved login
    _one_line_exit_2(push, argv, capsys, "no Hugging Face token: set HF_TOKEN or run `hf auth login`")
    assert not (root / "artifacts" / "hub").exists() and fake_api.calls == []
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_test_token")
    for failure, message in [(errors.OfflineModeIsEnabled("offline"), "HF_HUB_OFFLINE is set"),
                             (ConnectionError("Name or service not known"), "the Hub cannot be reached")]:
        def whoami(self, failure=failure):
            raise failure
        monkeypatch.setattr(FakeHfApi, "whoami", whoami)
        _one_line_exit_2(push, argv, capsys, message)
        assert not (root / "artifacts" / "hub").exists()
    _one_line_exit_2(push, argv + ["--only", "nope"], capsys, "unknown entr")


def test_the_network_failing_mid_push_is_one_line_naming_what_was_pushed(project, fake_api, capsys, monkeypatch):
    root, path = project
    push = _push_script(monkeypatch)
    uploads = []

    def upload_folder(self, **kwargs):
        uploads.append(kwargs["repo_id"])
        if len(uploads) == 2:
            raise TimeoutError("timed out")
        return type("Info", (), {"commit_url": "https://hub.invalid/c", "pr_url": None})()

    monkeypatch.setattr(FakeHfApi, "upload_folder", upload_folder)
    _one_line_exit_2(push, ["--manifest", str(path), "--root", str(root), "--no-load-check"], capsys,
                     "cannot push me/ds-repo: the Hub cannot be reached (timed out); check the network (and "
                     "HF_ENDPOINT if set) (pushed before this: me/enc-repo)")
    assert uploads == ["me/enc-repo", "me/ds-repo"]


def test_the_push_command_without_a_token_prints_one_line(project, tmp_path):
    """The real command line in a fresh interpreter (what `make publish DRY_RUN=0` runs): no traceback."""
    import os
    import subprocess
    import sys

    root, path = project
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_HOME=str(tmp_path / "hf-home"), HF_HUB_OFFLINE="0")
    done = subprocess.run([sys.executable, str(REPO / "hub_push" / "push.py"), "--manifest", str(path), "--root",
                           str(root)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "error: no Hugging Face token: set HF_TOKEN or run `hf auth login`\n"
    assert not (root / "artifacts" / "hub").exists()


def test_each_load_check_uses_a_fresh_datasets_cache(tmp_path, monkeypatch):
    """datasets caches a local folder by its name: after loading one `leakage-free`, another folder of that name
    gives the first one's rows from a shared cache. The publish-time check loads each folder in a cache of its own."""
    import datasets.config
    from datasets import Dataset, load_dataset

    from rirag.hub.load import check_load
    from rirag.hub.manifest import Entry, Manifest

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "shared-cache")
    snippet = ('---\nconfigs:\n- config_name: corpus\n  data_files: corpus/*.arrow\n---\n\n```python\n'
               'from datasets import load_dataset\n\n'
               'row = load_dataset("ns/leakage-free", "corpus", split="train")[4]\n'
               '```\n')
    folders = {}
    for name, rows in (("fixture", 3), ("real", 5)):
        folder = folders[name] = tmp_path / name / "leakage-free"
        Dataset.from_dict({"x": list(range(rows))}).save_to_disk(str(folder / "corpus"))
        (folder / "README.md").write_text(snippet)
    assert len(load_dataset(str(folders["fixture"]), "corpus", split="train")) == 3  # what `make test` leaves
    assert len(load_dataset(str(folders["real"]), "corpus", split="train")) == 3  # the stale rows, shared cache
    manifest = Manifest(namespace="ns", entries=[Entry(name="ds", kind="dataset", repo="leakage-free", source="x")])
    assert check_load(manifest.entries[0], manifest, folders["real"], {}) == "ok (dict)"  # row 4 exists: 5 rows
    assert datasets.config.HF_DATASETS_CACHE == tmp_path / "shared-cache"  # the shared cache is given back


def _classifier_project(root: Path, weights: bytes | None = None) -> tuple[Path, Path]:
    """The project's obligation-classifier entry, with the committed results file, and a model placed at its source
    path (not the model those results were measured on): a tiny BERT classifier, or a file of ``weights``."""
    from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert

    raw = yaml.safe_load((REPO / "hub_push" / "manifest.yaml").read_text())
    entry = next(e for e in raw["entries"] if e["name"] == "obligation-classifier")
    folder = root / entry["source"]
    if weights is None:
        shutil.copytree(tiny_bert("obl_other_model", OBLIGATION_LABELS, seed=3), folder)
    else:
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(weights)
    (root / "benchmarks" / "results").mkdir(parents=True)
    for name in entry["results"]:
        shutil.copy(REPO / "benchmarks" / "results" / name, root / "benchmarks" / "results" / name)
    return folder, _write_manifest(root, [entry], results_dir="benchmarks/results")


def _published_index(root: Path, manifest: Path) -> tuple[str, int]:
    """The assembled card and its count of results; the repo's .eval_results/ files hold exactly those numbers."""
    import yaml
    from huggingface_hub import ModelCard, parse_eval_result_entries

    (row,) = assemble_all(load_manifest(manifest), root)
    assert row.status == "assembled" and row.card == "ok", row.detail
    card = (Path(row.folder) / "README.md").read_text()
    files = sorted((Path(row.folder) / ".eval_results").glob("*.yaml"))
    values = sorted(e.value for f in files for e in parse_eval_result_entries(yaml.safe_load(f.read_text())))
    assert values == sorted(r.metric_value for r in ModelCard(card).data.eval_results or [])
    assert len(files) == row.results and all(p.relative_to(row.folder).as_posix() in row.paths for p in files)
    return card, row.results


def test_a_model_placed_at_a_manifest_path_gets_no_numbers_it_was_not_measured_at(tmp_path, caplog):
    """The committed classifier numbers belong to the weights they were measured on: another model at the same path
    is published without a model-index (and a log line), never with those numbers."""
    import json

    from rirag.io import WEIGHTS_FINGERPRINT, weights_fingerprint

    folder, manifest = _classifier_project(tmp_path)  # a tiny classifier where the trained one belongs
    committed = json.loads((tmp_path / "benchmarks/results/obligation_classifier.json").read_text())
    card, results = _published_index(tmp_path, manifest)
    assert results == 0 and "model-index" not in card and str(round(committed["accuracy"], 5)) not in card
    assert "no number measured on these weights" in caplog.text
    # the same numbers, recorded for exactly these weights, are published
    committed[WEIGHTS_FINGERPRINT] = weights_fingerprint(folder)
    (tmp_path / "benchmarks/results/obligation_classifier.json").write_text(json.dumps(committed))
    card, results = _published_index(tmp_path, manifest)
    assert results == 4 and "model-index" in card and str(committed["accuracy"]) in card
    # ... and not once the weights change again
    (folder / "model.safetensors").write_bytes(b"\2" * 4096)
    card, results = _published_index(tmp_path, manifest)
    assert results == 0 and "model-index" not in card


def test_the_artifacts_own_record_fills_the_model_index_only_for_its_weights(tmp_path):
    """Without committed numbers for these weights: the artifact's own training record (training_result.json or its
    card data) is used when it names these weights; a record of other weights is not."""
    import json

    from rirag.hub.card_data import ClassifierCard, save_card
    from rirag.io import WEIGHTS_FINGERPRINT, weights_fingerprint

    folder, manifest = _classifier_project(tmp_path, b"\1" * 4096)
    own = {"accuracy": 0.61234, "f1": 0.5, "split": "held-out", WEIGHTS_FINGERPRINT: weights_fingerprint(folder)}
    (folder / "training_result.json").write_text(json.dumps(own))
    card, results = _published_index(tmp_path, manifest)
    assert results == 2 and "0.61234" in card
    (folder / "training_result.json").write_text(json.dumps({**own, WEIGHTS_FINGERPRINT: "0" * 64}))
    assert _published_index(tmp_path, manifest)[1] == 0
    (folder / "training_result.json").unlink()
    trained = ClassifierCard(name="c", repo_id="c").with_results(own, "c", "x.json")
    save_card(trained, folder)  # the card data records the fingerprint of the weights it is saved beside
    assert json.loads((folder / "card_data.json").read_text())[WEIGHTS_FINGERPRINT] == weights_fingerprint(folder)
    card, results = _published_index(tmp_path, manifest)
    assert results == 2 and "0.61234" in card
    (folder / "model.safetensors").write_bytes(b"\3" * 4096)  # another model, the old card data beside it
    card, results = _published_index(tmp_path, manifest)
    assert results == 0 and "0.61234" not in card


def test_benchmark_rows_record_the_weights_of_each_artifact_they_name(tmp_path, monkeypatch):
    from rirag.hub.cards import collect_results
    from rirag.io import WEIGHTS_FINGERPRINT, merge_results_file, weights_fingerprint

    monkeypatch.chdir(tmp_path)
    for name in ("enc", "rr"):
        (tmp_path / "artifacts" / name).mkdir(parents=True)
        (tmp_path / "artifacts" / name / "model.safetensors").write_bytes(name.encode() * 100)
    row = {"split": "validation", "model": "artifacts/enc", "reranker": "artifacts/rr", "recall@10": 0.7}
    merge_results_file("r.json", [row], ("split",), {"command": "x"})
    written = json.loads((tmp_path / "r.json").read_text())["rows"][0][WEIGHTS_FINGERPRINT]
    assert written == {"artifacts/enc": weights_fingerprint("artifacts/enc"),
                       "artifacts/rr": weights_fingerprint("artifacts/rr")}
    assert len(collect_results("artifacts/rr", ["r.json"], fingerprint=weights_fingerprint("artifacts/rr"))) == 1
    assert collect_results("artifacts/rr", ["r.json"], fingerprint=weights_fingerprint("artifacts/enc")) == []


def test_the_weights_fingerprint_covers_the_weights_and_nothing_else(tmp_path):
    from rirag.io import weight_files, weights_fingerprint

    folder = tmp_path / "model"
    _trained_folder(folder)  # weights, configs, a card, a checkpoint, trainer states
    first = weights_fingerprint(folder)
    assert [p.as_posix() for p in weight_files(folder)] == ["model.safetensors"]
    (folder / "README.md").write_text("another card\n")
    (folder / "checkpoint-500" / "model.safetensors").write_bytes(b"\7")
    (folder / "training_args.bin").write_bytes(b"y")
    assert weights_fingerprint(folder) == first
    (folder / "model.safetensors").write_bytes(b"\1" * 2047 + b"\2")
    assert weights_fingerprint(folder) not in (first, None)
    assert weights_fingerprint(tmp_path / "nothing") is None


def test_the_demo_check_starts_the_app_as_the_cards_local_run_says():
    """The publish check reads the variables from the card's own `... python app.py` step, not from the manifest:
    a card whose local run sets none is started with none, and a card without a local run fails the check."""
    from rirag.hub.load import local_run_variables

    card = ("# demo\n\n```bash\nhf download ns/demo --repo-type space --local-dir d\ncd d && pip install -r "
            "requirements.txt && RIRAG_DEMO_GENERATOR_MODEL=ns/clf RIRAG_X='a b' python app.py\n```\n")
    assert local_run_variables(card) == {"RIRAG_DEMO_GENERATOR_MODEL": "ns/clf", "RIRAG_X": "a b"}
    assert local_run_variables(card.replace("RIRAG_DEMO_GENERATOR_MODEL=ns/clf RIRAG_X='a b' ", "")) == {}
    with pytest.raises(ValueError, match="no local run"):
        local_run_variables("# demo\n\n```python\nprint(1)\n```\n")
