"""The extractive composer: an answer made of the passages' own obligation sentences, each cited.

For the passages of a prompt (in retrieval order): drop the passage's leading heading lines (see
:func:`passage_body`), split the rest into sentences (Punkt, as RePASs), keep the
sentences the obligation classifier labels as obligations (or, with ``classifier="modal-cues"``, the sentences with
a deontic cue: no trained model needed) (at least :data:`MIN_SENTENCE_WORDS` words: no
headings), drop near-duplicates of a sentence already kept
(rapidfuzz ``ratio`` ≥ :data:`DEDUP_MIN_RATIO` on whitespace-normalised text), and write each kept sentence
followed by its passage's citation ``[n]``. Fallback (documented, deterministic): when no sentence of any passage
is an obligation, the first :data:`FALLBACK_SENTENCES` sentences of the top passage are used, each cited.

It implements the answerer interface (:meth:`ExtractiveComposer.draft`: each kept sentence is a part with its
passage and character offsets); :meth:`ExtractiveComposer.compose` writes the answer for a list of passages (the
RAFT builder's offline teacher).
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

from rirag.constants import OBLIGATION_MAX_TOKENS, QUESTION_BATCH_SIZE
from rirag.generation.base import DEFAULT_OBLIGATION_CLASSIFIER, EXTRACTIVE, AnswerRequest, Draft, DraftPart
from rirag.generation.prompts import normalise_whitespace
from rirag.generation.render import render
from rirag.scoring.models import (
    load_classifier,
    max_length_of,
    obligation_index,
    onnx_classifier,
    resolve_device,
)
from rirag.text.sentences import punkt_split
from rirag.text.units import DEONTIC_CUE, passage_body  # noqa: F401 - passage_body is part of this module's API

logger = logging.getLogger(__name__)

#: Two sentences whose rapidfuzz ratio (0–100) is at least this are near-duplicates: only the first is kept.
DEDUP_MIN_RATIO = 90.0
#: Sentences of the top passage used when no passage has an obligation sentence.
FALLBACK_SENTENCES = 2
#: Shorter "sentences" (headings glued to a passage, list labels) are never used, whatever the classifier says.
MIN_SENTENCE_WORDS = 4
#: Sentences per classifier forward pass (they are classified longest first, so a batch pads little).
CLASSIFIER_BATCH_SIZE = QUESTION_BATCH_SIZE

ObligationFn = Callable[[list[str]], list[bool]]

#: ``classifier`` value that needs no trained model: a sentence is an obligation when it has a deontic cue.
MODAL_CUES = "modal-cues"
#: The deontic cues of :data:`MODAL_CUES` (also how benchmarks build "copied obligation" answers).
OBLIGATION_CUE = DEONTIC_CUE


def modal_cue_obligations(sentences: list[str]) -> list[bool]:
    """``sentences -> [has a deontic cue]``: the untrained stand-in for the obligation classifier."""
    return [bool(OBLIGATION_CUE.search(s)) for s in sentences]


def obligation_classifier(name_or_path: str = DEFAULT_OBLIGATION_CLASSIFIER, device: str | None = None,
                          batch_size: int = CLASSIFIER_BATCH_SIZE) -> ObligationFn:
    """``sentences -> [is obligation]`` with a sequence classifier, loaded (once, cached) by RePASs' loader, or on
    the CPU with ONNX Runtime (:func:`rirag.scoring.models.onnx_classifier`: the same labels, without torch); each
    text read up to :data:`~rirag.constants.OBLIGATION_MAX_TOKENS` tokens."""
    onnx = onnx_classifier(name_or_path, device, OBLIGATION_MAX_TOKENS)
    if onnx is not None:
        return _onnx_classify(*onnx, batch_size)
    device = resolve_device(device)
    tokenizer, model = load_classifier(name_or_path, device)
    index = obligation_index(model.config)
    max_length = min(max_length_of(tokenizer, model), OBLIGATION_MAX_TOKENS)

    def labels(batch: list[str]) -> list[bool]:
        import torch

        with torch.inference_mode():
            features = tokenizer(batch, padding=True, truncation=True, max_length=max_length,
                                 return_tensors="pt").to(device)
            return (model(**features).logits.argmax(-1) == index).tolist()

    return lambda sentences: _longest_first_batches(sentences, batch_size, labels)


def _longest_first_batches(texts: list[str], batch_size: int, labels: Callable[[list[str]], list[bool]]
                           ) -> list[bool]:
    """``labels`` of ``texts`` taken ``batch_size`` at a time, longest first (stable), so that a batch holds texts
    of about one length; returned in the texts' own order."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    out = [False] * len(texts)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        for i, label in zip(rows, labels([texts[i] for i in rows])):
            out[i] = label
    return out


def _onnx_classify(tokenizer, session, config, inputs: list[str], batch_size: int) -> ObligationFn:
    from rirag.onnx_inference import batch_inputs

    index = obligation_index(config)

    def labels(batch: list[str]) -> list[bool]:
        return (session.run(None, batch_inputs(tokenizer, batch, inputs))[0].argmax(-1) == index).tolist()

    return lambda sentences: _longest_first_batches(sentences, batch_size, labels)


class ExtractiveComposer:
    """Compose cited answers from obligation sentences. ``is_obligation`` (a function over a list of sentences)
    overrides the classifier, e.g. in tests; otherwise the classifier at ``classifier`` loads on first use."""

    name = EXTRACTIVE
    needs_passages = True

    def __init__(self, classifier: str = DEFAULT_OBLIGATION_CLASSIFIER, is_obligation: ObligationFn | None = None,
                 device: str | None = None, dedup_min_ratio: float = DEDUP_MIN_RATIO,
                 fallback_sentences: int = FALLBACK_SENTENCES, split: Callable[[str], Sequence[str]] | None = None):
        self.classifier = classifier
        self.device = device
        self.dedup_min_ratio = float(dedup_min_ratio)
        self.fallback_sentences = int(fallback_sentences)
        self._is_obligation = is_obligation
        self._split = split

    def _classify(self, sentences: list[str]) -> list[bool]:
        if self._is_obligation is None:
            self._is_obligation = (modal_cue_obligations if self.classifier == MODAL_CUES
                                   else obligation_classifier(self.classifier, self.device))
        flags = list(self._is_obligation(sentences))
        if len(flags) != len(sentences):
            raise ValueError(f"obligation classifier returned {len(flags)} labels for {len(sentences)} sentences")
        return [bool(f) for f in flags]

    def _sentences(self, passage: str) -> list[tuple[str, int | None, int | None]]:
        """The passage's sentences (whitespace-normalised), each with its character offsets in the passage (``None``
        when the splitter changed its text)."""
        if self._split is None:
            self._split = punkt_split
        out, cursor = [], 0
        for raw in self._split(passage_body(passage)):
            if not raw.strip():
                continue
            start = passage.find(raw, cursor)
            if start >= 0:
                cursor = start + len(raw)
            out.append((normalise_whitespace(raw), start if start >= 0 else None, cursor if start >= 0 else None))
        return out

    def draft(self, requests: Sequence[AnswerRequest]) -> list[Draft]:
        """One draft per request (its question is not read); every sentence of the batch is classified in one
        call."""
        from rapidfuzz import fuzz

        split = [[self._sentences(p) for p in r.passages] for r in requests]
        unique = list(dict.fromkeys(s for item in split for sents in item for s, _, _ in sents))
        flags = dict(zip(unique, self._classify(unique))) if unique else {}
        drafts = []
        for item in split:
            kept: list[DraftPart] = []
            for index, sentences in enumerate(item):
                for s, start, end in sentences:
                    if not flags[s] or len(s.split()) < MIN_SENTENCE_WORDS:
                        continue
                    if any(fuzz.ratio(s, k.text) >= self.dedup_min_ratio for k in kept):
                        continue
                    kept.append(DraftPart(s, (index,), index, start, end))
            if not kept and item and item[0]:
                logger.debug("no obligation sentence in %d passages: first sentences of the top passage", len(item))
                kept = [DraftPart(s, (0,), 0, start, end) for s, start, end in item[0][: self.fallback_sentences]]
            drafts.append(Draft(kept))
        return drafts

    def describe(self) -> str | None:
        """Nothing beyond its name."""
        return None

    def compose_many(self, batch: Sequence[Sequence[str]]) -> list[str]:
        """One cited answer per passage list, each rendered from its draft."""
        return [render(d) for d in self.draft([AnswerRequest("", passages) for passages in batch])]

    def compose(self, passages: Sequence[str]) -> str:
        """The cited answer for one list of passages (retrieval order; citations number from 1)."""
        return self.compose_many([passages])[0]
