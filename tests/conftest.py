"""Shared fixtures: the real ObliQA folder (when ../shared/data is there) and tiny hand-built data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_OBLIQA = REPO.parent / "shared" / "data" / "obliqa"


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    path = Path(os.environ.get("RIRAG_DATA_DIR", SHARED_OBLIQA))
    if not (path / "documents").is_dir():
        pytest.skip("real ObliQA data not available")
    return path


@pytest.fixture(scope="session")
def real_obliqa(real_data_dir):
    from rirag.data.obliqa import load_obliqa

    return load_obliqa(real_data_dir)


def _passage(pid, doc, key, text):
    return {"ID": pid, "DocumentID": doc, "PassageID": key, "Passage": text}


def write_tiny_obliqa(root: Path, n_docs: int = 6) -> Path:
    """A tiny dataset in the published layout: n_docs documents, a duplicate key, an empty passage."""
    docs = root / "documents"
    docs.mkdir(parents=True)
    topics = ["capital adequacy", "anti money laundering", "client money", "market abuse", "insurance reserves",
              "fund passporting", "virtual assets", "sanctions screening"]
    dev, test = [], []
    for d in range(1, n_docs + 1):
        topic = topics[(d - 1) % len(topics)]
        recs = [
            _passage(f"d{d}-p1", d, "1.1", f"An Authorised Person must maintain {topic} records for six years."),
            _passage(f"d{d}-p2", d, "1.2", f"The Regulator may require a report on {topic} at any time."),
            _passage(f"d{d}-dup", d, "1.2", f"Guidance on {topic} reporting frequency and format."),  # duplicate key
            _passage(f"d{d}-empty", d, "2.", "   "),  # heading without body
        ]
        (docs / f"{d}.json").write_text(json.dumps(recs))
        single = {"QuestionID": f"q{d}-a", "Question": f"How long must {topic} records be kept?",
                  "Passages": [{"DocumentID": d, "PassageID": "1.1", "Passage": recs[0]["Passage"]}], "Group": 1}
        multi = {"QuestionID": f"q{d}-b", "Question": f"What may the Regulator require about {topic} reporting?",
                 "Passages": [{"DocumentID": d, "PassageID": "1.2", "Passage": recs[1]["Passage"]},
                              {"DocumentID": d, "PassageID": "1.2", "Passage": recs[2]["Passage"]}], "Group": 2}
        (dev if d % 2 else test).extend([single, multi])
    # one question spanning two documents: discarded by the leakage-free split unless both land together
    cross = {"QuestionID": "q-cross", "Question": "Which records and reports apply across rulebooks?",
             "Passages": [{"DocumentID": d, "PassageID": "1.1",
                           "Passage": json.loads((docs / f"{d}.json").read_text())[0]["Passage"]} for d in (1, 2)],
             "Group": 3}
    dev.append(cross)
    (root / "ObliQA_dev.json").write_text(json.dumps(dev))
    (root / "ObliQA_test.json").write_text(json.dumps(test))
    (root / "RIRAG_Unseen_Questions.json").write_text(json.dumps(
        [{"QuestionID": "u1", "Question": "What records must be kept about client money?"}]))
    (root / "document_map.json").write_text(json.dumps(
        {str(d): [f"DOC{d}_VER01", f"D{d}", f"Rulebook '96 number {d}"] for d in range(1, n_docs + 1)}))
    return root


@pytest.fixture(scope="session", autouse=True)
def _metric_vendored_files():
    """The metric's folder loads with ``evaluate.load("evaluate_scripts/repass")`` once its scorer is vendored beside
    it (git-ignored files written from src/, as ``make install`` and ``make publish`` write them)."""
    from rirag.hub.vendor import write_vendored

    write_vendored(Path(__file__).resolve().parents[1] / "evaluate_scripts" / "repass")


@pytest.fixture(autouse=True)
def _cache_dir_outside_the_repo(monkeypatch, tmp_path_factory):
    """rirag's cache (corpora converted to Arrow, BM25 indexes, embeddings) goes to the session's temporary folder,
    not ``.cache/`` of the working directory, unless the environment names one; tests of the default delete it."""
    if not os.environ.get("RIRAG_CACHE_DIR"):
        monkeypatch.setenv("RIRAG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rirag-cache"))


@pytest.fixture
def tiny_data_dir(tmp_path) -> Path:
    return write_tiny_obliqa(tmp_path / "obliqa")


@pytest.fixture(autouse=True)
def _fallback_default_retriever(monkeypatch):
    """Commands given no ``--retriever`` use rirag's documented fallback default, not the committed CV table's
    choice (which may need a dense encoder and a corpus embedding), and no trained ranker of the checkout's
    artifacts/; the tests of that choice pass their own table and ranker."""
    from rirag.retrieval.defaults import CV_RESULTS_ENV_VAR, RANKER_ENV_VAR

    monkeypatch.setenv(CV_RESULTS_ENV_VAR, "/nonexistent/retrieval_cv.json")
    monkeypatch.setenv(RANKER_ENV_VAR, "/nonexistent/ranker")


@pytest.fixture
def patch_everywhere(monkeypatch):
    """``patch_everywhere(module, name, replacement)``: replace ``module.name`` and every binding of the same object
    that a loaded rirag module took with ``from module import name`` at its top (monkeypatch restores them all)."""
    import sys

    def patch(module, name, replacement):
        original = getattr(module, name)
        for loaded in list(sys.modules.values()):
            if getattr(loaded, "__name__", "").startswith("rirag") and getattr(loaded, name, None) is original:
                monkeypatch.setattr(loaded, name, replacement)
        assert getattr(module, name) is replacement

    return patch
