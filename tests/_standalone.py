"""What a stranger has: a fresh virtual environment without rirag, and the Hub simulated locally.

- :func:`fresh_venv`: a new virtual environment (no pip) whose site-packages holds only the named distributions and
  their dependencies, as symlinks into this interpreter's site-packages (about a second, no download; rirag is
  not among them, and PYTHONPATH is cleared where it runs).
- :class:`LocalHub`: an HTTP server answering the Hub's ``/spaces/<ns>/<name>/resolve/main/<file>`` from local folders,
  which is how ``evaluate`` 0.4 fetches a Space's metric script (``HF_ENDPOINT`` points at it; evaluate keeps its own
  download cache and does not read huggingface_hub's); it records every request.
- :func:`hub_cache`: an ``HF_HUB_CACHE`` laid out as huggingface_hub leaves it (``models--org--name/refs/main`` ->
  ``snapshots/<commit>/``), read with ``HF_HUB_OFFLINE=1`` (how transformers, sentence-transformers and
  ``snapshot_download`` find models).
"""

from __future__ import annotations

import hashlib
import http.server
import importlib.metadata as metadata
import shutil
import threading
import venv
from pathlib import Path
from typing import Iterable, Mapping

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from rirag.hub.clean_env import clean_venv

COMMIT = "0" * 40


def requirement_closure(roots: Iterable[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``roots`` need, their dependencies included (extras left out)."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found[name] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def fresh_venv(dest: Path, distributions: Iterable[str]) -> Path:
    """A virtual environment at ``dest`` holding only ``distributions`` and their dependencies; its python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(dest)
    site = next(dest.glob("lib/python3*/site-packages"))
    for dist in requirement_closure(distributions).values():
        base = Path(dist.locate_file(""))
        tops = {f.parts[0] for f in dist.files or []}
        for top in sorted(tops):
            if top in ("..", "__pycache__") or top.endswith(".pth") or not (base / top).exists():
                continue
            if not (site / top).exists():
                (site / top).symlink_to(base / top)
    return dest / "bin" / "python"


class LocalHub:
    """The Hub's resolve endpoint for Spaces, served from local folders: ``{"ns/name": folder}``."""

    def __init__(self, spaces: Mapping[str, str | Path]):
        self.spaces = {k: Path(v) for k, v in spaces.items()}
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _body(self) -> bytes | None:
                hub.requests.append((self.command, self.path))
                parts = self.path.split("?")[0].strip("/").split("/")
                if len(parts) < 6 or parts[0] != "spaces" or parts[3] != "resolve" or parts[4] != "main":
                    return None  # only the main branch exists (evaluate asks for a v<version> tag first)
                folder = hub.spaces.get(f"{parts[1]}/{parts[2]}")
                path = folder.joinpath(*parts[5:]) if folder else None
                return path.read_bytes() if path and path.is_file() else None

            def _head(self, body: bytes | None) -> None:
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Length", str(0 if body is None else len(body)))
                if body is not None:
                    self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest() + '"')
                self.end_headers()

            def do_HEAD(self):  # noqa: N802 - http.server's name
                self._head(self._body())

            def do_GET(self):  # noqa: N802
                body = self._body()
                self._head(body)
                if body is not None:
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "LocalHub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fetched(self, space: str) -> list[str]:
        """The files of ``space`` fetched (GET) from the main branch, in order."""
        prefix = f"/spaces/{space}/resolve/main/"
        return [p[len(prefix):] for m, p in self.requests if m == "GET" and p.startswith(prefix)]


def hub_cache(cache: Path, repos: Mapping[str, str | Path], kind: str = "models") -> Path:
    """Copies of local folders in ``cache`` as huggingface_hub's cache holds downloaded repos (``kind``: models,
    spaces, datasets): ``<kind>--org--name/snapshots/<commit>/`` and ``refs/main``."""
    for repo_id, folder in repos.items():
        repo = cache / f"{kind}--{repo_id.replace('/', '--')}"
        shutil.copytree(folder, repo / "snapshots" / COMMIT, dirs_exist_ok=True)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(COMMIT)
    return cache


class HubServer:
    """A local stand-in for the Hub serving whole repositories from folders: ``{(kind, repo_id): folder}``, kind
    ``model``, ``dataset`` or ``space``. It answers what huggingface_hub, transformers, sentence-transformers,
    datasets and evaluate ask of the Hub with ``HF_ENDPOINT`` pointing at it: file resolution (``resolve/main`` and
    ``resolve/<commit>``, with the commit and ETag headers), repo info (``/api/<kind>s/<id>[/revision/<rev>]``), the
    tree listing and paths-info of the file system API. Only 127.0.0.1; every request is recorded."""

    PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}

    def __init__(self, repos: Mapping[tuple[str, str], str | Path]):
        import json
        import urllib.parse

        self.repos = {key: Path(folder) for key, folder in repos.items()}
        self.requests: list[tuple[str, str, int]] = []
        hub = self

        def files_of(folder: Path) -> list[str]:
            return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())

        def entry(folder: Path, rel: str) -> dict:
            path = folder / rel
            if path.is_dir():
                return {"type": "directory", "path": rel, "oid": COMMIT}
            return {"type": "file", "path": rel, "size": path.stat().st_size,
                    "oid": hashlib.sha1(path.read_bytes()).hexdigest()}

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _route(self) -> tuple[int, bytes, dict]:
                url = urllib.parse.urlsplit(self.path)
                parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
                query = urllib.parse.parse_qs(url.query)
                if parts[0] == "api" and len(parts) >= 4 and parts[1] in ("models", "datasets", "spaces"):
                    kind, repo = parts[1][:-1], f"{parts[2]}/{parts[3]}"
                    folder = hub.repos.get((kind, repo))
                    rest = parts[4:]
                    if folder is None:
                        return 404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}
                    if not rest or rest[0] == "revision":
                        if rest and rest[1:] and rest[1] not in ("main", COMMIT):
                            return 404, b'{"error": "Revision not found"}', {"X-Error-Code": "RevisionNotFound"}
                        info = {"id": repo, "sha": COMMIT, "private": False, "disabled": False, "gated": False,
                                "siblings": [{"rfilename": f} for f in files_of(folder)],
                                "lastModified": "2026-01-01T00:00:00.000Z"}
                        return 200, json.dumps(info).encode(), {"Content-Type": "application/json"}
                    if rest[0] == "tree" and len(rest) >= 2 and rest[1] in ("main", COMMIT):
                        base = "/".join(rest[2:])
                        start = folder / base if base else folder
                        if not start.is_dir():
                            return 404, b'{"error": "not found"}', {"X-Error-Code": "EntryNotFound"}
                        walk = start.rglob("*") if query.get("recursive", ["false"])[0].lower() == "true" \
                            else start.iterdir()
                        rows = [entry(folder, p.relative_to(folder).as_posix()) for p in sorted(walk)]
                        return 200, json.dumps(rows).encode(), {"Content-Type": "application/json"}
                    if rest[0] == "paths-info" and len(rest) >= 2 and rest[1] in ("main", COMMIT):
                        length = int(self.headers.get("Content-Length") or 0)
                        body = self.rfile.read(length).decode() if length else ""
                        if self.headers.get("Content-Type", "").startswith("application/json"):
                            paths = json.loads(body or "{}").get("paths", [])
                        else:
                            paths = urllib.parse.parse_qs(body).get("paths", [])
                        rows = [entry(folder, p.strip("/")) for p in paths if (folder / p.strip("/")).exists()]
                        return 200, json.dumps(rows).encode(), {"Content-Type": "application/json"}
                    return 404, b'{"error": "unknown endpoint"}', {}
                for kind, prefix in hub.PREFIX.items():
                    head = prefix.rstrip("/").split("/") if prefix else []
                    if parts[:len(head)] != head:
                        continue
                    rest = parts[len(head):]
                    if len(rest) >= 5 and rest[2] == "resolve" and (kind, f"{rest[0]}/{rest[1]}") in hub.repos:
                        if rest[3] not in ("main", COMMIT):
                            return 404, b"", {"X-Error-Code": "RevisionNotFound"}
                        path = hub.repos[(kind, f"{rest[0]}/{rest[1]}")].joinpath(*rest[4:])
                        if not path.is_file():
                            return 404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}
                        body = path.read_bytes()
                        return 200, body, {"X-Repo-Commit": COMMIT,
                                           "ETag": '"' + hashlib.sha256(body).hexdigest() + '"'}
                return 404, b"", {"X-Error-Code": "RepoNotFound"}

            def _answer(self, send_body: bool) -> None:
                status, body, headers = self._route()
                hub.requests.append((self.command, self.path, status))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def do_HEAD(self):  # noqa: N802 - http.server's name
                self._answer(False)

            def do_GET(self):  # noqa: N802
                self._answer(True)

            def do_POST(self):  # noqa: N802
                self._answer(True)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "HubServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def missed(self) -> list[str]:
        """The requests answered 404 (what a client asked that this stand-in, or the repo, lacks)."""
        return [f"{m} {p}" for m, p, status in self.requests if status == 404]


#: What ``pip install REQUIREMENTS`` would give, made offline from this interpreter's distributions: the library's
#: (what ``hub_push/push.py --clean-env`` runs each card in), named as these tests use it.
venv_from_requirements = clean_venv


#: Runs each snippet file named on its command line in a fresh namespace (a ``>>>`` block as a doctest) and prints
#: ``RESULTS`` with, per snippet, the doctest's tries and failures or ``REPORT`` (an expression over ``namespace``).
_SNIPPET_DRIVER = r'''
import doctest, json, sys
out = []
for path in sys.argv[1:]:
    code = open(path).read()
    if code.lstrip().startswith(">>>"):
        runner = doctest.DocTestRunner()
        runner.run(doctest.DocTestParser().get_doctest(code, {}, path, path, 0))
        out.append({"doctest": [runner.tries, runner.failures]})
        continue
    namespace = {"__name__": "__main__"}
    exec(compile(code, path, "exec"), namespace)
    out.append(REPORT)
print("RESULTS " + json.dumps(out))
'''


def snippet_driver(report: str) -> str:
    """The snippet-running script, reporting ``report`` (a Python expression over ``namespace``) per snippet."""
    return _SNIPPET_DRIVER.replace("REPORT", report)
