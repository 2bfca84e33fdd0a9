"""Tiny BERT models built from a config (no download): a word-level vocab, an MLM checkpoint, a SentenceTransformer."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "an authorised person must maintain records for six years the regulator may require a report on at any time "
    "guidance reporting frequency and format capital adequacy anti money laundering client market abuse insurance "
    "reserves fund passporting virtual assets sanctions screening how long be kept what about entails that "
    "responsible party specified it is case rules state which records reports apply across rulebooks of in to "
    "query passage : ? . , ' number 96 rulebook"
).split()


def write_vocab(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS))
              + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"] + list("abcdefghijklmnopqrstuvwxyz0123456789"))
    seen, vocab = set(), []
    for t in tokens:
        if t not in seen:
            seen.add(t)
            vocab.append(t)
    path = folder / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n")
    return path


def tiny_mlm(folder: Path, seed: int = 0, dropout: float = 0.1) -> Path:
    """A BertForMaskedLM + tokenizer saved in ``folder`` (loads with AutoModelForMaskedLM / SentenceTransformer);
    ``dropout=0`` makes runs on different process counts comparable step by step."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    vocab = write_vocab(folder)
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab.read_text().split()), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=37, max_position_embeddings=128,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_sentence_transformer(folder: Path, seed: int = 0, dropout: float = 0.1) -> Path:
    """A mean-pooling SentenceTransformer over a tiny BERT, saved in ``folder``."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    raw = tiny_mlm(folder.parent / (folder.name + "-raw"), seed, dropout)
    word = Transformer(str(raw), max_seq_length=64)
    SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), "mean")]).save(str(folder))
    return folder
