"""Entailment-tuning inputs and the hypothesis-only masking collator."""

import pytest
import torch

from rirag.training.collators import IGNORE_INDEX, HypothesisMaskingCollator, encode_entailment_example
from tiny_encoder import write_vocab


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import BertTokenizerFast

    vocab = write_vocab(tmp_path_factory.mktemp("vocab"))
    return BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)


def test_example_layout_marks_only_the_claim(tokenizer):
    ex = encode_entailment_example(tokenizer, "the regulator may require a report", "records must be kept", 64)
    ids, mask = ex["input_ids"], ex["hypothesis_mask"]
    claim = tokenizer("records must be kept", add_special_tokens=False)["input_ids"]
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert [i for i, m in zip(ids, mask) if m] == claim
    conn = tokenizer("entails that", add_special_tokens=False)["input_ids"]
    start = mask.index(1)
    assert ids[start - len(conn): start] == conn


def test_premise_is_truncated_first(tokenizer):
    premise = " ".join(["records"] * 100)
    ex = encode_entailment_example(tokenizer, premise, "the regulator may require a report", 20)
    assert len(ex["input_ids"]) == 20
    assert sum(ex["hypothesis_mask"]) == len(tokenizer("the regulator may require a report",
                                                       add_special_tokens=False)["input_ids"])


def test_collator_masks_only_hypothesis_with_probability_beta(tokenizer):
    feats = [encode_entailment_example(tokenizer, "an authorised person must maintain records for six years",
                                       "records must be kept for six years " * 3, 128) for _ in range(8)]
    collator = HypothesisMaskingCollator(tokenizer, mask_probability=0.8, generator=torch.Generator().manual_seed(0))
    masked = total = 0
    for _ in range(50):
        batch = collator(feats)
        hyp = torch.tensor([f["hypothesis_mask"] for f in feats], dtype=torch.bool)
        labels, ids = batch["labels"], batch["input_ids"]
        is_masked = ids == tokenizer.mask_token_id
        # masks only on hypothesis positions; labels exactly there, -100 elsewhere
        assert not (is_masked & ~hyp).any()
        assert ((labels != IGNORE_INDEX) == is_masked).all()
        orig = torch.tensor([f["input_ids"] for f in feats])
        assert (labels[is_masked] == orig[is_masked]).all()
        assert (ids[~is_masked] == orig[~is_masked]).all()
        masked += int(is_masked.sum())
        total += int(hyp.sum())
    assert abs(masked / total - 0.8) < 0.02


def test_collator_pads_and_forces_one_mask(tokenizer):
    short = encode_entailment_example(tokenizer, "report", "kept", 32)
    long = encode_entailment_example(tokenizer, "the regulator may require a report at any time", "kept", 32)
    batch = HypothesisMaskingCollator(tokenizer, mask_probability=1e-6)([short, long])
    assert batch["input_ids"].shape == (2, len(long["input_ids"]))
    assert batch["attention_mask"][0].sum() == len(short["input_ids"])
    assert ((batch["labels"] != IGNORE_INDEX).sum(dim=1) == 1).all()  # β≈0 still masks one token per example
    assert (batch["labels"][0, len(short["input_ids"]):] == IGNORE_INDEX).all()  # padding never has a label
    with pytest.raises(ValueError):
        HypothesisMaskingCollator(tokenizer, mask_probability=0.0)


def test_masked_positions_loss_equals_the_stock_mlm_loss_and_gradients(tokenizer):
    from transformers import BertConfig, BertForMaskedLM

    from rirag.training.mlm import masked_positions_loss, masked_positions_trainer, mlm_head

    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37)
    model = BertForMaskedLM(config).eval()  # no dropout: both losses see the same network
    assert mlm_head(model) is model.cls
    feats = [encode_entailment_example(tokenizer, "an authorised person must maintain records", claim, 64)
             for claim in ("records must be kept", "the regulator may require a report at any time")]
    batch = HypothesisMaskingCollator(tokenizer, 0.8, generator=torch.Generator().manual_seed(1))(feats)
    assert 0 < int((batch["labels"] != IGNORE_INDEX).sum()) < batch["labels"].numel()

    stock = model(**batch).loss
    stock.backward()
    stock_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    sparse = masked_positions_loss(model, batch)
    sparse.backward()
    assert torch.allclose(sparse, stock, atol=1e-6)
    for name, grad in stock_grads.items():
        assert torch.allclose(model.get_parameter(name).grad, grad, atol=1e-6), name

    # nothing masked: a zero loss, not NaN; an unknown head falls back to the model's own loss
    empty = dict(batch, labels=torch.full_like(batch["labels"], IGNORE_INDEX))
    assert masked_positions_loss(model, empty).item() == 0.0

    class Wrapped(torch.nn.Module):
        def forward(self, **kw):
            return type("Out", (), {"loss": torch.tensor(3.0)})()

    assert mlm_head(Wrapped()) is None and masked_positions_loss(Wrapped(), batch).item() == 3.0
    from transformers import Trainer

    assert issubclass(masked_positions_trainer(Trainer), Trainer)
