"""Shared helpers for the scoring / training tests: tiny models built from configs, fake classifiers."""

from __future__ import annotations

import functools
import hashlib
import re
import tempfile
from pathlib import Path

import numpy as np

WORDS = (
    "the a an firm firms must shall should may not keep records for six years person authorised report to regulator "
    "fsra rule comply with it is are of and in on this that be sky blue grass green client money held separately "
    "notify within days passage answer sentence long mr smith agreed"
).split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
#: One-token long words (a 20,000-character sentence in about 1,000 tokens keeps the long-input tests fast).
LONG_WORDS = ("antimoneylaundering",)


@functools.lru_cache(maxsize=1)
def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="rirag_scoring_tests_"))


def write_tokenizer(folder: Path, model_max_length: int = 64, extra_words: tuple = ()):
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = SPECIAL + WORDS + letters + ["##" + c for c in letters] + list(".,;:!?0123456789") + list(extra_words)
    vocab.write_text("\n".join(tokens) + "\n")
    tok = BertTokenizerFast(vocab_file=str(vocab), model_max_length=model_max_length)
    tok.save_pretrained(folder)
    return tok


def _save(model, folder: Path, extra_words: tuple = ()):
    write_tokenizer(folder, extra_words=extra_words)
    model.save_pretrained(folder)
    return str(folder)


@functools.lru_cache(maxsize=None)
def tiny_bert(name: str, id2label: tuple, seed: int = 0, head_scale: float = 40.0, bias: tuple | None = None) -> str:
    """A tiny BERT sequence classifier folder; a scaled head makes its (random) outputs peaky and input-dependent."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    folder = workdir() / name
    if folder.exists():
        return str(folder)
    torch.manual_seed(seed)
    labels = dict(id2label)
    vocab_size = len(write_tokenizer(folder))
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37, max_position_embeddings=64, num_labels=len(labels),
                        id2label=labels, label2id={v: k for k, v in labels.items()})
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.mul_(head_scale)
        if bias is not None:
            model.classifier.bias.copy_(torch.tensor(bias))
    return _save(model, folder)


@functools.lru_cache(maxsize=None)
def tiny_deberta(name: str, id2label: tuple, bias: tuple) -> str:
    """A tiny DeBERTa-v2 classifier whose head ignores the input: softmax(bias) for every pair."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    folder = workdir() / name
    if folder.exists():
        return str(folder)
    torch.manual_seed(0)
    labels = dict(id2label)
    vocab_size = len(write_tokenizer(folder))
    config = DebertaV2Config(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=37, max_position_embeddings=64, pooler_hidden_size=32,
                             num_labels=len(labels), id2label=labels, label2id={v: k for k, v in labels.items()})
    model = DebertaV2ForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias, dtype=torch.float))
    return _save(model, folder)


NLI_LABELS = ((0, "contradiction"), (1, "entailment"), (2, "neutral"))
OBLIGATION_LABELS = ((0, "non-obligation"), (1, "obligation"))


def tiny_models() -> dict[str, str]:
    """Random tiny NLI judge (also the coverage model) and obligation classifier, as RePASs config kwargs."""
    return {
        "nli_model": tiny_bert("nli", NLI_LABELS, seed=1),
        "coverage_model": tiny_bert("coverage", NLI_LABELS, seed=2, head_scale=200.0),
        "obligation_model": tiny_bert("obligation", OBLIGATION_LABELS, seed=3),
    }


class FakeConfig:
    def __init__(self, id2label):
        self.id2label = dict(id2label)


class FakeClassifier:
    """Stands in for :class:`rirag.scoring.classifier.Classifier`: rule-based probabilities, records every input it
    is asked about."""

    def __init__(self, id2label, rule, encoding=None):
        self.config = FakeConfig(id2label)
        self.rule = rule
        self.encoding = encoding
        self.calls: list[list] = []

    def seen(self, key):
        """What the model sees for an input key: reference-mode coverage joins the pair into one text."""
        from rirag.scoring.constants import COVERAGE_JOIN

        return (f"{key[0]}{COVERAGE_JOIN}{key[1]}", None) if self.encoding == "joined" else key

    def probabilities(self, inputs, desc=""):
        unique = list(dict.fromkeys(inputs))
        self.calls.append([self.seen(x) for x in unique])
        return {x: np.asarray(self.rule(*self.seen(x)), dtype=np.float32) for x in unique}


def words(text: str) -> set[str]:
    return {w.strip(".,;").lower() for w in text.split() if w.strip(".,;")}


def fake_models(nli_rule=None, coverage_rule=None, obligation_rule=None, mode="reference") -> dict[str, FakeClassifier]:
    """Obligation: contains 'must'. NLI: hypothesis words within premise words → entailment 0.9,
    a 'not' on exactly one side → contradiction 0.8, else neutral. Coverage: same on (premise, hypothesis);
    a single ' [SEP] '-joined text is split back."""

    def nli(premise, hypothesis):
        if hypothesis is None:
            premise, hypothesis = premise.split(" [SEP] ")
        p, h = words(premise), words(hypothesis)
        if ("not" in p) != ("not" in h) and (h - {"not"}) <= (p - {"not"}):
            return [0.8, 0.1, 0.1]
        if h <= p:
            return [0.05, 0.9, 0.05]
        return [0.1, 0.1, 0.8]

    def obligation(sentence, _none):
        return [0.1, 0.9] if "must" in words(sentence) else [0.9, 0.1]

    return {
        "nli": FakeClassifier(NLI_LABELS, nli_rule or nli),
        "coverage": FakeClassifier(NLI_LABELS, coverage_rule or nli, "joined" if mode == "reference" else None),
        "obligation": FakeClassifier(OBLIGATION_LABELS, obligation_rule or obligation),
    }


def fake_scorer(mode="reference", **rules):
    """A RePASsScorer whose three models are FakeClassifiers (returned too)."""
    from rirag.scoring.repass import RePASsConfig, RePASsScorer

    fakes = fake_models(**rules, mode=mode)
    scorer = RePASsScorer(RePASsConfig(nli_model="nli", coverage_model="coverage", obligation_model="obligation",
                                       mode=mode, show_progress=False))
    scorer._classifiers.update({"nli:nli": fakes["nli"], "obligation:obligation": fakes["obligation"],
                                "coverage:coverage": fakes["coverage"]})
    return scorer, fakes


@functools.lru_cache(maxsize=None)
def tiny_relative_deberta(name: str, id2label: tuple = NLI_LABELS, seed: int = 4, head_scale: float = 40.0) -> str:
    """A tiny DeBERTa-v2 classifier with relative positions only (``position_biased_input=False``), like
    ``microsoft/deberta-large-mnli``: it takes inputs longer than ``max_position_embeddings`` (64 here)."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    folder = workdir() / name
    if folder.exists():
        return str(folder)
    torch.manual_seed(seed)
    labels = dict(id2label)
    vocab_size = len(write_tokenizer(folder, extra_words=LONG_WORDS))
    config = DebertaV2Config(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=37, max_position_embeddings=64, pooler_hidden_size=32,
                             relative_attention=True, position_biased_input=False, pos_att_type=["p2c", "c2p"],
                             type_vocab_size=0, num_labels=len(labels), id2label=labels,
                             label2id={v: k for k, v in labels.items()})
    model = DebertaV2ForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.mul_(head_scale)
    return _save(model, folder, extra_words=LONG_WORDS)


def all_obligations_model() -> str:
    """An obligation classifier that marks every sentence as an obligation (index 0 here, by id2label)."""
    return tiny_bert("obl_all", ((0, "obligation"), (1, "non-obligation")), bias=(9.0, -9.0), head_scale=0.0)


def bag_of_words(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in encoder: hashed word counts, L2-normalised (cosine = word overlap)."""
    out = np.zeros((len(texts), 512))
    for i, text in enumerate(texts):
        for w in re.findall(r"\w+", text.lower()):
            if len(w) > 3:
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 512] += 1
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
