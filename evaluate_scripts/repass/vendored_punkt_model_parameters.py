# Vendored for the RePASs evaluate metric from punkt.model.parameters by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""The learned parameters — the *model* layer.

Everything Punkt discovers from a corpus lands in :class:`PunktParameters`.
This is pure data: four containers and some metadata, with no behaviour beyond
lookups and bookkeeping.  The trainer produces one; the tokenizer consumes one;
the codecs read and write one.  None of those three know about each other.

That separation is what makes the security story simple.  A model is a value,
not a program, so loading one can never be more than parsing text into these
four containers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Mapping, Optional, Set, Tuple

from .vendored_punkt_rules_orthography import OrthoContext

__all__ = ["ModelMetadata", "PunktParameters"]


@dataclass
class ModelMetadata:
    """Provenance for a trained model.

    Carried alongside the parameters so that a loaded model can say where it
    came from.  Purely informational — nothing in the algorithm reads it.
    """

    language: str = "unknown"
    """Language name or BCP 47 tag, e.g. ``"english"``."""

    description: str = ""
    """Free-text note about the training corpus or intended domain."""

    source: str = ""
    """Where the model came from, e.g. a corpus name or a converted file."""

    license: str = ""
    """Licence of the *model data*, which may differ from the code's licence."""

    trained_tokens: int = 0
    """Number of tokens seen during training, when known."""

    def as_dict(self) -> Dict[str, str]:
        """Return the metadata as plain strings, for serialization."""
        return {
            "language": self.language,
            "description": self.description,
            "source": self.source,
            "license": self.license,
            "trained_tokens": str(self.trained_tokens),
        }


@dataclass
class PunktParameters:
    """The four things Punkt learns, plus provenance.

    ``ortho_context`` is a plain :class:`dict`, not a ``defaultdict``.  NLTK
    uses a ``defaultdict(int)`` and reads it with ``[]``, so merely *asking*
    about an unseen type inserts a zero entry — a trained model silently grows
    as you tokenize with it.  Reads here go through :meth:`ortho`, which does
    not mutate.
    """

    abbrev_types: Set[str] = field(default_factory=set)
    """Word types (without the trailing period) that are abbreviations."""

    collocations: Set[Tuple[str, str]] = field(default_factory=set)
    """Type pairs that straddle a period without a sentence break, such as
    ``("s", "bach")`` in *Johann S. Bach*.  Negative evidence for a boundary."""

    sent_starters: Set[str] = field(default_factory=set)
    """Types that frequently begin a sentence, such as *however* or *but*."""

    numeric_abbrev_types: Set[str] = field(default_factory=set)
    """Types that are abbreviations *only* when a number follows.

    ``No.`` is the motivating case: ``"See No. 5 for details."`` is one
    sentence, while ``"There is no. Absolutely not."`` is two.  A flat
    abbreviation list has to choose one and be wrong about the other — this is
    why NLTK issue #2154 has been open since 2018.

    Filled from two places.  :mod:`punkt.data.curated` supplies reference
    markers — number, page, figure, chapter, section, volume, article, table —
    for every supported language, and training discovers more when
    :attr:`~punkt.training.TrainerConfig.learn_numeric_abbrevs` is on, which it
    is by default.  Punkt as published has no representation for a conditional
    abbreviation at all, so this container and the rule that reads it are a
    deliberate extension.
    """

    ortho_context: Dict[str, int] = field(default_factory=dict)
    """Per-type bit field of :class:`~punkt.rules.orthography.OrthoContext`
    flags, recording the positions and cases the type was observed in."""

    metadata: ModelMetadata = field(default_factory=ModelMetadata)
    """Provenance; not used by the algorithm."""

    # -- Non-mutating lookups ------------------------------------------------

    def ortho(self, type_: str) -> OrthoContext:
        """Return the orthographic context recorded for ``type_``.

        Unseen types yield :data:`OrthoContext.NONE` without being inserted.
        """
        return OrthoContext(self.ortho_context.get(type_, 0))

    def is_abbrev(self, type_: str) -> bool:
        """Whether ``type_`` is a known abbreviation.

        Hyphenated forms are checked on their final element too, so that a
        model that learned ``co.`` also recognises ``mining-co.``
        """
        stem = type_[:-1] if type_.endswith(".") else type_
        stem = stem.lower()
        return stem in self.abbrev_types or stem.rsplit("-", 1)[-1] in self.abbrev_types

    # -- Mutation, used by the trainer ---------------------------------------

    def add_ortho_context(self, type_: str, flag: OrthoContext) -> None:
        """Record that ``type_`` was seen in the context described by ``flag``."""
        if flag:
            self.ortho_context[type_] = self.ortho_context.get(type_, 0) | int(flag)

    def clear_abbrevs(self) -> None:
        """Forget all learned abbreviations."""
        self.abbrev_types = set()

    def clear_collocations(self) -> None:
        """Forget all learned collocations."""
        self.collocations = set()

    def clear_sent_starters(self) -> None:
        """Forget all learned sentence starters."""
        self.sent_starters = set()

    def is_numeric_abbrev(self, type_: str) -> bool:
        """Whether ``type_`` is an abbreviation only when a number follows."""
        stem = type_[:-1] if type_.endswith(".") else type_
        return stem.lower() in self.numeric_abbrev_types

    def clear_ortho_context(self) -> None:
        """Forget all orthographic evidence."""
        self.ortho_context = {}

    # -- Combination ---------------------------------------------------------

    def merged_with(self, other: PunktParameters) -> PunktParameters:
        """Return the union of two models.

        Useful for stacking a small domain-specific model on top of a general
        one.  Orthographic evidence is OR-ed together, which is the same
        operation training would have performed had both corpora been seen in
        one run.  The learned *thresholds* are not re-derived, so this is a
        heuristic combination and not equivalent to retraining on the
        concatenated corpora.
        """
        ortho = dict(self.ortho_context)
        for type_, flags in other.ortho_context.items():
            ortho[type_] = ortho.get(type_, 0) | flags
        return PunktParameters(
            abbrev_types=self.abbrev_types | other.abbrev_types,
            collocations=self.collocations | other.collocations,
            sent_starters=self.sent_starters | other.sent_starters,
            numeric_abbrev_types=self.numeric_abbrev_types | other.numeric_abbrev_types,
            ortho_context=ortho,
            metadata=self.metadata,
        )

    def pruned(self) -> PunktParameters:
        """Return a copy with orthographic entries that cannot matter removed.

        ``ortho_context`` dominates the size of a model trained on a large
        corpus — 684,000 entries from 400 MB of web text, against 20,000 in the
        bundled NLTK punkt model — and most of them carry no information.

        The reason is that an *absent* type is not neutral.
        :func:`~punkt.annotate.ortho_heuristic` reads a missing type as flags of
        zero, which already yields ``NO`` for a lower-case token and ``UNKNOWN``
        for an upper-case one.  An entry is therefore only worth storing when it
        can produce a different answer than leaving it out:

        * it can return ``YES`` for an upper-case token — it has been seen
          lower-cased and never capitalised mid-sentence; or
        * it can withhold the ``NO`` for a lower-case token — it starts
          sentences in lower case and has never been seen capitalised.

        Everything else reproduces the absent-type verdict exactly, so dropping
        it cannot change a single decision.  Measured on 400 MB of English:
        306,249 of 683,738 entries kept, and identical output.

        This is lossless with respect to *tokenization*, not with respect to the
        data: the discarded flags are real observations, and a later training
        round that merges another corpus in would no longer see them.  Prune
        when producing a model to ship, not while still accumulating one.
        """
        return PunktParameters(
            abbrev_types=set(self.abbrev_types),
            collocations=set(self.collocations),
            sent_starters=set(self.sent_starters),
            numeric_abbrev_types=set(self.numeric_abbrev_types),
            ortho_context={
                type_: flags
                for type_, flags in self.ortho_context.items()
                if _affects_verdict(flags)
            },
            metadata=self.metadata,
        )

    # -- Diagnostics ---------------------------------------------------------

    def describe_ortho(self, type_: str) -> Iterable[str]:
        """Yield the human-readable flag names recorded for ``type_``.

        Spelled with hyphens (``"BEG-UC"``) rather than the enum's underscores,
        matching what NLTK's ``debug_decisions`` prints, so existing tooling
        that reads that output keeps working.
        """
        context = self.ortho(type_)
        for flag in (
            OrthoContext.BEG_UC,
            OrthoContext.MID_UC,
            OrthoContext.UNK_UC,
            OrthoContext.BEG_LC,
            OrthoContext.MID_LC,
            OrthoContext.UNK_LC,
        ):
            if context & flag:
                yield (flag.name or "").replace("_", "-")

    def counts(self) -> Mapping[str, int]:
        """Return the size of each container, for ``punkt info`` and tests."""
        return {
            "abbrev_types": len(self.abbrev_types),
            "collocations": len(self.collocations),
            "sent_starters": len(self.sent_starters),
            "numeric_abbrev_types": len(self.numeric_abbrev_types),
            "ortho_context": len(self.ortho_context),
        }

    def __repr__(self) -> str:
        counts = self.counts()
        return (
            f"PunktParameters(language={self.metadata.language!r}, "
            f"abbrev_types={counts['abbrev_types']}, "
            f"collocations={counts['collocations']}, "
            f"sent_starters={counts['sent_starters']}, "
            f"ortho_context={counts['ortho_context']})"
        )


def _affects_verdict(flags: int) -> bool:
    """Whether an orthographic entry can produce a verdict absence would not.

    Three places read ``ortho_context``, and all three have to agree that an
    entry is inert before it can be dropped:

    1. :func:`~punkt.annotate.ortho_heuristic` returns ``YES`` for an upper-case
       token only when the type has lower-case evidence.
    2. The same function returns ``NO`` for a lower-case token unless the type
       has lower-case sentence-initial evidence and no upper-case evidence.
    3. The special initials rule in
       :func:`~punkt.annotate.second_pass_annotation` tests
       ``params.ortho(next_type) & OrthoContext.LC`` *directly*, bypassing the
       heuristic entirely.

    All three reduce to the same condition: an entry matters exactly when it
    carries some lower-case evidence.  An entry with only upper-case flags
    reproduces the absent-type answer in every one of the three, because absence
    is read as flags of zero rather than as "no information".

    Missing case 3 is not hypothetical — an earlier version of this function
    checked only the first two and silently changed the output of two documents
    in the test corpus.  ``test_pruning_never_changes_output`` is what caught it.
    """
    return bool(OrthoContext(flags) & OrthoContext.LC)


def empty_parameters(language: Optional[str] = None) -> PunktParameters:
    """Return an untrained model, optionally tagged with a language name."""
    metadata = ModelMetadata(language=language or "unknown")
    return PunktParameters(metadata=metadata)
