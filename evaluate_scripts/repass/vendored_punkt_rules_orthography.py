# Vendored for the RePASs evaluate metric from punkt.rules.orthography by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""Orthographic context flags used by the Punkt orthographic heuristic.

Punkt records, for every word type it sees during training, *where* in a
sentence that type occurred and *what case* its first letter had.  The
cross-product of those two observations is a six-way classification, packed
into a bit field so that a type's whole history is a single integer:

======== ============= ============
position ``upper``     ``lower``
======== ============= ============
initial  ``BEG_UC``    ``BEG_LC``
internal ``MID_UC``    ``MID_LC``
unknown  ``UNK_UC``    ``UNK_LC``
======== ============= ============

The heuristic in section 4.1.1 of Kiss & Strunk (2006) then reads that bit
field to answer "does this token look like it starts a sentence?".  A word
that is capitalised here but is also seen lower-cased elsewhere, and never
capitalised mid-sentence, is good evidence for a sentence start.

The numeric values are deliberately identical to the ones NLTK writes into
``ortho_context.tab``, so models can be exchanged between the two projects.
"""

from __future__ import annotations

from enum import IntFlag
from typing import Dict, Tuple

__all__ = [
    "Case",
    "OrthoContext",
    "Position",
    "ortho_flag",
]


class OrthoContext(IntFlag):
    """A bit field describing the positions and cases a word type occurs in.

    Bit 0 is unused; the values start at ``1 << 1`` to stay byte-compatible
    with the integers stored in NLTK's ``ortho_context.tab`` files.
    """

    NONE = 0

    BEG_UC = 1 << 1
    """Seen sentence-initially, capitalised."""

    MID_UC = 1 << 2
    """Seen sentence-internally, capitalised."""

    UNK_UC = 1 << 3
    """Seen capitalised at a position that could not be classified."""

    BEG_LC = 1 << 4
    """Seen sentence-initially, lower-cased."""

    MID_LC = 1 << 5
    """Seen sentence-internally, lower-cased."""

    UNK_LC = 1 << 6
    """Seen lower-cased at a position that could not be classified."""

    UC = BEG_UC | MID_UC | UNK_UC
    """Seen capitalised anywhere."""

    LC = BEG_LC | MID_LC | UNK_LC
    """Seen lower-cased anywhere."""


# Sentence positions a token can be observed in.  "unknown" covers the cases
# where the preceding token was an abbreviation or an ellipsis, so we cannot
# tell whether a new sentence began.
Position = str  # Literal["initial", "internal", "unknown"] on newer Pythons
Case = str  # Literal["upper", "lower", "none"]

_ORTHO_MAP: Dict[Tuple[Position, Case], OrthoContext] = {
    ("initial", "upper"): OrthoContext.BEG_UC,
    ("internal", "upper"): OrthoContext.MID_UC,
    ("unknown", "upper"): OrthoContext.UNK_UC,
    ("initial", "lower"): OrthoContext.BEG_LC,
    ("internal", "lower"): OrthoContext.MID_LC,
    ("unknown", "lower"): OrthoContext.UNK_LC,
}


def ortho_flag(position: Position, case: Case) -> OrthoContext:
    """Return the flag for a ``(position, case)`` observation.

    Tokens whose first character is caseless (digits, CJK, most punctuation)
    have ``case == "none"`` and contribute no orthographic evidence, so they
    map to :data:`OrthoContext.NONE`.
    """
    return _ORTHO_MAP.get((position, case), OrthoContext.NONE)
