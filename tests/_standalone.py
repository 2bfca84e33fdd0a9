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
