"""A tiny chat causal LM built offline: a byte-level BPE tokenizer trained on a few sentences, a ChatML chat
template, and a random 2-layer Llama. Loads with AutoTokenizer / AutoModelForCausalLM and `transformers serve`."""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TEXT = (
    "An Authorised Person must keep records for six years. The Regulator may require a report at any time. "
    "Passages: Question: Answer: [1] [2] [3] A firm must file a return. Client Assets must be held by an Eligible "
    "Custodian. You are a regulatory compliance assistant. Cite the passages by number."
)


def tiny_causal_lm(folder: Path, seed: int = 0, vocab_size: int = 400) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator([TEXT] * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<|im_end|>",
                                        bos_token="<|im_start|>", model_max_length=4096)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=64, max_position_embeddings=4096,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.bos_token_id, tie_word_embeddings=False,
                         initializer_range=0.5)  # large weights: continuations depend on the prompt
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder
