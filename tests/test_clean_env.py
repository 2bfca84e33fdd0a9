"""The publish check's clean environment (issue 68: "the publish check runs each card's local steps in a clean
environment the way the card says"): what a card installs is read from its ``pip install`` lines, and its snippet
runs with only that (rirag.hub.clean_env; ``hub_push/push.py --clean-env``)."""

from __future__ import annotations

import json

import pytest

from rirag.hub.clean_env import CleanRun, card_installs, clean_venv, run_snippet
from rirag.hub.load import prepared_snippet

CARD = """# a model

```bash
pip install "rirag[train] @ git+https://example.org/rirag.git" 'sentence-transformers>=5'
```

Run it on your own machine:

```bash
hf download org/demo --repo-type space --local-dir demo
cd demo && pip install -r requirements.txt && RIRAG_X=1 python app.py
```
"""


def test_the_cards_pip_lines_and_its_requirements_file_are_what_it_installs(tmp_path):
    (tmp_path / "requirements.txt").write_text("# the Space's own\ngradio>=5,<7\n\nnumpy>=1.24  # arrays\n")
    assert card_installs(CARD, tmp_path) == ["rirag[train]", "sentence-transformers>=5", "gradio>=5,<7",
                                             "numpy>=1.24"]
    with pytest.raises(ValueError, match="-r requirements.txt, which the repo does not hold"):
        card_installs(CARD, tmp_path / "elsewhere")


def test_a_snippet_runs_with_only_what_the_card_installs(tmp_path):
    folder = tmp_path / "upload"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"labels": 2}))
    card = "```bash\npip install packaging\n```\n"
    snippet = ("import json\nfrom pathlib import Path\nfrom packaging.version import Version\n"
               "config = json.loads(Path('org/tiny', 'config.json').read_text())\nprint(Version('1.0'))\n")
    code, target = prepared_snippet(snippet, "org/tiny", {"org/tiny": str(folder)})
    assert target == "config" and str(folder) in code
    clean = CleanRun.for_card(card, folder, tmp_path / "work")
    assert clean.run_snippet(code, target) == "dict"
    for missing in ("rirag", "numpy"):  # rirag is not installed by the card, nor anything else it does not name
        with pytest.raises(RuntimeError, match=f"in a clean environment: ModuleNotFoundError: No module named "
                                               f"'{missing}'"):
            run_snippet(f"import {missing}\n", None, clean.python, tmp_path / "work2")
    assert "PYTHONPATH" not in clean.environ() and clean.environ()["HF_HUB_OFFLINE"] == "1"


def test_a_requirement_outside_the_installed_version_is_refused(tmp_path):
    with pytest.raises(ValueError, match="packaging<1 is asked for"):
        clean_venv(tmp_path / "env", ["packaging<1"])


def test_the_environment_has_the_console_scripts_of_what_it_installs(tmp_path):
    """A card's shell steps call `hf` and `rirag` as commands: the environment holds them, as pip writes them."""
    import importlib.metadata as metadata
    import subprocess

    from rirag.hub.clean_env import clean_environ

    python = clean_venv(tmp_path / "env", ["huggingface_hub"])
    done = subprocess.run(["hf", "version"], env=clean_environ(python, tmp_path / "home"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and metadata.version("huggingface_hub") in done.stdout, done.stderr[-2000:]
    assert not (python.parent / "rirag").exists()  # not installed, so not on its PATH


def test_a_space_gets_its_requirements_and_the_gradio_its_card_pins(tmp_path):
    from rirag.hub.clean_env import space_requirements

    (tmp_path / "README.md").write_text("---\nsdk: gradio\nsdk_version: 6.31.0\n---\n# a Space\n")
    (tmp_path / "requirements.txt").write_text("# what it imports\ngradio>=5,<7\nnumpy>=1.24  # arrays\n")
    assert space_requirements(tmp_path) == ["numpy>=1.24", "gradio==6.31.0"]
    (tmp_path / "README.md").write_text("---\nsdk: gradio\n---\n# a Space\n")
    with pytest.raises(ValueError, match="pins no sdk_version"):
        space_requirements(tmp_path)


def test_the_rankers_shell_block_is_run_as_written_but_for_its_download(tmp_path):
    """Only the `hf download` line is rewritten (a copy of the local folder); Hub ids with a local copy are replaced
    where they stand; one without a local copy skips the check."""
    from rirag.hub.card_steps import SnippetSkipped, prepared_bash

    code = ("hf download org/lf --local-dir lf\nrirag retrieve --retriever learned-fusion --option ranker=lf \\\n"
            "    --option encoders=org/enc-a,org/enc --split test --out run.trec\n")
    ids = {"org/lf": "/up/lf", "org/enc": "/up/enc", "org/enc-a": "/up/my enc"}
    assert prepared_bash(code, ids) == (
        "cp -R /up/lf lf\nrirag retrieve --retriever learned-fusion --option ranker=lf     "
        "--option encoders='/up/my enc',/up/enc --split test --out run.trec\n")
    with pytest.raises(SnippetSkipped, match="org/lf is neither assembled"):
        prepared_bash(code, {})
