"""Entailment-tuning inputs and the masked-language-model collator that masks only the hypothesis.

An instance is ``[CLS] <gold passage> entails that <claim> [SEP]`` (second seed paper, eq. 1). The premise is
truncated so that the connective and the whole claim always fit. The collator replaces each hypothesis token by
``[MASK]`` independently with probability β (0.8 by default) and puts the original token id in ``labels`` at those
positions only; every other position (premise, connective, special tokens, padding, unmasked hypothesis tokens)
has label −100, so the loss is the reconstruction loss of the masked hypothesis tokens (eq. 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from rirag.constants import ET_CONNECTIVE, ET_MASK_PROBABILITY

IGNORE_INDEX = -100


def encode_entailment_example(tokenizer, premise: str, claim: str, max_length: int = 256,
                              connective: str = ET_CONNECTIVE) -> dict[str, list[int]]:
    """Token ids of ``premise entails that claim`` and a 0/1 ``hypothesis_mask`` marking the claim's tokens."""
    prem = tokenizer(premise, add_special_tokens=False)["input_ids"]
    conn = tokenizer(connective, add_special_tokens=False)["input_ids"]
    hyp = tokenizer(claim, add_special_tokens=False)["input_ids"]
    if not hyp:
        raise ValueError(f"claim {claim!r} has no tokens")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    specials = [t for t in (cls, sep) if t is not None]
    budget = max_length - len(specials) - len(conn)
    if budget < 2:
        raise ValueError(f"max_length {max_length} leaves no room for premise and claim")
    hyp = hyp[: budget // 2]  # a claim never takes more than half the budget
    prem = prem[: max(0, budget - len(hyp))]
    head = [cls] if cls is not None else []
    tail = [sep] if sep is not None else []
    input_ids = head + prem + conn + hyp + tail
    mask = [0] * (len(head) + len(prem) + len(conn)) + [1] * len(hyp) + [0] * len(tail)
    return {"input_ids": input_ids, "attention_mask": [1] * len(input_ids), "hypothesis_mask": mask}


@dataclass
class HypothesisMaskingCollator:
    """Pad a batch and mask hypothesis tokens with probability ``mask_probability`` (labels −100 elsewhere).

    At least one hypothesis token per example is masked (an example with none would add nothing to the loss).
    Pass a seeded ``torch.Generator`` as ``generator`` for reproducible masks.
    """

    tokenizer: Any
    mask_probability: float = ET_MASK_PROBABILITY
    pad_to_multiple_of: int | None = None
    generator: Any = None

    def __post_init__(self):
        if not 0.0 < self.mask_probability <= 1.0:
            raise ValueError(f"mask_probability must be in (0, 1], got {self.mask_probability}")
        if self.tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no mask token: entailment tuning needs a masked-LM tokenizer")

    def __call__(self, features: Sequence[dict]) -> dict:
        import torch

        length = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            m = self.pad_to_multiple_of
            length = (length + m - 1) // m * m
        pad = self.tokenizer.pad_token_id or 0
        n = len(features)
        input_ids = torch.full((n, length), pad, dtype=torch.long)
        attention = torch.zeros((n, length), dtype=torch.long)
        hyp = torch.zeros((n, length), dtype=torch.bool)
        for i, f in enumerate(features):
            ids = list(f["input_ids"])
            input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention[i, : len(ids)] = 1
            hyp[i, : len(ids)] = torch.tensor(list(f["hypothesis_mask"]), dtype=torch.bool)
        draws = torch.rand((n, length), generator=self.generator)
        masked = hyp & (draws < self.mask_probability)
        # an example whose draw masked nothing gets its hypothesis token with the smallest draw masked
        none = hyp.any(dim=1) & ~masked.any(dim=1)
        if none.any():
            forced = torch.where(hyp, draws, torch.full_like(draws, 2.0)).argmin(dim=1)
            rows = none.nonzero(as_tuple=True)[0]
            masked[rows, forced[rows]] = True
        labels = torch.full_like(input_ids, IGNORE_INDEX)
        labels[masked] = input_ids[masked]
        input_ids = input_ids.masked_fill(masked, self.tokenizer.mask_token_id)
        return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}
