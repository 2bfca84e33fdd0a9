"""The RePASs metric as a stranger meets it: ``evaluate.load("<namespace>/repass")`` in a fresh virtual environment
holding only evaluate, transformers and torch (and their dependencies; no rirag), the Space served by a local
stand-in for the Hub and the models read offline from a Hugging Face cache. What is tested is the folder `make
publish` assembles."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from _scoring_fixtures import tiny_models
from _standalone import LocalHub, fresh_venv, hub_cache, snippet_driver

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "hub_push" / "manifest.yaml"

#: Runs each snippet in a fresh namespace (a ``>>>`` block as a doctest) and prints what it computed.
DRIVER = snippet_driver('{"results": namespace.get("results"), "metric": type(namespace.get("repass")).__name__}')


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The metric's upload folder as `make publish` assembles it (the manifest's own namespace), and its repo id."""
    from rirag.hub.assemble import assemble_all
    from rirag.hub.manifest import load_manifest

    manifest = load_manifest(MANIFEST)
    manifest.out_dir = str(tmp_path_factory.mktemp("hub"))
    (row,) = assemble_all(manifest, REPO, only=["repass-metric"])
    assert row.status == "assembled", row.detail
    judge = next(e for e in manifest.entries if e.name == "nli-judge")
    return Path(row.folder), row.repo_id, manifest.repo_id(judge)


@pytest.fixture(scope="module")
def stranger(tmp_path_factory):
    """A fresh virtual environment with evaluate, transformers and torch only; rirag and punkt are not importable."""
    python = fresh_venv(tmp_path_factory.mktemp("venv") / "env", ["evaluate", "transformers", "torch"])
    probe = ("import importlib.util as u, json; print(json.dumps({m: u.find_spec(m) is not None for m in "
             "('evaluate', 'transformers', 'torch', 'rirag', 'punkt', 'nltk')}))")
    done = subprocess.run([str(python), "-c", probe], env=_clean_env(), cwd=tmp_path_factory.mktemp("cwd"),
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {"evaluate": True, "transformers": True, "torch": True, "rirag": False,
                                       "punkt": False, "nltk": False}
    return python


def _clean_env(**extra) -> dict:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    return {**keep, "TOKENIZERS_PARALLELISM": "false", **extra}


def _run_snippets(python, snippets, folder, repo_id, cache, tmp_path):
    """Run the snippets in the stranger's environment against the local Hub; (stdout, stderr, rc, files fetched)."""
    paths = []
    for i, code in enumerate(snippets):
        path = tmp_path / f"snippet{i}.py"
        path.write_text(code)
        paths.append(str(path))
    (tmp_path / "driver.py").write_text(DRIVER)
    work = tmp_path / "cwd"
    work.mkdir()
    with LocalHub({repo_id: folder}) as hub:
        env = _clean_env(HOME=str(tmp_path), HF_HOME=str(tmp_path / "hf-home"), HF_HUB_CACHE=str(cache),
                         HF_HUB_OFFLINE="1", HF_ENDPOINT=hub.url, HF_UPDATE_DOWNLOAD_COUNTS="0")
        done = subprocess.run([str(python), str(tmp_path / "driver.py"), *paths], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        return done, hub.fetched(repo_id)


def test_every_snippet_of_the_card_runs_verbatim_without_rirag(published, stranger, tmp_path):
    from rirag.hub.load import code_blocks
    from rirag.hub.vendor import vendor_sources
    from rirag.scoring.constants import (
        HUB_NLI_JUDGE,
        OFFICIAL_COVERAGE_MODEL,
        OFFICIAL_NLI_MODEL,
        OFFICIAL_OBLIGATION_MODEL,
    )
    from rirag.scoring.repass import RePASsScorer

    folder, repo_id, judge = published
    assert judge == HUB_NLI_JUDGE  # the judge the metric's messages offer is the one hub_push publishes
    card = (folder / "README.md").read_text()
    snippets = [code for lang, code in code_blocks(card) if lang == "python"]
    assert len(snippets) == 3 and f'evaluate.load("{repo_id}")' in snippets[0] and "import evaluate" in snippets[0]
    assert all("import evaluate" in code and repo_id in code for code in snippets)
    assert f'nli_model="{judge}"' in snippets[1] and "artifacts/" not in card.split("## Modes")[0]
    models = tiny_models()
    cache = hub_cache(tmp_path / "hub-cache", {
        OFFICIAL_NLI_MODEL: models["nli_model"], OFFICIAL_COVERAGE_MODEL: models["coverage_model"],
        OFFICIAL_OBLIGATION_MODEL: models["obligation_model"], judge: models["nli_model"]})
    done, fetched = _run_snippets(stranger, snippets, folder, repo_id, cache, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.split("RESULTS ", 1)[1])
    assert [o.get("metric") for o in out] == ["Repass", "Repass", None]
    assert out[2]["doctest"] == [4, 0]  # the card's doctest: 4 examples, none failed
    # evaluate fetched the script and the vendored files, once each, and nothing else
    assert fetched[0] == "repass.py" and sorted(fetched[1:]) == sorted(vendor_sources())
    # the scores are rirag's own scorer's on the same models
    first = out[0]["results"]
    predictions = ["Firms must keep records for six years."]
    passages = [["An Authorised Person must maintain records for at least six years."]]
    assert f"predictions={predictions!r}".replace("'", '"') in snippets[0].replace("\n", "").replace("    ", "")
    expected = RePASsScorer(**models, device="cpu", show_progress=False).score(predictions, passages).to_dict()
    assert {k: v for k, v in first.items() if k != "signature"} == {k: v for k, v in expected.items()
                                                                   if k != "signature"}
    assert f"nli={OFFICIAL_NLI_MODEL}|obligation={OFFICIAL_OBLIGATION_MODEL}" in first["signature"]
    assert out[1]["results"] is None  # the second snippet loads only


def test_a_model_that_cannot_be_loaded_is_named_by_its_evaluate_option(published, stranger, tmp_path):
    from rirag.scoring.constants import HUB_NLI_JUDGE, OFFICIAL_NLI_MODEL, OFFICIAL_OBLIGATION_MODEL

    folder, repo_id, _ = published
    models = tiny_models()
    cache = hub_cache(tmp_path / "hub-cache", {OFFICIAL_OBLIGATION_MODEL: models["obligation_model"]})
    snippet = (f'import evaluate\nrepass = evaluate.load("{repo_id}", coverage_model="./no-such-model")\n'
               'try:\n    repass.compute(predictions=["A firm must keep records."], passages=[["Keep records."]])\n'
               'except FileNotFoundError as err:\n    results = str(err)\n')
    done, _ = _run_snippets(stranger, [snippet], folder, repo_id, cache, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    message = json.loads(done.stdout.split("RESULTS ", 1)[1])[0]["results"]
    assert len(message.splitlines()) == 1
    assert f"nli_model={OFFICIAL_NLI_MODEL!r}" in message and "coverage_model='./no-such-model'" in message
    assert "obligation_model=" not in message.split(":")[0]  # the cached classifier loaded
    assert f'nli_model="{HUB_NLI_JUDGE}"' in message and "evaluate.load(" in message
    assert "make " not in message and "python train" not in message and "--" not in message


def test_the_vendored_files_are_written_from_src_and_all_fetched(tmp_path):
    """The vendored files rirag.hub.vendor writes from src/ (into a copy of the metric's folder, as assembly does) are
    the ones the script imports relatively at its top level, which is what evaluate reads to fetch them
    (evaluate.loading.get_imports)."""
    import shutil

    from evaluate.loading import get_imports

    from rirag.hub.vendor import METRIC_SCRIPT, vendored_files, write_vendored

    folder = tmp_path / "repass"
    shutil.copytree(REPO / "evaluate_scripts" / "repass", folder, ignore=shutil.ignore_patterns("vendored_*"))
    write_vendored(folder)
    expected = vendored_files(folder)
    assert [name for name, text in expected.items() if (folder / name).read_text(encoding="utf-8") != text] == []
    assert {p.name for p in folder.glob("vendored_*.py")} == set(expected) - {METRIC_SCRIPT}
    internal = {name for kind, name, _, _ in get_imports(str(folder / METRIC_SCRIPT)) if kind == "internal"}
    assert internal == {Path(n).stem for n in expected if n != METRIC_SCRIPT}
    libraries = {name for kind, name, _, _ in get_imports(str(folder / METRIC_SCRIPT)) if kind == "library"}
    assert libraries <= {"dataclasses", "datasets", "evaluate"}
    for name, text in expected.items():  # the vendored files never import punkt or rirag
        for node in ast.walk(ast.parse(text)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not [m for m in modules if m.split(".")[0] in ("rirag", "punkt")], (name, modules)
