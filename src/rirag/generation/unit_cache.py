"""What the focused answerer computes per answer unit of a corpus, cached on disk beside the corpus embeddings.

A passage's answer units are deterministic (:func:`rirag.units.split_units`), and so are a unit's embedding and
its obligation label; only the question changes between questions. :class:`UnitCache` computes them once for
every passage of a corpus (with labelled progress bars; minutes on two cores) and stores them under
:func:`rirag.retrieval.dense.cache_dir`, so that ``rirag ask`` on a warm cache encodes its question and nothing else
(and never loads the sentence splitter, NLTK, or the obligation classifier).

The units file maps the SHA-1 of each passage text to its units; each model's file holds the SHA-1 of every unit
text and one row per text. Files are keyed by what they depend on: the corpus fingerprint, the source of
:mod:`rirag.units` and :mod:`rirag.sentences` (how passages are cut), and the model (the encoder's or the obligation
classifier's fingerprint, the sequence length). A passage or text the cache lacks (a passage outside the corpus) is
computed as before, so an answer never depends on whether the cache was there (``tests/test_unit_cache.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from rirag.data import Passage
from rirag.io import atomic_write_bytes
from rirag.retrieval.dense import cache_dir, corpus_fingerprint, model_fingerprint
from rirag.units import Unit

logger = logging.getLogger(__name__)

#: Texts per step of the progress bar of a cache build (each step is one call of the computing function).
BUILD_STEP = 512

RowsFn = Callable[[list[str]], np.ndarray]


def _digest(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


def units_version() -> str:
    """A hash of the code that cuts passages into units (a change rebuilds the caches)."""
    from rirag import sentences, units

    h = hashlib.sha256()
    for module in (units, sentences):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:12]


class UnitCache:
    """The units of every passage of ``corpus`` (cut by ``units_of``: passage text -> its units, numbered as passage
    0) and, per model, a file of one row per unit text. :meth:`split` reads a passage's units from the cache;
    :meth:`cached` wraps a function over texts so that it reads rows from that model's file (built on first use) and
    computes only the texts the file lacks."""

    def __init__(self, corpus: Mapping[str, Passage], units_of: Callable[[str], Sequence[Unit]],
                 folder: str | Path | None = None):
        self.corpus = corpus
        self.units_of = units_of
        self.folder = Path(folder) if folder is not None else cache_dir()
        self._units: dict[str, list[Unit]] | None = None
        self._key: str | None = None

    def key(self) -> str:
        """The corpus and unit-cutting part of every file name."""
        if self._key is None:
            ids = list(self.corpus)
            self._key = f"{corpus_fingerprint(ids, [self.corpus[i].text for i in ids])}-{units_version()}"
        return self._key

    def units(self) -> dict[str, list[Unit]]:
        """SHA-1 (hex) of each passage text -> its units; read from the cache, else cut once (a progress bar)."""
        if self._units is None:
            path = self.folder / f"units-{self.key()}.json"
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
                self._units = {d: [Unit(*u) for u in units] for d, units in table.items()}
            except (OSError, ValueError, TypeError) as err:
                if path.exists():
                    logger.warning("ignoring cache %s (%s): rebuilding it", path, err)
                self._units = self._cut(path)
        return self._units

    def _cut(self, path: Path) -> dict[str, list[Unit]]:
        from tqdm.auto import tqdm

        table = {}
        for p in tqdm(self.corpus.values(), total=len(self.corpus), unit="passage",
                      desc=f"cutting {len(self.corpus)} passages into answer units (cached after)"):
            table[_digest(p.text).hex()] = list(self.units_of(p.text))
        data = {d: [dataclasses.astuple(u) for u in units] for d, units in table.items()}
        atomic_write_bytes(path, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        return table

    def split(self, text: str, passage: int) -> list[Unit]:
        """The units of passage ``text`` at position ``passage``: from the cache, else cut now."""
        units = self.units().get(_digest(text).hex())
        if units is None:
            units = self.units_of(text)
        return [u if u.passage == passage else dataclasses.replace(u, passage=passage) for u in units]

    def texts(self) -> list[str]:
        """Every distinct unit text of the corpus, in corpus order."""
        return list(dict.fromkeys(u.text for units in self.units().values() for u in units))

    def path(self, kind: str, model: str, *extra: str) -> Path:
        key = hashlib.sha256("|".join([self.key(), model_fingerprint(model), *extra]).encode()).hexdigest()[:20]
        return self.folder / f"{Path(model).name or 'model'}-units-{kind}-{key}.npz"

    def _build(self, fn: RowsFn, path: Path, label: str) -> tuple[np.ndarray, np.ndarray]:
        from tqdm.auto import tqdm

        texts = self.texts()
        parts = []
        with tqdm(total=len(texts), desc=f"{label} of {len(texts)} answer units (cached after)", unit="unit") as bar:
            for start in range(0, len(texts), BUILD_STEP):
                parts.append(np.asarray(fn(texts[start:start + BUILD_STEP])))
                bar.update(len(parts[-1]))
        digests = np.array([_digest(t) for t in texts], dtype="S20")
        rows = np.concatenate(parts) if parts else np.zeros((0,))
        buf = io.BytesIO()
        np.savez(buf, digests=digests, rows=rows)
        atomic_write_bytes(path, buf.getvalue())
        logger.info("answer-unit %s of %d units cached in %s", label, len(texts), path)
        return digests, rows

    def load(self, fn: RowsFn, path: Path, label: str) -> tuple[dict[bytes, int], np.ndarray]:
        """(digest -> row, rows) of ``path``, built with ``fn`` when missing or unreadable."""
        digests = rows = None
        if path.is_file():
            try:
                with np.load(path) as data:
                    digests, rows = data["digests"], data["rows"]
                logger.info("answer-unit %s from cache %s", label, path)
            except (OSError, ValueError, KeyError) as err:
                logger.warning("ignoring cache %s (%s): rebuilding it", path, err)
        if digests is None or rows is None or len(digests) != len(rows):
            digests, rows = self._build(fn, path, label)
        return {bytes(d): i for i, d in enumerate(digests)}, rows

    def cached(self, fn: RowsFn, path: Path, label: str) -> RowsFn:
        """``fn`` reading the rows of the corpus units from ``path`` (built on the first call) and computing only
        the texts not there, in one call; the rows come back in the order of the texts."""
        table: list = []

        def rows_of(texts: list[str]) -> np.ndarray:
            if not table:
                table.extend(self.load(fn, path, label))
            index, rows = table
            found = [index.get(_digest(t)) for t in texts]
            missing = [t for t, i in zip(texts, found) if i is None]
            if not missing:
                return rows[np.asarray(found, dtype=np.int64)]
            computed = np.asarray(fn(missing))
            out = np.empty((len(texts), *computed.shape[1:]), dtype=computed.dtype)
            got = iter(computed)
            for row, i in enumerate(found):
                out[row] = rows[i] if i is not None else next(got)
            return out

        return rows_of
