"""benchmarks/serve_load.py's CPU accounting: the CPU the server (another process, read from /proc) and the clients
(this process) spent per call answered, the figure that holds whatever else a shared machine runs; what a row says
the answerer read obligations with."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from _scripts import load_script

serve_load = load_script("benchmarks/serve_load.py", "serve_load_bench")


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_the_cpu_time_of_another_process_and_of_this_one():
    child = subprocess.Popen([sys.executable, "-c", "sum(i * i for i in range(3_000_000)); input()"],
                             stdin=subprocess.PIPE, text=True)
    try:
        mine = serve_load._cpu_seconds()
        sum(i * i for i in range(1_000_000))
        assert serve_load._cpu_seconds() > mine  # this process's own work counts
        first = serve_load._cpu_seconds(child.pid)
        assert first is not None and first >= 0
    finally:
        child.communicate("\n", timeout=60)
    assert serve_load._cpu_seconds(child.pid) is None  # a process that ended has no CPU time to read


def test_cpu_per_call_in_milliseconds():
    assert serve_load._cpu_ms_per_call(1.0, 3.0, 4) == 500.0
    assert serve_load._cpu_ms_per_call(None, 3.0, 4) is None and serve_load._cpu_ms_per_call(1.0, 3.0, 0) is None


def test_a_row_says_what_the_answerer_read_obligations_with(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no artifacts/obligation_classifier here: the server's answerer uses the cues
    assert serve_load.obligation_source(None) == "modal-cues"
    assert serve_load.obligation_source("modal-cues") == "modal-cues"
    (tmp_path / "artifacts" / "obligation_classifier").mkdir(parents=True)
    assert serve_load.obligation_source(None) == "classifier artifacts/obligation_classifier"
    assert serve_load.obligation_source("org/classifier") == "classifier org/classifier"  # a Hub id
