"""A map from 128-bit digests to 128-bit values that costs 32 bytes an entry, not the ~130 of a dict of Python ints:
what ingest keeps of every passage of a corpus to find duplicates across it (:mod:`rirag.data.ingest.corpus`).

The entries are sorted arrays of 8-byte halves (``array('Q')``: key high, key low, value high, value low) and a
small dict of the newest; when the dict is full it is merged into the arrays in place. A lookup is a dict probe and
a binary search."""

from __future__ import annotations

from array import array
from bisect import bisect_left

MASK = (1 << 64) - 1
#: Entries kept in the dict before they are merged into the sorted arrays (or a sixteenth of those, when more: the
#: merges then cost a few passes over the map in all, and the dict about 8 bytes an entry of the arrays).
PENDING_MAX = 1 << 14


class DigestMap:
    def __init__(self, pending_max: int = PENDING_MAX) -> None:
        self._pending: dict[int, int] = {}
        self._max = pending_max
        self._cols = tuple(array("Q") for _ in range(4))  # key high, key low, value high, value low

    def __len__(self) -> int:
        return len(self._pending) + len(self._cols[0])

    def __contains__(self, key: int) -> bool:
        return self.get(key) is not None

    def get(self, key: int) -> int | None:
        if key in self._pending:
            return self._pending[key]
        hi, lo = key >> 64, key & MASK
        khi, klo, vhi, vlo = self._cols
        i = bisect_left(khi, hi)
        while i < len(khi) and khi[i] == hi:
            if klo[i] == lo:
                return (vhi[i] << 64) | vlo[i]
            i += 1
        return None

    def add(self, key: int, value: int) -> None:
        """Map ``key`` to ``value`` (a key already in it keeps its first value)."""
        if key in self:
            return
        self._pending[key] = value
        if len(self._pending) >= max(self._max, len(self._cols[0]) // 16):
            self._merge()

    def _merge(self) -> None:
        """The dict's entries into the sorted arrays, in place: the arrays grow by as many entries and are filled
        from the end (nothing is copied but what moves)."""
        pending = self._pending
        new = sorted(pending)
        khi, klo, vhi, vlo = self._cols
        i, j = len(khi) - 1, len(new) - 1
        for col in self._cols:
            col.frombytes(bytes(8 * len(new)))
        w = len(khi) - 1
        while j >= 0:
            key = new[j]
            hi, lo = key >> 64, key & MASK
            if i >= 0 and (khi[i] > hi or (khi[i] == hi and klo[i] > lo)):
                khi[w], klo[w], vhi[w], vlo[w] = khi[i], klo[i], vhi[i], vlo[i]
                i -= 1
            else:
                value = pending[key]
                khi[w], klo[w], vhi[w], vlo[w] = hi, lo, value >> 64, value & MASK
                j -= 1
            w -= 1
        pending.clear()
