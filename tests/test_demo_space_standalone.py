"""The demo Space as pushed: its upload folder, assembled by `make publish`, started from outside the checkout (the
working directory a temporary folder, PYTHONPATH cleared) with the Hub simulated by a local Hugging Face cache read
offline: the data set RegNLP/ObliQA and the models the manifest's Space variables name (Hub ids) are tiny stand-ins
in that cache. ``warm()`` loads everything, and one question is answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _scoring_fixtures import OBLIGATION_LABELS, tiny_bert
from _standalone import hub_cache
from conftest import write_tiny_obliqa
from tiny_encoder import tiny_sentence_transformer

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "hub_push" / "manifest.yaml"

START = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import app, rirag
backend = sys.modules["backend"].Backend().warm()
result = backend.answer("How long must records be kept?")
print("RESULT " + json.dumps({"rirag": rirag.__file__, "answer": result["answer"], "generator": result["generator"],
                              "passages": len(result["passages"]), "citations": len(result["citations"])}))
'''


def test_the_assembled_demo_space_starts_and_answers_from_outside_the_checkout(tmp_path):
    from rirag.data.obliqa import HUB_DATASET_ID
    from rirag.hub.assemble import assemble_all
    from rirag.hub.manifest import load_manifest

    manifest = load_manifest(MANIFEST)
    manifest.out_dir = str(tmp_path / "hub")
    (row,) = assemble_all(manifest, REPO, only=["demo"])
    assert row.status == "assembled", row.detail
    entry = next(e for e in manifest.entries if e.name == "demo")
    ids = {e.name: manifest.repo_id(e) for e in manifest.entries}
    variables = {k: ids.get(v, v) for k, v in entry.space_variables.items()}  # as push_all sets them on the Space
    classifier, encoder = variables["RIRAG_DEMO_GENERATOR_MODEL"], variables["RIRAG_DEMO_GENERATOR_ENCODER"]
    assert "/" in classifier and not Path(classifier).exists() and "/" in encoder  # Hub ids, not folders
    cache = tmp_path / "hub-cache"
    hub_cache(cache, {classifier: tiny_bert("obligation", OBLIGATION_LABELS, seed=3),
                      encoder: tiny_sentence_transformer(tmp_path / "encoder")})
    hub_cache(cache, {HUB_DATASET_ID: write_tiny_obliqa(tmp_path / "obliqa")}, kind="datasets")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RIRAG_DATA_DIR")
           and not k.startswith("RIRAG_DEMO_")}
    env.update(variables, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf-home"),
               HF_DATASETS_CACHE=str(tmp_path / "datasets-cache"), GRADIO_ANALYTICS_ENABLED="False")
    (tmp_path / "start.py").write_text(START)
    done = subprocess.run([sys.executable, str(tmp_path / "start.py"), row.folder], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert result["rirag"].startswith(str(Path(row.folder).resolve()))  # the Space's own rirag, not the checkout's
    assert result["generator"] == f"focused ({classifier}), following cross-references"  # on by default, as rirag ask
    assert result["passages"] >= 1 and result["answer"].strip()
