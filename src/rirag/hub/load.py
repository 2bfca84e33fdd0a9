"""Load an assembled Hub upload folder exactly as its card's usage snippet says, the repo id replaced by the folder.

:func:`check_loads` runs after :func:`rirag.hub.assemble.assemble_all` (``make publish`` reports each load in its
table) and
in the round-trip tests on tiny artifacts. Per card:

- a ``python`` block naming the repo id (``load_dataset(...)``, ``SentenceTransformer(...)``, ``CrossEncoder(...)``,
  ``pipeline(...)``, ``PeftModel.from_pretrained(base, ...)``, ``evaluate.load(...)``) is run up to the last statement
  that names the repo, every manifest repo id in it replaced by that entry's upload folder and every Hub id the
  manifest has a local copy of (``aliases``) by the local copy;
- a ``bash`` block with ``rirag retrieve --retriever learned-fusion --option ranker=DIR`` (the ranker) is run
  through its library equivalent on a few probe passages (:func:`rirag.hub.card_steps.run_retrieve_snippet`);
- a builder-only dataset (its source text may not be redistributed) is checked to hold its card alone, whose
  ``bash`` block builds the data (``rirag data ingest`` / ``rirag data xref``);
- a Space (the demo and the metric's) is started as the Hub starts it (:func:`running_space`: a copy of its upload
  folder named ``app``, ``python app.py``, Gradio on 127.0.0.1) after its card's Gradio pin is checked against the
  Gradio that runs it (:func:`check_space_sdk`); the demo, with the variables its card's local run sets
  (:func:`local_run_variables`; Hub ids mapped to local copies), answers one question over HTTP, the metric scores
  one answer over HTTP when its models are here. Nothing is written into the upload folder.

With ``clean`` (``hub_push/push.py --clean-env``), nothing of a card runs in this process
(:mod:`rirag.hub.clean_env`: a clean environment has no rirag unless the card installs it): each Python snippet and
the demo's local run run in a clean environment of what the card installs; the ranker's ``bash`` block runs as
written there, with ``bash`` (:func:`rirag.hub.card_steps.run_retrieve_as_written`: only its ``hf download`` line
is stood in for, by a copy of the assembled folder), and its ``--out`` file must hold a ranking; the metric Space
starts in a clean environment of what the Hub installs for it (its ``requirements.txt`` and the Gradio its card
pins: :func:`rirag.hub.clean_env.space_requirements`), the Hub's models read from this machine's Hugging Face cache.

Each check runs in a fresh ``datasets`` cache and gives ``ok (...)``, ``failed: ...`` or ``skipped: ...``
(something it needs is neither assembled nor on this machine, e.g. a base model only the Hub has).
"""

from __future__ import annotations

import ast
import contextlib
import logging
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

from rirag.hub.card_steps import HUB_ID, PROBE_QUESTION, SnippetSkipped, run_retrieve_as_written, run_retrieve_snippet
from rirag.hub.cards import code_blocks
from rirag.hub.clean_env import CleanRun
from rirag.hub.manifest import builder_only_extras
from rirag.models import resolve_model

logger = logging.getLogger(__name__)

OK, FAILED, SKIPPED = "ok", "failed", "skipped"
NOT_ASSEMBLED = f"{SKIPPED}: not assembled"
#: Seconds an app Space may take to import and build its app in a fresh interpreter.
APP_TIMEOUT_S = 600

def local_ids(manifest, root: str | Path = ".") -> dict[str, str]:
    """Hub id -> local folder for everything the round trip may use offline: every assembled upload folder (by its
    repo id) and every alias whose local copy is here (a wheel-shipped model, a downloaded base model)."""
    root = Path(root).resolve()
    ids = {}
    for local, hub_id in (manifest.aliases or {}).items():
        try:
            path = resolve_model(str(local))
        except (ImportError, FileNotFoundError):
            continue
        if path != str(local) or (root / local).exists():
            ids[hub_id] = path if path != str(local) else str(root / local)
    for entry in manifest.entries:
        folder = root / manifest.out_dir / entry.repo
        if folder.is_dir():
            ids[manifest.repo_id(entry)] = str(folder)
    return ids


def _replace_ids(code: str, ids: Mapping[str, str]) -> str:
    for hub_id in sorted(ids, key=len, reverse=True):
        for quote in ('"', "'"):
            code = code.replace(f"{quote}{hub_id}{quote}", repr(ids[hub_id]))
    return code


def _up_to_last_load(code: str, repo_id: str) -> str:
    """The snippet's statements up to the last one that names ``repo_id`` (the load), imports included."""
    tree = ast.parse(code)
    lines = code.splitlines()
    last = None
    for node in tree.body:
        if repo_id in (ast.get_source_segment(code, node) or ""):
            last = node
    if last is None:
        raise ValueError(f"the snippet does not name {repo_id}")
    return "\n".join(lines[:last.end_lineno]) + "\n"


def prepared_snippet(code: str, repo_id: str, ids: Mapping[str, str]) -> tuple[str, str | None]:
    """A card's Python snippet up to its load, ids replaced, and the name its load binds (``None``: none); a Hub id
    without a local copy skips it (:class:`SnippetSkipped`)."""
    code = _up_to_last_load(code, repo_id)
    tree = ast.parse(code)
    target = None  # what the first statement naming the repo binds: the dataset, the model, the metric
    first = next(node for node in tree.body if repo_id in (ast.get_source_segment(code, node) or ""))
    if isinstance(first, ast.Assign) and isinstance(first.targets[0], ast.Name):
        target = first.targets[0].id
    code = _replace_ids(code, ids)
    remote = [m for m in HUB_ID.findall(code) if not Path(m).exists()]
    if remote:
        raise SnippetSkipped(f"needs {', '.join(sorted(set(remote)))} from the Hub (no local copy)")
    return code, target


def run_python_snippet(code: str, repo_id: str, ids: Mapping[str, str], clean: CleanRun | None = None) -> str:
    """Run a card's Python snippet up to its load, ids replaced; the type of what the load returned. ``clean``: in
    a clean environment of what the card installs (:mod:`rirag.hub.clean_env`), else in this process."""
    code, target = prepared_snippet(code, repo_id, ids)
    if clean is not None:
        return f"{clean.run_snippet(code, target)}, in a clean environment"
    namespace: dict = {"__name__": "__rirag_card_snippet__"}
    exec(compile(code, f"<usage snippet of {repo_id}>", "exec"), namespace)  # noqa: S102 (our own cards' code)
    value = namespace.get(target) if target else None
    return type(value).__name__ if value is not None else "ran"


def space_environment(variables: Mapping[str, str], ids: Mapping[str, str]) -> dict[str, str]:
    """A Space's variables as the check runs them: each Hub id with a local copy (an assembled upload folder, an
    alias) replaced by it; a Hub id with neither, and not in the Hugging Face cache, skips the check."""
    from huggingface_hub import try_to_load_from_cache

    env = {}
    for key, value in variables.items():
        value = ids.get(value, value)
        if HUB_ID.fullmatch(repr(value)) and not Path(value).exists() \
                and not isinstance(try_to_load_from_cache(value, "config.json"), str):
            raise SnippetSkipped(f"{key}={value} is neither assembled nor in the local Hugging Face cache")
        env[key] = value
    return env


def local_run_variables(card: str) -> dict[str, str]:
    """The variables an app Space card's local run sets (``NAME=value ... python app.py`` in a shell block): what a
    user who follows the card gets, which the check starts the app with. A card without such a step is an error."""
    for lang, code in code_blocks(card):
        for line in code.splitlines() if lang in ("bash", "sh", "shell") else []:
            for step in line.split("&&"):
                words = shlex.split(step)
                if words[-2:] == ["python", "app.py"]:
                    return dict(w.split("=", 1) for w in words[:-2] if w.partition("=")[0].isidentifier())
    raise ValueError("the card has no local run (a shell step ending in `python app.py`)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call_gradio(url: str, api_name: str, inputs: list, timeout: float = APP_TIMEOUT_S) -> list:
    """One call of a running Gradio app's HTTP API (``POST /gradio_api/call/<api>``, then its event stream): the
    outputs; a RuntimeError with the app's message when it answers with an error."""
    import json
    import urllib.request

    base = f"{url.rstrip('/')}/gradio_api/call/{api_name.strip('/')}"
    request = urllib.request.Request(base, data=json.dumps({"data": inputs}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (127.0.0.1 only)
        event = json.loads(answer.read())["event_id"]
    with urllib.request.urlopen(f"{base}/{event}", timeout=timeout) as stream:  # noqa: S310
        kind = None
        for raw in stream:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and kind in ("complete", "error"):
                data = line.split(":", 1)[1].strip()
                if kind == "error":
                    raise RuntimeError(f"the app answered an error: {data}")
                return json.loads(data)
    raise RuntimeError(f"{api_name}: the event stream ended without a result")


#: Where a Space's files are on the Space (its working directory): its folder's name is ``app``, not the repo's.
SPACE_FOLDER = "app"


@contextlib.contextmanager
def running_space(folder: str | Path, variables: Mapping[str, str] | None = None, python: str | None = None,
                  timeout: float = APP_TIMEOUT_S, environ: Mapping[str, str] | None = None) -> Iterator[str]:
    """A Space started as the Hub starts it: a copy of its upload folder named ``app`` (so nothing the run writes,
    caches included, lands in the upload folder, and code that relies on its folder's name fails here as there),
    ``python app.py`` (``python``: this interpreter by default) with the Space's ``variables`` over ``environ``
    (default: this process's environment, PYTHONPATH left out), Gradio on a free port of 127.0.0.1. Yields its URL
    once it answers; stopped after."""
    import shutil
    import time
    import urllib.error
    import urllib.request

    with tempfile.TemporaryDirectory(prefix="rirag-space-") as tmp:
        app = Path(tmp) / SPACE_FOLDER
        shutil.copytree(folder, app)
        port = free_port()
        env = {k: v for k, v in (os.environ if environ is None else environ).items() if k != "PYTHONPATH"}
        env.update(variables or {})
        env.update(GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port), GRADIO_ANALYTICS_ENABLED="False")
        log = Path(tmp) / "space.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([python or sys.executable, "app.py"], cwd=str(app), env=env, stdout=out,
                                    stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
                    raise RuntimeError(f"the Space exited ({proc.returncode}) before serving: "
                                       f"{lines[-1] if lines else 'no output'}")
                try:
                    with urllib.request.urlopen(f"{url}/gradio_api/info", timeout=5):  # noqa: S310
                        break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the Space did not serve within {timeout:.0f} s") from None
                    time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ask_demo(url: str, question: str = PROBE_QUESTION) -> str:
    """The demo Space's answer to one question over HTTP (its ``/ask`` API): what the check reports."""
    answer, cited, used = call_gradio(url, "ask", [question])
    if "rirag-answer" not in answer and "rirag-message" not in answer:
        raise RuntimeError(f"the demo answered no answer and no message: {answer[:200]!r}")
    return f"answered over HTTP ({cited.count('rirag-passage')} passage(s) cited)"


def score_metric(url: str) -> str:
    """The metric Space's score of one answer over HTTP (its ``/score`` API)."""
    import json

    (text,) = call_gradio(url, "score", ["Firms must keep records for six years.",
                                         "An Authorised Person must maintain records for at least six years."])
    result = json.loads(text)
    if result.get("n_scored") != 1 or not isinstance(result.get("repass"), float):
        raise RuntimeError(f"the metric Space scored nothing: {result}")
    return f"scored over HTTP (RePASs {result['repass']})"


def check_space_sdk(folder: str | Path) -> str:
    """The Gradio a Space's card pins (``sdk_version``): the same major version as the Gradio this check starts the
    app with, and inside the folder's ``requirements.txt`` gradio range if it has one; the pin, or a
    RuntimeError saying which."""
    import gradio
    from huggingface_hub import SpaceCard
    from packaging.requirements import Requirement
    from packaging.version import Version

    pinned = SpaceCard.load(Path(folder) / "README.md").data.to_dict().get("sdk_version")
    if not pinned:
        raise RuntimeError("the card pins no sdk_version: the Hub would start the app with a Gradio nobody checked")
    if Version(str(pinned)).major != Version(gradio.__version__).major:
        raise RuntimeError(f"the card pins gradio {pinned}, but the check runs gradio {gradio.__version__}: the "
                           "Space would start with a Gradio this check never ran")
    requirements = Path(folder) / "requirements.txt"
    for line in requirements.read_text().splitlines() if requirements.is_file() else []:
        line = line.split("#", 1)[0].strip()
        if line and Requirement(line).name.lower() == "gradio" and str(pinned) not in Requirement(line).specifier:
            raise RuntimeError(f"the card pins gradio {pinned}, outside requirements.txt's {line}")
    return str(pinned)


def metric_model_variables() -> dict[str, str]:
    """The metric Space's variables that replace its default models (``evaluate_scripts/repass/app.py``'s
    ``MODEL_VARIABLES``), with the default model each replaces."""
    from rirag.scoring.constants import OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL, OFFICIAL_OBLIGATION_MODEL

    return {"REPASS_NLI_MODEL": OFFICIAL_NLI_MODEL, "REPASS_COVERAGE_MODEL": OFFICIAL_COVERAGE_MODEL,
            "REPASS_OBLIGATION_MODEL": OFFICIAL_OBLIGATION_MODEL}


def metric_space_variables(ids: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The metric Space's variables for the check (each default model with a local copy: that copy) and the default
    models that are neither assembled nor in the Hugging Face cache (the Space then starts, but scores nothing)."""
    from huggingface_hub import try_to_load_from_cache

    variables, absent = {}, []
    for name, model in metric_model_variables().items():
        if model in ids:
            variables[name] = ids[model]
        elif not isinstance(try_to_load_from_cache(model, "config.json"), str):
            absent.append(model)
    return variables, sorted(set(absent))


def run_space(entry_kind: str, folder: str | Path, variables: Mapping[str, str] | None = None,
              python: str | None = None, ask: bool = True, timeout: float = APP_TIMEOUT_S,
              environ: Mapping[str, str] | None = None) -> str:
    """Start a Space as the Hub does (:func:`running_space`) after checking its Gradio pin (:func:`check_space_sdk`),
    and (``ask``) get an answer (the demo) or a score (the metric) over HTTP."""
    pinned = check_space_sdk(folder)
    with running_space(folder, variables, python, timeout, environ) as url:
        if not ask:
            return f"gradio {pinned}, started as {SPACE_FOLDER}/, served"
        done = ask_demo(url) if entry_kind == "app-space" else score_metric(url)
    return f"gradio {pinned}, started as {SPACE_FOLDER}/, {done}"


#: ``datasets``' cache settings (environment variable -> ``datasets.config`` attribute) that one check replaces.
DATASETS_CACHE_SETTINGS = {"HF_DATASETS_CACHE": "HF_DATASETS_CACHE",
                           "HF_DATASETS_DOWNLOADED_DATASETS_PATH": "DOWNLOADED_DATASETS_PATH",
                           "HF_DATASETS_EXTRACTED_DATASETS_PATH": "EXTRACTED_DATASETS_PATH"}


@contextlib.contextmanager
def fresh_datasets_cache() -> Iterator[Path]:
    """A new, empty ``datasets`` cache for the duration (environment and ``datasets.config``, restored after).

    ``datasets`` caches a local folder's build by the folder's name, not its content: without this, loading an upload
    folder can return an earlier load of another folder of the same name (a test fixture's ``leakage-free``)."""
    import datasets.config as config

    saved_env = {k: os.environ.get(k) for k in DATASETS_CACHE_SETTINGS}
    saved = {attr: getattr(config, attr) for attr in DATASETS_CACHE_SETTINGS.values()}
    with tempfile.TemporaryDirectory(prefix="rirag-datasets-cache-") as tmp:
        root = Path(tmp)
        paths = {"HF_DATASETS_CACHE": root, "DOWNLOADED_DATASETS_PATH": root / config.DOWNLOADED_DATASETS_DIR,
                 "EXTRACTED_DATASETS_PATH": root / config.DOWNLOADED_DATASETS_DIR / config.EXTRACTED_DATASETS_DIR}
        try:
            for env, attr in DATASETS_CACHE_SETTINGS.items():
                os.environ[env] = str(paths[attr])
                setattr(config, attr, paths[attr])
            yield root
        finally:
            for attr, value in saved.items():
                setattr(config, attr, value)
            for env, value in saved_env.items():
                if value is None:
                    os.environ.pop(env, None)
                else:
                    os.environ[env] = value


#: The commands a builder-only card's ``bash`` block builds its data with.
BUILD_COMMANDS = ("rirag data ingest", "rirag data xref")


def check_builder_card(card: str, folder: str | Path) -> str:
    """A builder-only upload (the source text may not be redistributed): the folder holds the card and no data, and
    the card's ``bash`` block builds the data (``rirag data ingest`` / ``rirag data xref``)."""
    extra = builder_only_extras(Path(folder))
    if extra:
        return f"{FAILED}: builder-only, yet the folder holds {', '.join(extra[:5])}"
    commands = [line.strip() for lang, code in code_blocks(card) if lang in ("bash", "sh", "shell")
                for line in code.splitlines() if line.strip().startswith(BUILD_COMMANDS)]
    if not commands:
        return (f"{FAILED}: builder-only, but the card has no bash block that builds the data "
                f"({' / '.join(BUILD_COMMANDS)})")
    return f"{OK} (builder only: the card alone, no data; builds with {'; '.join(c.split(' --')[0] for c in commands)})"


def check_load(entry, manifest, folder: str | Path, ids: Mapping[str, str], clean: bool = False) -> str:
    """``ok (...)``, ``failed: ...`` or ``skipped: ...`` for one upload folder (see the module docstring), loaded in
    a fresh ``datasets`` cache (:func:`fresh_datasets_cache`); ``clean``: each card's steps (Python snippet, the
    ranker's shell block, the demo's local run) in a clean environment of what the card installs, and the metric
    Space in one of what the Hub installs for it (:class:`CleanRun`), not in this process."""
    with fresh_datasets_cache(), tempfile.TemporaryDirectory(prefix="rirag-clean-") as work:
        return _check_load(entry, manifest, folder, ids, Path(work) if clean else None)


def _check_load(entry, manifest, folder: str | Path, ids: Mapping[str, str], work: Path | None = None) -> str:
    folder = Path(folder)
    repo_id = manifest.repo_id(entry)
    ids = {**ids, repo_id: str(folder.resolve())}  # absolute: a clean run's snippet runs in a folder of its own
    try:
        card = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").exists() else ""
        clean = CleanRun.for_card(card, folder, work) if work is not None else None
        if entry.kind == "app-space":  # started as the card's local run says, with the variables it sets there
            variables = space_environment(local_run_variables(card), ids)
            if clean is not None:
                said = run_space(entry.kind, folder, variables, str(clean.python), environ=clean.environ())
                return f"{OK} ({said}, in a clean environment)"
            return f"{OK} ({run_space(entry.kind, folder, variables)})"
        if getattr(entry, "builder_only", False):
            return check_builder_card(card, folder)
        blocks = [(lang, code) for lang, code in code_blocks(card) if repo_id in code]
        for lang, code in blocks:
            if lang == "python" and entry.kind == "metric-space":
                loaded = run_python_snippet(code, repo_id, ids, clean)
                return f"{OK} ({loaded}; Space: {_start_metric_space(entry.kind, folder, ids, work)})"
            if lang == "python":
                return f"{OK} ({run_python_snippet(code, repo_id, ids, clean)})"
            if lang in ("bash", "sh", "shell") and "rirag retrieve" in code:
                said = run_retrieve_as_written(code, clean, ids) if clean else run_retrieve_snippet(code, repo_id, ids)
                return f"{OK} ({said})"
        return f"{FAILED}: the card has no usage snippet that loads {repo_id}"
    except SnippetSkipped as why:
        return f"{SKIPPED}: {why}"
    except Exception as err:  # the report names what went wrong; the log keeps the trace
        logger.debug("loading %s failed", folder, exc_info=True)
        message = " ".join(str(err).split())
        return f"{FAILED}: {type(err).__name__}: {message[:300]}"


def _start_metric_space(kind: str, folder: Path, ids: Mapping[str, str], work: Path | None) -> str:
    """The metric Space started (:func:`run_space`), scoring when its models are here; ``work``: in a clean
    environment of what the Hub installs for it (:meth:`CleanRun.for_space`), the Hub's models from this machine's
    Hugging Face cache."""
    from huggingface_hub import constants

    variables, absent = metric_space_variables(ids)
    why = f"; no score: {', '.join(absent)} neither assembled nor cached" if absent else ""
    if work is None:
        return f"{run_space(kind, folder, variables, ask=not absent)}{why}"
    space = CleanRun.for_space(folder, work)
    environ = {**space.environ(), "HF_HUB_CACHE": constants.HF_HUB_CACHE}
    return f"{run_space(kind, folder, variables, str(space.python), ask=not absent, environ=environ)}, in a clean " \
        f"environment{why}"


def check_loads(manifest, rows: list, root: str | Path = ".", clean: bool = False) -> list:
    """Fill each assembled row's ``load``; a missing or broken row gets ``skipped: not assembled``; ``clean``: each
    card's steps in a clean environment (:func:`check_load`)."""
    ids = local_ids(manifest, root)
    entries = {e.name: e for e in manifest.entries}
    for row in rows:
        if row.status != "assembled" or not row.folder:
            row.load = NOT_ASSEMBLED
            continue
        row.load = check_load(entries[row.name], manifest, row.folder, ids, clean)
        logger.info("%s: load %s", row.name, row.load)
    return rows
