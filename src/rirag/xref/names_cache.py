"""The document names of a corpus, as references are resolved against them, kept under the cache folder
(``$RIRAG_CACHE_DIR/xref/<key>.json``) for a corpus loaded from its folder.

Resolving the references of a few passages on the fly reads only their documents, but first builds the names of
every document (titles from the document map, their aliases and the tables that find them in a text): 0.2-0.3 s at
11,585 documents, every ``rirag ask``. The file holds the titles, the aliases and
:meth:`rirag.xref.index.CorpusIndex.name_tables`. Its key is the corpus's fingerprint (its folder and its document
files' names, sizes and modification times: :func:`rirag.data.passage_store.fingerprint`), the document map's size
and modification time, and the source of the modules that build the names: an edit to any of them is a new key.
A file that cannot be read is built again, with a warning; one that cannot be written is not kept."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Mapping

from rirag.constants import CACHE_ENV_VAR, DEFAULT_CACHE_DIR
from rirag.data.obliqa import DOCUMENT_MAP_FILE
from rirag.data.passage_store import corpus_key

logger = logging.getLogger(__name__)

#: Modules whose code decides the names (their source is part of the key).
_SOURCES = ("rirag.xref.index", "rirag.xref.numbers", "rirag.xref.passages", "rirag.data.obliqa")


def _source_digest() -> bytes:
    import importlib.util

    h = hashlib.sha256()
    for name in _SOURCES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        h.update(Path(origin).read_bytes() if origin and os.path.isfile(origin) else name.encode())
    return h.digest()


def names_path(root: Path, corpus: Mapping | None) -> Path | None:
    """Where the names of the corpus at ``root`` are kept; None when ``corpus`` is not a loaded folder's table."""
    key = corpus_key(corpus) if corpus is not None else None
    if key is None:
        return None
    h = hashlib.sha256(b"rirag-xref-names-v1\x00" + key.encode() + b"\x00" + _source_digest())
    document_map = root / DOCUMENT_MAP_FILE
    try:
        st = document_map.stat()
        h.update(f"\x00{st.st_size}\x01{st.st_mtime_ns}".encode())
    except OSError:
        h.update(b"\x00no map")
    return Path(os.environ.get(CACHE_ENV_VAR) or DEFAULT_CACHE_DIR) / "xref" / f"{h.hexdigest()[:24]}.json"


def load_names(path: Path | None) -> tuple[tuple[dict[int, str], dict[str, str]], dict] | None:
    """((titles, aliases), name tables) kept at ``path``; None when there is none or it cannot be read."""
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        titles = {int(k): str(v) for k, v in data["titles"].items()}
        aliases = {str(k): str(v) for k, v in data["aliases"].items()}
        tables = data["tables"]
        if not all(isinstance(tables[k], (dict if k == "alias" else list)) for k in ("alias", "codes", "titles",
                                                                                      "titles_norm")):
            raise ValueError("a name table of the wrong type")
        return (titles, aliases), tables
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("ignoring %s (%s): building the document names again", path, err)
        return None


def save_names(path: Path | None, titles: Mapping[int, str], aliases: Mapping[str, str], tables: Mapping) -> None:
    """Keep the names at ``path`` (written to a temporary file and renamed into place)."""
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # ASCII JSON: any str round-trips, a lone surrogate of a document map included
        tmp.write_text(json.dumps({"titles": {str(k): v for k, v in titles.items()}, "aliases": dict(aliases),
                                   "tables": dict(tables)}), encoding="ascii")
        os.replace(tmp, path)
    except (OSError, ValueError) as err:
        logger.warning("document names not cached in %s: %s", path, err)
        tmp.unlink(missing_ok=True)
