"""A card's ``bash`` block with ``rirag retrieve`` (the learned-fusion ranker's), as the publish check runs it.

- in a clean environment (:func:`run_retrieve_as_written`, ``hub_push/push.py --clean-env``): the block as written,
  with ``bash``, in a clean environment of what the card installs (:class:`rirag.hub.clean_env.CleanRun`: the ``hf``
  and ``rirag`` commands on PATH), two things stood in for because there is no Hub here: each
  ``hf download REPO --local-dir DIR`` line is rewritten to copy the local folder of REPO (its assembled upload
  folder) to DIR (the only line rewritten), and every other Hub id with a local copy is replaced by it; the ObliQA
  data and rirag's caches are reached through ``$RIRAG_DATA_DIR`` and ``$RIRAG_CACHE_DIR`` (the checking process's
  cache folder, as an absolute path, when unset: content-keyed embeddings are reused, not recomputed). The file
  the command writes (``--out``) must hold a ranking;
- in this process (:func:`run_retrieve_snippet`, the default): its library equivalent
  (:func:`rirag.retrieval.registry.build_retriever`) on a few probe passages.

Python snippets and Spaces are :mod:`rirag.hub.load`'s.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Mapping

from rirag.constants import CACHE_ENV_VAR, DEFAULT_CACHE_DIR
from rirag.data.obliqa import DATA_ENV_VAR, Passage
from rirag.hub.clean_env import CleanRun
from rirag.retrieval.registry import RetrieverSpec, build_retriever

#: Probe passages and question for the ranker's library equivalent of `rirag retrieve` (no corpus download).
PROBE_PASSAGES = (
    (1, "1.1", "A Relevant Person must keep records of customer due diligence for at least six years."),
    (1, "1.2", "An Authorised Person must appoint a Money Laundering Reporting Officer."),
    (2, "2.1", "A Fund Manager must ensure that the Fund's assets are held by an Eligible Custodian."),
    (2, "2.2", "The Eligible Custodian must keep the Fund Property separate from its own assets."),
)
PROBE_QUESTION = "How long must customer due diligence records be kept?"

#: A quoted Hub id in a Python snippet (``"org/name"``).
HUB_ID = re.compile(r"""["']([A-Za-z0-9][\w.-]*/[\w.-]+)["']""")


class SnippetSkipped(Exception):
    """Something the snippet needs is not on this machine (not a failure of the artifact)."""


def _logical_lines(code: str) -> list[str]:
    return code.replace("\\\n", "").splitlines()  # a continuation, as bash reads it


def _retrieve_command(code: str) -> tuple[list[str], dict[str, str]]:
    """The ``rirag retrieve`` argv of a bash snippet and the ``hf download REPO --local-dir DIR`` folders
    (DIR -> REPO)."""
    downloads, argv = {}, []
    for line in _logical_lines(code):
        words = shlex.split(line, comments=True)
        if words[:2] == ["hf", "download"] and "--local-dir" in words:
            downloads[words[words.index("--local-dir") + 1]] = words[2]
        elif words[:2] == ["rirag", "retrieve"]:
            argv = words[2:]
    return argv, downloads


def _options(argv: list[str]) -> tuple[str, dict[str, str]]:
    """The ``--retriever`` (default bm25) and the ``--option key=value`` pairs of a ``rirag retrieve`` argv."""
    name, options = "bm25", {}
    for flag, value in zip(argv, argv[1:]):
        if flag == "--retriever":
            name = value
        elif flag == "--option":
            key, _, val = value.partition("=")
            options[key] = val
    return name, options


def _local_encoders(encoders: str, ids: Mapping[str, str]) -> str:
    """``encoders`` (comma-separated) with each Hub id replaced by its local copy; one with neither skips."""
    local = []
    for enc in encoders.split(","):
        path = ids.get(enc, enc)
        if path == enc and "/" in enc and not Path(enc).exists():
            raise SnippetSkipped(f"encoder {enc} is neither assembled nor on this machine")
        local.append(path)
    return ",".join(local)


def run_retrieve_snippet(code: str, repo_id: str, ids: Mapping[str, str]) -> str:
    """The library equivalent of the card's ``rirag retrieve`` on the probe passages: the ranker and its encoders
    loaded, one question ranked."""
    argv, downloads = _retrieve_command(code)
    if not argv:
        raise ValueError("the snippet has no `rirag retrieve` command")
    folders = {local: ids.get(repo, "") for local, repo in downloads.items()}
    name, options = _options(argv)
    if "ranker" in options:
        ranker = options["ranker"]
        options["ranker"] = folders.get(ranker) or ids.get(ranker) or ranker
        if downloads.get(ranker) and not folders.get(ranker):
            raise SnippetSkipped(f"{downloads[ranker]} is not assembled here")
    if "ranker" in options and not options.get("encoders"):  # the encoders the ranker names (Hub ids once published)
        from rirag.retrieval.learned_fusion import load_ranker_config

        saved = load_ranker_config(options["ranker"])["encoders"]
        if any(enc in ids for enc in saved):
            options["encoders"] = ",".join(saved)
    if options.get("encoders"):
        options["encoders"] = _local_encoders(options["encoders"], ids)
    corpus = {f"probe-{i}": Passage(f"probe-{i}", d, pid, text) for i, (d, pid, text) in enumerate(PROBE_PASSAGES)}
    retriever = build_retriever(corpus, RetrieverSpec(name, options=options))
    run = retriever.search({"probe": PROBE_QUESTION}, k=len(corpus))
    if not run.get("probe"):
        raise ValueError("the retriever ranked no probe passage")
    return f"{type(retriever).__name__}, {len(run['probe'])} passages ranked"


def prepared_bash(code: str, ids: Mapping[str, str]) -> str:
    """The card's bash block as the clean run runs it: each ``hf download REPO --local-dir DIR`` line rewritten to
    ``cp -R <local copy of REPO> DIR`` (no Hub here; a REPO without a local copy skips), every other line as written
    with each Hub id that has a local copy replaced by it (an unquoted word, or a part of ``key=a,b``)."""
    out = []
    for line in _logical_lines(code):
        words = shlex.split(line, comments=True)
        if words[:2] == ["hf", "download"] and "--local-dir" in words:
            if words[2] not in ids:
                raise SnippetSkipped(f"{words[2]} is neither assembled nor on this machine")
            out.append(shlex.join(["cp", "-R", ids[words[2]], words[words.index("--local-dir") + 1]]))
            continue
        for hub_id in sorted(ids, key=len, reverse=True):
            quoted = shlex.quote(ids[hub_id])
            line = re.sub(rf"(?<![\w./-]){re.escape(hub_id)}(?![\w./-])", lambda _, q=quoted: q, line)
        out.append(line)
    return "\n".join(out) + "\n"


def _check_rirag_inputs(argv: list[str]) -> None:
    """Skip a command that needs what is not here: a Hub id as a model or encoder (no local copy), or ObliQA from
    the Hub (no ``--data`` and no ``$RIRAG_DATA_DIR``)."""
    for flag, value in zip(argv, argv[1:]):
        if flag in ("--model", "--option"):
            for part in value.rpartition("=")[2].split(","):
                if "/" in part and not Path(part).is_absolute() and HUB_ID.fullmatch(repr(part)):
                    raise SnippetSkipped(f"{part} is neither assembled nor on this machine")
    if "--data" not in argv and not os.environ.get(DATA_ENV_VAR):
        raise SnippetSkipped(f"the command reads ObliQA from the Hub; set ${DATA_ENV_VAR} to a local copy")


def _absolute(value: str) -> str:
    return str(Path(value).resolve()) if Path(value).exists() else value


def run_retrieve_as_written(code: str, clean: CleanRun, ids: Mapping[str, str]) -> str:
    """Run the card's bash block as written (:func:`prepared_bash`) in the clean environment ``clean``, ObliQA and
    rirag's caches reached through ``$RIRAG_DATA_DIR`` and ``$RIRAG_CACHE_DIR`` (absolute; the cache defaults to
    this process's); what the ``--out`` file holds. A step that fails is a RuntimeError with the end of its
    stderr; an ``--out`` file with no ranking, a ValueError."""
    code = prepared_bash(code, ids)
    argv, _ = _retrieve_command(code)
    if not argv or "--out" not in argv[:-1]:
        raise ValueError("the card's bash block has no `rirag retrieve ... --out FILE`")
    _check_rirag_inputs(argv)
    extra = {CACHE_ENV_VAR: str(Path(os.environ.get(CACHE_ENV_VAR) or DEFAULT_CACHE_DIR).resolve())}
    if os.environ.get(DATA_ENV_VAR):
        extra[DATA_ENV_VAR] = _absolute(os.environ[DATA_ENV_VAR])
    steps = clean.run_bash(code, extra)
    out = argv[argv.index("--out") + 1]
    rows = [line.split() for line in (steps / out).read_text(encoding="utf-8").splitlines()] \
        if (steps / out).is_file() else []
    questions = {row[0] for row in rows if len(row) == 6}
    if not questions:
        raise ValueError(f"`rirag retrieve` wrote no ranking to {out}")
    return f"`rirag retrieve` as written: {len(questions)} questions ranked into {out}, in a clean environment"
