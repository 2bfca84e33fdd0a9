"""The corpus on disk as Arrow: a folder's ``documents/*.json`` converted once to an Arrow IPC file under the cache
folder, keyed by a fingerprint of those files (names, sizes, modification times: no text is read to compute it), and
memory-mapped on later runs; :class:`PassageTable` is a ``Mapping[str, Passage]`` over it that materialises a
:class:`Passage` only when one is asked for (``table[pid]``), with its ids at hand without touching any text.

The conversion reads every file with the loader's checks (its errors name file, record and field), so a cache
exists only for a corpus that loads. It is written to a temporary file and renamed into place: a partial file is
never taken for a whole one. A cached file that cannot be opened, or whose schema or fingerprint is not the
expected one, is rebuilt with a warning. A file edited in place changes its size or modification time, and so the
fingerprint (an edit that keeps both, e.g. ``touch -d`` back to the old time with the same length, is not seen). A
file changed while it is converted is not cached. The check of a cached file is structural (Arrow's footer, schema
and buffer sizes, the fingerprint in its metadata): bytes overwritten inside it, the length kept, are not detected.
"""

from __future__ import annotations

import hashlib
import logging
import os
from bisect import bisect_left, bisect_right
from collections.abc import ItemsView, ValuesView
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from rirag.constants import CACHE_ENV_VAR, DEFAULT_CACHE_DIR
from rirag.errors import DataError

logger = logging.getLogger(__name__)

#: Bumped when the file layout below changes: an older cache is then never read.
STORE_VERSION = "3"
#: Records per Arrow batch (several document files in one): Arrow's string kernels pay a cost per batch (a regular
#: expression compiled for each), a scan of a million passages in 11.6k one-file batches took 6 s against 1 s.
BATCH_ROWS = 1 << 16
FINGERPRINT_KEY = b"rirag_corpus_fingerprint"
#: Ids looked up by binary search before a dict of every id is built (:class:`_Rows`): about 15 microseconds each at
#: a million passages, so a dict (0.3-0.4 s there) pays off beyond some tens of thousands.
LOOKUPS_BEFORE_DICT = 2_000


@dataclass(frozen=True)
class Passage:
    id: str
    document_id: int
    passage_id: str
    text: str
    #: What its source's structure says (an ingested page's ``FootnoteMarks`` and ``ListItems``; none for a corpus
    #: without those fields): its footnote marks as (start, end) offsets into ``text``, and the lines that open a
    #: list item as (offset of the line, nesting level).
    marks: tuple[tuple[int, int], ...] = ()
    items: tuple[tuple[int, int], ...] = ()


def store_dir() -> Path:
    """Where converted corpora go: ``$RIRAG_CACHE_DIR/corpus`` (default ``.cache/rirag/corpus``)."""
    return Path(os.environ.get(CACHE_ENV_VAR) or DEFAULT_CACHE_DIR) / "corpus"


def fingerprint(root: Path, files: Sequence[Path]) -> str:
    """What the corpus depends on, read from the file system only: the folder, each file's name, size and
    modification time (nanoseconds), and the store's version."""
    h = hashlib.sha256(f"rirag-corpus-v{STORE_VERSION}\x00{Path(root).resolve()}".encode())
    for f in files:
        st = f.stat()
        h.update(f"\x00{f.name}\x01{st.st_size}\x01{st.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


def _schema(fp: str):
    import pyarrow as pa

    return pa.schema([("id", pa.string()), ("document_id", pa.int64()), ("passage_id", pa.string()),
                      ("text", pa.large_string()), ("empty", pa.bool_()), ("marks", pa.list_(pa.int32())),
                      ("items", pa.list_(pa.int32()))], metadata={FINGERPRINT_KEY: fp.encode()})


#: (ID, DocumentID, PassageID, text, marks, items): :class:`Passage`'s fields, ``marks`` and ``items`` as pairs.
Record = tuple[str, int, str, str, tuple, tuple]


def _flat(pairs) -> list[int]:
    return [v for pair in pairs for v in pair]


def _pairs(values: list[int] | None) -> tuple[tuple[int, int], ...]:
    return tuple(zip(values[::2], values[1::2])) if values else ()


def _convert(sink, fp: str, files: Sequence[Path], read: Callable[[Path], Iterable[Record]]) -> None:
    """Write ``files`` (each read by ``read``, which checks it) to ``sink`` as an Arrow file, in batches of whole
    files of about :data:`BATCH_ROWS` records."""
    import pyarrow as pa

    schema = _schema(fp)
    seen: set[str] = set()
    cols: tuple[list, ...] = ([], [], [], [], [], [], [])

    def flush(writer) -> None:
        writer.write_batch(pa.record_batch([pa.array(c, type=t.type) for c, t in zip(cols, schema)], schema=schema))
        for c in cols:
            c.clear()

    with pa.ipc.new_file(sink, schema) as writer:
        for f in files:
            for pid, doc, key, text, marks, items in read(f):
                if pid in seen:
                    raise DataError(f"{f}: passage ID {pid!r} occurs twice in the corpus")
                seen.add(pid)
                for col, value in zip(cols, (pid, doc, key, text, not text.strip(), _flat(marks), _flat(items))):
                    col.append(value)
            if len(cols[0]) >= BATCH_ROWS:
                flush(writer)
        if cols[0]:
            flush(writer)


def _batches(source, fp: str) -> list:
    """The record batches of an Arrow file (a memory map or a buffer); ``ValueError`` / ``ArrowException`` when it
    is not a whole file of this fingerprint and schema."""
    import pyarrow as pa

    reader = pa.ipc.open_file(source)
    schema = reader.schema
    if (schema.metadata or {}).get(FINGERPRINT_KEY) != fp.encode():
        raise ValueError("its fingerprint is not the corpus files'")
    if not schema.remove_metadata().equals(_schema(fp).remove_metadata()):
        raise ValueError(f"unexpected columns {schema.names}")
    batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    for batch in batches:
        batch.validate()
    return batches


def load_table(root: Path, files: Sequence[Path], read: Callable[[Path], Iterable[Record]]) -> "PassageTable":
    """Every passage record of ``files`` as a :class:`PassageTable`: memory-mapped from the cache when converted
    before, else converted and cached (held in memory, with a warning, when the cache folder is not writable)."""
    import pyarrow as pa

    fp = fingerprint(root, files)
    path = store_dir() / f"{fp}.arrow"
    if path.is_file():
        try:
            table = PassageTable(_batches(pa.memory_map(str(path), "r"), fp), fp, order_file=_order_file(path))
            logger.info("corpus of %s from cache %s", root, path)
            return table
        except (OSError, ValueError, pa.ArrowException) as err:
            logger.warning("ignoring corpus cache %s (%s): rebuilding it", path, err)
            _order_file(path).unlink(missing_ok=True)  # made from the file being replaced
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with pa.OSFile(str(tmp), "wb") as sink:
            _convert(sink, fp, files, read)
        if fingerprint(root, files) != fp:  # a file changed while it was read: what was read is used, not kept
            logger.warning("corpus of %s changed while it was converted: not cached", root)
            return PassageTable(_batches(pa.memory_map(str(tmp), "r"), fp), fp)
        os.replace(tmp, path)
        logger.info("corpus of %s converted to %s", root, path)
        return PassageTable(_batches(pa.memory_map(str(path), "r"), fp), fp, order_file=_order_file(path))
    except OSError as err:
        logger.warning("corpus not cached in %s (%s): held in memory", path, err)
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # its folder could not be made
            pass
    sink = pa.BufferOutputStream()
    _convert(sink, fp, files, read)
    return PassageTable(_batches(sink.getvalue(), fp), fp)


def _order_file(path: Path) -> Path:
    """Where the ids' sort order of the Arrow file ``path`` is kept (:class:`_Rows`)."""
    return path.with_name(path.stem + ".order.npy")


class _Rows:
    """Row of an id. A dict of every id costs 0.3-0.4 s at a million passages, more than a command that looks up a
    few dozen ids spends on anything else; so the first :data:`LOOKUPS_BEFORE_DICT` lookups are binary searches in
    the ids' sort order (``order_file``: computed once, about 1 s at a million, and kept beside the corpus's Arrow
    file), and the dict is built only for a caller that looks up more, or for the first id not found (so that an
    order file that is not the ids' order can cost time, never a wrong answer; one that is not a permutation of the
    rows is sorted again). Without an order file (a corpus held in memory) the dict is built at the first lookup."""

    def __init__(self, ids: list[str], order_file: Path | None):
        self._ids, self._order_file = ids, order_file
        self._order = None
        self._dict: dict[str, int] | None = None
        self._lookups = 0

    def _sorted(self):
        import numpy as np

        path, n = self._order_file, len(self._ids)
        if path is not None and path.is_file():
            try:
                order = np.load(path, mmap_mode="r", allow_pickle=False)
                if order.shape != (n,) or order.dtype.kind not in "iu":
                    raise ValueError(f"{order.dtype} array of shape {order.shape}, not {n} row numbers")
                rows = np.asarray(order, dtype=np.int64)
                if n and not (0 <= int(rows.min()) and int(rows.max()) < n
                              and np.bincount(rows, minlength=n).min() == 1):
                    raise ValueError("not each row once")
                return order
            except Exception as err:  # noqa: BLE001 - any unreadable file (empty, truncated, other data): sorted again
                logger.warning("ignoring %s (%s: %s): sorting the ids again", path, type(err).__name__, err)
        order = np.array(sorted(range(n), key=self._ids.__getitem__), dtype=np.int64)
        if path is not None:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            try:
                with open(tmp, "wb") as fh:
                    np.save(fh, order)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except OSError as err:
                logger.warning("the ids' order not cached in %s: %s", path, err)
                tmp.unlink(missing_ok=True)
        return order

    def get(self, pid: str) -> int | None:
        if self._dict is None:
            self._lookups += 1
            if self._order_file is None or self._lookups > LOOKUPS_BEFORE_DICT:
                self._dict = dict(zip(self._ids, range(len(self._ids))))
            else:
                if self._order is None:
                    self._order = self._sorted()
                i = bisect_left(self._order, pid, key=self._ids.__getitem__)
                if i < len(self._order) and self._ids[self._order[i]] == pid:
                    return int(self._order[i])
                # not found: so it is, unless the order file was not the ids' order (a row found is always checked
                # above; a miss is made sure of by the dict)
                self._lookups = LOOKUPS_BEFORE_DICT
                return self.get(pid)
        return self._dict.get(pid)


class _Values(ValuesView):
    def __iter__(self) -> Iterator[Passage]:
        return self._mapping.passages()  # type: ignore[attr-defined]


class _Items(ItemsView):
    def __iter__(self):
        return ((p.id, p) for p in self._mapping.passages())  # type: ignore[attr-defined]


class PassageTable(Mapping[str, Passage]):
    """Passages in corpus order over Arrow record batches: ``ids`` and membership without reading any text, a
    :class:`Passage` built when asked for; ``values()`` / ``items()`` read the columns a batch at a time.
    :meth:`indexable` is the view without empty (whitespace-only) passages. ``fingerprint`` names the corpus files
    and the view (what a cache built over it depends on)."""

    def __init__(self, batches: list, fp: str, skip_empty: bool = False, _shared: tuple | None = None,
                 order_file: Path | None = None):
        import numpy as np

        self._batches = batches
        if _shared is None:
            ids: list[str] = []
            offsets = [0]
            for b in batches:
                ids.extend(b.column(0).to_pylist())
                offsets.append(offsets[-1] + b.num_rows)
            # read as Python lists: pyarrow's to_numpy imports pandas (a quarter of a second)
            empty = np.array([e for b in batches for e in b.column(4).to_pylist()], dtype=bool)
            _shared = (ids, _Rows(ids, order_file), offsets, empty)
        self._shared = _shared
        all_ids, self._rows, self._offsets, self._empty = _shared
        self._skip_empty = skip_empty
        self.ids: list[str] = [all_ids[r] for r in np.flatnonzero(~self._empty).tolist()] if skip_empty else all_ids
        self.fingerprint = f"{fp}:indexable" if skip_empty else fp
        self._fp = fp

    def indexable(self) -> "PassageTable":
        """The view without empty passages (what :attr:`rirag.data.obliqa.ObliQA.corpus` is)."""
        return PassageTable(self._batches, self._fp, True, self._shared)

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __contains__(self, pid: object) -> bool:
        row = self._rows.get(pid) if isinstance(pid, str) else None
        return row is not None and not (self._skip_empty and self._empty[row])

    def __getitem__(self, pid: str) -> Passage:
        row = self._rows.get(pid) if isinstance(pid, str) else None
        if row is None or (self._skip_empty and self._empty[row]):
            raise KeyError(pid)
        b = bisect_right(self._offsets, row) - 1
        batch, i = self._batches[b], row - self._offsets[b]
        return Passage(pid, batch.column(1)[i].as_py(), batch.column(2)[i].as_py(), batch.column(3)[i].as_py(),
                       _pairs(batch.column(5)[i].as_py()), _pairs(batch.column(6)[i].as_py()))

    def _column(self, j: int) -> Iterator:
        """Column ``j``'s values of the view in order, one batch read at a time."""
        for batch in self._batches:
            values = batch.column(j).to_pylist()
            if self._skip_empty:
                empty = batch.column(4).to_pylist()
                values = [v for v, e in zip(values, empty) if not e]
            yield from values

    def passages(self) -> Iterator[Passage]:
        """Every passage of the view in order, one batch's columns read at a time."""
        for pid, doc, key, text, marks, items in zip(self.ids, self._column(1), self._column(2), self._column(3),
                                                     self._column(5), self._column(6)):
            yield Passage(pid, doc, key, text, _pairs(marks), _pairs(items))

    def texts(self) -> list[str]:
        """The texts in the order of ``ids``."""
        return list(self._column(3))

    def passage_labels(self) -> list[str]:
        """The PassageIDs (rule labels) in the order of ``ids``."""
        return list(self._column(2))

    def document_ids(self) -> list[int]:
        """The DocumentIDs in the order of ``ids``."""
        import numpy as np

        if not self._batches:
            return []
        docs = [d for b in self._batches for d in b.column(1).to_pylist()]
        return np.array(docs, dtype=np.int64)[~self._empty].tolist() if self._skip_empty else docs

    def holding(self, words: Sequence[str]) -> list[int]:
        """The positions (in ``ids``) of the passages whose casefolded text holds every one of ``words`` (each
        casefolded), exactly ``[i for i, t in enumerate(texts) if all(w in t.casefold() for w in words)]``, with
        Python strings built only for candidates: Arrow's case-insensitive match picks the texts whose every
        character casefolds to itself or is ASCII (their casefolding is ASCII lower case), every other text is a
        candidate too, and the candidates are checked with ``str.casefold``."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self._batches:
            return []
        text = pa.chunked_array([b.column(3) for b in self._batches])
        candidate = pc.match_substring_regex(text, _folding_class())
        if words:
            has_all = pc.match_substring(text, words[0], ignore_case=True)
            for w in words[1:]:
                has_all = pc.and_(has_all, pc.match_substring(text, w, ignore_case=True))
            candidate = pc.or_(candidate, has_all)
        else:
            candidate = pc.is_valid(text)
        if self._skip_empty:
            candidate = pc.and_(candidate, pc.invert(pa.chunked_array([b.column(4) for b in self._batches])))
        rows = pc.indices_nonzero(candidate)
        texts = text.take(rows).to_pylist()
        rows = rows.to_pylist()
        if self._skip_empty:  # a record's position in the view: its row less the empty records before it
            before = np.cumsum(self._empty)
            rows = [r - int(before[r]) for r in rows]
        return [r for r, t in zip(rows, texts) if all(w in t.casefold() for w in words)]

    def values(self) -> ValuesView[Passage]:  # type: ignore[override]
        return _Values(self)

    def items(self) -> ItemsView[str, Passage]:  # type: ignore[override]
        return _Items(self)

    def __eq__(self, other: object) -> bool:
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


@lru_cache(maxsize=1)
def _folding_class() -> str:
    """An RE2 class of every non-ASCII character that ``str.casefold`` changes (Ä, ß, the Kelvin sign, ...)."""
    changed = []
    for start in range(0x80, 0x110000, 1024):  # casefolding maps each character to one or more: a block that folds
        block = range(start, min(start + 1024, 0x110000))  # to itself has no character that changes
        if "".join(map(chr, block)).casefold() != "".join(map(chr, block)):
            changed.extend(c for c in block if chr(c).casefold() != chr(c))
    ranges: list[list[int]] = []
    for c in changed:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "[" + "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges) + "]"


def corpus_key(corpus: Mapping[str, Passage]) -> str | None:
    """A key for what ``corpus`` holds without reading its texts (a :class:`PassageTable`'s fingerprint), or None."""
    return getattr(corpus, "fingerprint", None) if isinstance(corpus, PassageTable) else None


def corpus_texts(corpus: Mapping[str, Passage], ids: Sequence[str]) -> list[str]:
    """The texts of ``ids`` (a :class:`PassageTable` in its order: read a column at a time)."""
    if isinstance(corpus, PassageTable) and list(ids) == corpus.ids:
        return corpus.texts()
    return [corpus[i].text for i in ids]
