"""No committed file carries an absolute path of the machine that wrote it: results, docs and code record paths
relative to where the command ran, or symbolically (``$RIRAG_DATA_DIR``); the benchmarks write them so through
:func:`rirag.io.portable_path` and :func:`rirag.io.portable_args`.

Every file ``git ls-files`` lists is read (a ``.gz`` decompressed; a file that is not UTF-8 text is skipped).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rirag.io import portable_args, portable_path

REPO = Path(__file__).resolve().parents[1]
#: An absolute path under a folder that only a particular machine has (a home, a scratch or work folder, the
#: temporary folder), or a Windows drive; not a part of a URL or of a longer relative path (``../x/tmp/``).
MACHINE_PATH = re.compile(r"(?<![\w.~$/-])/(?:work|home|root|tmp|Users|mnt|scratch|private)/"
                          r"|(?<![\w.\\])[A-Za-z]:\\\\?[\w.$-]")
#: (file, the text in it) that is not a machine path: a test's deliberately mistyped Windows output folder.
ALLOWED = {("tests/test_ingest_commands.py", "C:\\\\pra/x")}
SELF = Path(__file__).relative_to(REPO).as_posix()


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def machine_paths(text: str) -> list[str]:
    """The lines of ``text`` (stripped) that hold a machine path."""
    return [line.strip() for line in text.splitlines() if MACHINE_PATH.search(line)]


def test_no_tracked_file_holds_a_machine_path():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    found = []
    for name in filter(None, listed.decode("utf-8").split("\0")):
        if name == SELF:  # its own examples of machine paths, below
            continue
        path = REPO / name
        text = _text(path) if path.is_file() else None
        for allowed_file, allowed in ALLOWED:
            if text is not None and name == allowed_file:
                text = text.replace(allowed, "")
        found += [f"{name}: {line[:160]}" for line in machine_paths(text or "")]
    assert found == [], "absolute machine paths in tracked files:\n" + "\n".join(found)


@pytest.mark.parametrize("line", ['"data": "/work/shared/data/obliqa"', "--pra /home/me/out/pra",
                                  "python x.py --out /tmp/s11/cv.json", '"rirag": "/Users/me/rirag/src"',
                                  r'"model": "C:\\Users\\me\\models"', r"D:\data\obliqa"])
def test_a_machine_path_is_found(line):
    assert machine_paths(line) == [line]


@pytest.mark.parametrize("line", ["https://huggingface.co/tmp/work/x", "../shared/data/obliqa", "$RIRAG_DATA_DIR/x",
                                  "out/tmp/x", "../../tmp/old/src", "2 > /dev/null", "~/work/x", "a:b",
                                  r"the U.A.E:\\nSuch"])
def test_what_is_not_a_machine_path(line):
    assert machine_paths(line) == []


def test_paths_are_recorded_relative_to_the_working_folder(tmp_path, monkeypatch):
    work = tmp_path / "checkout"
    (work / "out").mkdir(parents=True)
    monkeypatch.chdir(work)
    data = tmp_path / "shared" / "data"
    assert portable_path(work / "out" / "pra") == os.path.join("out", "pra")
    assert portable_path(data) == os.path.join("..", "shared", "data")
    assert portable_path("artifacts/model") == "artifacts/model" and portable_path("org/model-id") == "org/model-id"
    argv = ["benchmarks/x.py", "--pra", str(work / "out"), f"--data={data}", "--encoders", f"{work / 'a'},org/id", "-v"]
    assert portable_args(argv) == ["benchmarks/x.py", "--pra", "out", f"--data={os.path.join('..', 'shared', 'data')}",
                                   "--encoders", "a,org/id", "-v"]
