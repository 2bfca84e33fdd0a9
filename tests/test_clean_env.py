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
