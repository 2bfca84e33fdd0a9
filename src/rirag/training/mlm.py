"""Masked-LM loss computed only where it counts: the vocabulary projection runs on the labelled positions alone.

Entailment tuning masks only hypothesis tokens, a small share of each ``<passage> entails that <claim>`` input, yet a
stock ``*ForMaskedLM`` forward projects every position onto the whole vocabulary (for MiniLM on a CPU that is about
half the step time). :func:`masked_positions_loss` runs the encoder, gathers the positions whose label is not -100
and applies the model's own MLM head to those rows only. The loss is the same mean cross-entropy over labelled
positions that the stock forward returns (see ``tests/test_collator.py``). Models whose head this module does not
know fall back to the stock forward.
"""

from __future__ import annotations

from typing import Any

from rirag.training.collators import IGNORE_INDEX

#: attribute names of the MLM head on transformers' *ForMaskedLM classes (BERT: cls, RoBERTa: lm_head)
_HEAD_ATTRIBUTES = ("cls", "lm_head")


def mlm_head(model: Any):
    """The module that maps hidden states to vocabulary logits, or None when unknown."""
    prefix = getattr(model, "base_model_prefix", "")
    if not prefix or not hasattr(model, prefix):  # no encoder to run on its own
        return None
    return next((getattr(model, n) for n in _HEAD_ATTRIBUTES if getattr(model, n, None) is not None), None)


def masked_positions_loss(model: Any, inputs: dict) -> Any:
    """Mean cross-entropy over positions whose label is not -100, projecting only those positions."""
    import torch.nn.functional as F

    head = mlm_head(model)
    labels = inputs["labels"]
    if head is None:
        return model(**inputs).loss
    encoder = getattr(model, model.base_model_prefix)
    hidden = encoder(**{k: v for k, v in inputs.items() if k != "labels"}).last_hidden_state
    keep = labels != IGNORE_INDEX
    if not bool(keep.any()):
        return hidden.sum() * 0.0  # nothing masked in this batch: a zero loss that keeps the graph
    logits = head(hidden[keep])
    return F.cross_entropy(logits.float(), labels[keep])


def masked_positions_trainer(base_class: type) -> type:
    """A ``transformers.Trainer`` subclass whose loss is :func:`masked_positions_loss` (a per-batch mean)."""

    class MaskedPositionsTrainer(base_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_is_scaled_for_ga = False  # a per-batch mean: the Trainer divides by accumulation steps

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if return_outputs:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            return masked_positions_loss(model, inputs)

    return MaskedPositionsTrainer
