"""The walk of a ``rirag`` command through the library, traced as it runs: how many steps a reader follows from the
command into the code, through how many files, how often control comes back into ``rirag/cli/``, and how often a
lower layer calls up into a higher one (issue 63: "``rirag submit`` walks ≤ 31 steps and enters ``cli/`` ≤ 3 times;
``rirag data ingest`` never returns to ``cli/``").

Usage:
    python benchmarks/code_walk.py --label submit --version branch [--depth 2] [--results FILE] -- \\
        submit --retriever bm25 --data CORPUS --questions QUESTIONS.json --out OUT
    python benchmarks/code_walk.py --label ingest --version base --commit d6b25bf -- data ingest PAGES --out OUT

Python 3.11 or later (``tomllib``, ``co_qualname``). The command runs in this process (``rirag.cli.main``) under
:func:`sys.setprofile`, with whatever ``rirag`` is first on ``PYTHONPATH`` (so the same script traces another
checkout: ``PYTHONPATH=OTHER/src``). Only the main thread is traced. What is counted, from the first call of the
command's function (``args.func``) on:

* a **call**: a rirag function calling a rirag function of another module (file). Frames of other code in between
  (the standard library, a callback run by ``map``) are transparent: the caller is the nearest rirag frame.
  Comprehension and generator-expression frames count as the function that holds them (a generator expression
  handed to another module and consumed there is no call); a module's body, run on its first import, is not
  counted.
* the **hops** of a frame: how many calls across modules lie between it and the command's function (0).
* **steps**: the distinct calls (caller function → callee function, counted once however often they happen) whose
  callee lies within ``--depth`` hops of the command: what a reader follows from the command down ``--depth``
  files. ``steps_by_depth`` gives the count at each depth, and ``all`` without a limit.
* **files**: the distinct modules those steps touch (callers and callees).
* **climbs**: the distinct calls, at any depth, from a module of a lower layer into one of a higher layer (a callback;
  the layers are the import-linter contract "Layers point down" of the traced checkout's ``pyproject.toml``).
* **cli entries**: the distinct transitions, at any depth, from code outside ``rirag/cli/`` into it: a call into it
  (``calls_into_cli``: a callback) or a return to it (``returns_into_cli``: the command taking control back from a
  library function it called). A command that hands over once and prints has one return and no call.

The counts of one (``--label``, ``--version``) are merged into ``--results`` (other entries kept), with the steps,
climbs and cli entries themselves, and one summary row each; command arguments that are absolute paths are written
as ``<name>``. The committed results (issue 63) trace ``submit --retriever bm25`` on the ingested PRA rulebook with
the first 3 questions of ``ukfin_dev_questions.json``, and ``data ingest --questions`` (the same 3) of 2 PRA pages,
at d6b25bf (``git archive``, ``--commit``) and after the answering job.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

RESULTS = Path(__file__).resolve().parent / "results" / "code_walk.json"
FOLDED = ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")


@dataclass
class Config:
    command: list[str]
    label: str
    version: str
    depth: int = 2
    results: str = str(RESULTS)
    commit: str | None = None  # default: the traced checkout's git HEAD


@dataclass
class Walk:
    """The trace of one command (see the module)."""

    package: Path
    layers: dict[str, int]
    entry: object
    started: bool = False
    live: dict[int, tuple[str, str, int]] = field(default_factory=dict)  # id(frame) -> (module, function, hops or -1)
    calls: dict[tuple[str, str], int] = field(default_factory=dict)  # (caller, callee) -> fewest hops of the callee
    into_cli: set = field(default_factory=set)
    back_to_cli: set = field(default_factory=set)
    _modules: dict[str, str | None] = field(default_factory=dict)

    def module(self, filename: str) -> str | None:
        if filename not in self._modules:
            try:
                self._modules[filename] = Path(filename).resolve().relative_to(self.package).as_posix()
            except ValueError:
                self._modules[filename] = None
        return self._modules[filename]

    def layer(self, module: str) -> int | None:
        return self.layers.get(module.split("/")[0].removesuffix(".py"))

    def _caller(self, frame):
        back = frame.f_back
        while back is not None and id(back) not in self.live:
            back = back.f_back
        return self.live.get(id(back)) if back is not None else None

    def profile(self, frame, event, arg) -> None:
        if event not in ("call", "return"):
            return
        module = self.module(frame.f_code.co_filename)
        if module is None:
            return
        if event == "return":
            me = self.live.pop(id(frame), None)
            caller = self._caller(frame)
            if me and caller and me[2] >= 0 and not me[0].startswith("cli/") and caller[0].startswith("cli/"):
                self.back_to_cli.add((f"{me[0]}:{me[1]}", f"{caller[0]}:{caller[1]}"))
            return
        name = frame.f_code.co_qualname
        folded = frame.f_code.co_name in FOLDED  # resumed by whoever consumes it: no call of its own
        for suffix in FOLDED:
            name = name.removesuffix(f".<locals>.{suffix}").removesuffix(suffix) or name
        if not self.started:
            if frame.f_code is not self.entry:
                return
            self.started = True
            self.live[id(frame)] = (module, name, 0)
            return
        caller = self._caller(frame)
        if caller is None:  # outside the command (after it returned)
            return
        if name == "<module>" or caller[2] < 0:  # a module's first import, and what it runs: not the walk
            self.live[id(frame)] = (module, name, -1)
            return
        hops = caller[2] + (module != caller[0])
        self.live[id(frame)] = (module, name, hops)
        if module != caller[0] and not folded:
            key = (f"{caller[0]}:{caller[1]}", f"{module}:{name}")
            self.calls[key] = min(hops, self.calls.get(key, hops))
            if module.startswith("cli/") and not caller[0].startswith("cli/"):
                self.into_cli.add(key)

    def climbs(self) -> list[str]:
        out = []
        for caller, callee in self.calls:
            up, down = self.layer(callee.split(":")[0]), self.layer(caller.split(":")[0])
            if up is not None and down is not None and up < down:
                out.append(f"{caller} -> {callee}")
        return sorted(out)

    def summary(self, depth: int) -> dict:
        steps = sorted((c, e) for (c, e), hops in self.calls.items() if hops <= depth)
        files = {name.split(":")[0] for step in steps for name in step}
        by_depth = defaultdict(int)
        for hops in self.calls.values():
            by_depth[hops] += 1
        cumulative, total = {}, 0
        for d in sorted(by_depth):
            total += by_depth[d]
            cumulative[str(d)] = total
        entries = sorted(f"call {a} -> {b}" for a, b in self.into_cli) + \
            sorted(f"return {a} -> {b}" for a, b in self.back_to_cli)
        return {"depth": depth, "steps": len(steps), "files": len(files), "cli_entries": len(entries),
                "calls_into_cli": len(self.into_cli), "returns_into_cli": len(self.back_to_cli),
                "climbs": len(self.climbs()), "steps_by_depth": {**cumulative, "all": len(self.calls)},
                "files_list": sorted(files), "step_list": [f"{a} -> {b}" for a, b in steps],
                "climb_list": self.climbs(), "cli_entry_list": entries}


def _layers(pyproject: Path) -> dict[str, int]:
    """Top-level package or module -> its layer's position (0: the top), from the "Layers point down" contract."""
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c.get("type") == "layers" and c.get("containers") == ["rirag"])
    return {name.strip(): i for i, layer in enumerate(layers) for name in layer.split("|")}


def _public(argument: str) -> str:
    """An absolute path as ``<name>``: no machine path in the results."""
    return f"<{Path(argument).name}>" if os.path.isabs(argument) else argument


def trace(config: Config) -> dict:
    import rirag
    from rirag.cli import build_parser, main

    package = Path(rirag.__file__).resolve().parent
    args = build_parser().parse_args(config.command)
    walk = Walk(package, _layers(package.parents[1] / "pyproject.toml"), args.func.__code__)
    sys.setprofile(walk.profile)
    try:
        status = main(config.command)
    finally:
        sys.setprofile(None)
    commit = config.commit or subprocess.run(["git", "-C", str(package), "rev-parse", "--short", "HEAD"],
                                             capture_output=True, text=True).stdout.strip()
    return {"command": "rirag " + " ".join(_public(a) for a in config.command), "commit": commit,
            "exit_status": status, **walk.summary(config.depth)}


def main(config: Config) -> dict:
    result = trace(config)
    path = Path(config.results)
    data = json.loads(path.read_text()) if path.exists() else {}
    data["definition"] = "benchmarks/code_walk.py (module docstring)"
    walks = data.setdefault("walks", {})
    walks.setdefault(config.label, {})[config.version] = result
    fields = ("commit", "depth", "steps", "files", "cli_entries", "calls_into_cli", "climbs")
    data["summary"] = [{"walk": label, "version": version, **{k: r[k] for k in fields},
                        "steps_at_any_depth": r["steps_by_depth"]["all"], "command": r["command"]}
                       for label, versions in walks.items() for version, r in versions.items()]
    data = {"definition": data["definition"], "summary": data["summary"], "walks": walks}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    keys = ("steps", "files", "cli_entries", "calls_into_cli", "returns_into_cli", "climbs", "steps_by_depth")
    print(json.dumps({k: result[k] for k in ("command", "commit", "exit_status", *keys)}, ensure_ascii=False))
    return result


def _parse() -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", required=True, help="the walk's name in the results (e.g. submit, ingest)")
    parser.add_argument("--version", required=True, help="which code it traced (e.g. base, branch)")
    parser.add_argument("--depth", type=int, default=Config.depth, help="steps: callees within this many hops")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--commit", default=None, help="the traced code's commit (default: its checkout's git HEAD; "
                                                       "give it for an exported tree)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the rirag arguments")
    ns = parser.parse_args()
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("give the rirag command after --")
    return Config(command, ns.label, ns.version, ns.depth, ns.results, ns.commit)


if __name__ == "__main__":
    main(_parse())
