"""Inference without torch: a transformers model folder exported once to ONNX and run with ONNX Runtime, its text
tokenised with the ``tokenizers`` library.

Why: on a 2-core CPU, ``rirag ask`` spent about 3.7 of its 4-6 seconds importing torch and transformers and loading
the encoder's weights, for two short encodings. ONNX Runtime and ``tokenizers`` import and load the same encoder in
about 0.3 s, and give the same embeddings (float32; they differ from torch's by about 1e-7).

* :func:`onnx_wanted`: whether a model for ``device`` runs here: on the CPU (``device`` "cpu", or none given and no
  NVIDIA device visible), with ``onnxruntime`` and ``tokenizers`` installed, unless ``RIRAG_ONNX=off``.
* :func:`exported`: the model's ONNX file under ``$RIRAG_CACHE_DIR/onnx/<key>/`` (key: the folder's path, its files'
  names, sizes and modification times, the head and the export's version), exported on first use with torch and
  ``onnx`` (the TorchScript exporter), written to a temporary folder and renamed into place.
* :func:`session` and :func:`fast_tokenizer`: the ONNX Runtime session and the folder's ``tokenizer.json``, padded and
  truncated as transformers' fast tokenizer pads and truncates.
* :func:`share_cores`: a process that runs several model calls at once (``rirag serve``) gives each the cores' share,
  in threads that do not spin (ONNX Runtime's default is a thread per core, each spinning while it waits).

Callers fall back to torch (with a log line) when any of this is missing or fails: the ONNX path is a faster way to
the same numbers, never the only way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from rirag.constants import CACHE_ENV_VAR, DEFAULT_CACHE_DIR, ONNX_ENV_VAR

logger = logging.getLogger(__name__)

#: Bumped when the export below changes: an older export is then never read.
EXPORT_VERSION = "2"
#: What is exported: the base model's last hidden state (an encoder to pool) or a classifier's logits.
HEADS = ("base", "sequence-classification")
_OPSET = 17
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_wanted(device: str | None = None) -> bool:
    """Whether to run a model on ``device`` with ONNX Runtime: ``RIRAG_ONNX`` is not ``off``, the libraries are
    installed and the model runs on the CPU (``device`` "cpu", or none / "auto" with no NVIDIA device visible)."""
    if os.environ.get(ONNX_ENV_VAR, "auto").strip().lower() in ("off", "0", "false", "no"):
        return False
    if device not in (None, "auto", "cpu"):
        return False
    if device != "cpu" and (Path("/dev/nvidiactl").exists() or Path("/dev/nvidia0").exists()):
        return False  # as torch would: a GPU when there is one
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))


def _key(folder: Path, head: str) -> str:
    h = hashlib.sha256(f"rirag-onnx-v{EXPORT_VERSION}\x00{head}\x00{folder.resolve()}".encode())
    for f in sorted(folder.iterdir()):
        if f.is_file():
            st = f.stat()
            h.update(f"\x00{f.name}\x01{st.st_size}\x01{st.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


def exported(folder: str | os.PathLike, head: str = "base") -> Path:
    """The ONNX file of the model in ``folder`` with ``head`` (:data:`HEADS`), exported on first use (needs torch,
    transformers and ``onnx``; raises ImportError without them)."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    folder = Path(folder)
    out = Path(os.environ.get(CACHE_ENV_VAR) or DEFAULT_CACHE_DIR) / "onnx" / _key(folder, head)
    path = out / "model.onnx"
    if path.is_file():
        return path
    if importlib.util.find_spec("onnx") is None:
        raise ImportError("exporting a model to ONNX needs the onnx package (pip install onnx)")
    from filelock import FileLock, Timeout

    out.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(out) + ".lock")  # one process exports; another waits for it, then reads its export
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.info("waiting for another process's ONNX export of %s (it holds %s.lock)", folder, out)
        lock.acquire()
    try:
        return path if path.is_file() else _export(folder, head, out, path)
    finally:
        lock.release()


def _export(folder: Path, head: str, out: Path, path: Path) -> Path:
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    logger.info("exporting %s (%s) to ONNX once, into %s", folder, head, out)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    # eager attention: its exported graph runs faster under ONNX Runtime than the SDPA one (on 2 cores, 60 ObliQA
    # passages at batch 64: 1.9 s against 2.5 s; the embeddings agree within 2e-7)
    model = (AutoModel if head == "base" else AutoModelForSequenceClassification).from_pretrained(
        str(folder), attn_implementation="eager").eval()
    features = tokenizer(["an example", "a second, longer example"], padding=True, return_tensors="pt")
    names = [n for n in _INPUTS if n in features]

    class _Outputs(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            result = self.inner(**dict(zip(names, args)))
            return result.last_hidden_state if head == "base" else result.logits

    output = "last_hidden_state" if head == "base" else "logits"
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes[output] = {0: "batch", 1: "sequence"} if head == "base" else {0: "batch"}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python values it freezes: none varies here
            torch.onnx.export(_Outputs(model), tuple(features[n] for n in names), str(tmp / "model.onnx"),
                              input_names=names, output_names=[output], dynamic_axes=axes, opset_version=_OPSET,
                              dynamo=False)
        (tmp / "inputs.json").write_text(json.dumps(names), encoding="utf-8")
        try:
            os.replace(tmp, out)
        except OSError:  # another process exported it first
            if not path.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def input_names(path: Path) -> list[str]:
    """The inputs the exported model takes (written beside it at export)."""
    return json.loads((path.parent / "inputs.json").read_text(encoding="utf-8"))


def cpu_cores() -> int:
    """The cores this process may run on (its CPU affinity, as ``taskset`` sets it; else the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: Intra-op threads of a model call when the process runs several at once (:func:`share_cores`); None: the libraries'
#: own defaults (a thread per core).
_shared_threads: int | None = None


def share_cores(calls_at_once: int) -> int:
    """Give each of ``calls_at_once`` concurrent model calls its share of :func:`cpu_cores` (at least one thread): the
    ONNX Runtime sessions opened from now on (:func:`session`) and a torch model loaded from now on
    (:func:`shared_threads`) use that many intra-op threads, and ONNX Runtime's do not spin while they wait. Without
    it, each of two calls on two cores runs two threads that spin: four busy threads on two cores, which take the
    cores from one another and from the process's other threads. Returns the threads per call."""
    global _shared_threads
    _shared_threads = max(1, cpu_cores() // max(1, int(calls_at_once)))
    return _shared_threads


def shared_threads() -> int | None:
    """The intra-op threads per model call that :func:`share_cores` set; None when it was not called."""
    return _shared_threads


def session(path: Path, threads: int | None = None) -> Any:
    """An ONNX Runtime CPU session of ``path`` (``threads``: intra-op threads; default the share
    :func:`share_cores` set, not spinning, else ONNX Runtime's, one per physical core, as torch's)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    threads = threads or _shared_threads
    if _shared_threads is not None:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def fast_tokenizer(folder: str | os.PathLike, max_length: int | None) -> Any | None:
    """The folder's ``tokenizer.json`` (None without one, or where its config asks for what the file alone does not
    do: :func:`_agrees`), truncating to ``max_length`` and padding to the longest text of a batch with the folder's
    pad token, as transformers' fast tokenizer does with ``padding=True, truncation=True``."""
    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file():
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    config = read_json(folder / "tokenizer_config.json")
    if not _agrees(read_json(folder / "tokenizer.json"), config):
        return None
    pad = config.get("pad_token") or read_json(folder / "special_tokens_map.json").get("pad_token")
    if isinstance(pad, dict):
        pad = pad.get("content")
    pad_id = tokenizer.token_to_id(pad) if isinstance(pad, str) else None
    if pad_id is None:
        return None
    tokenizer.no_truncation()
    if max_length:
        tokenizer.enable_truncation(max_length, strategy="longest_first")
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad, direction=config.get("padding_side", "right"))
    return tokenizer


def _agrees(spec: dict, config: dict) -> bool:
    """Whether ``tokenizer.json`` alone tokenises as transformers does with ``tokenizer_config.json`` beside it:
    transformers applies the config's ``do_lower_case`` to a BERT normaliser and its ``truncation_side``; a config
    that says otherwise than the file (or truncates on the left) is left to transformers."""
    normalizer = spec.get("normalizer") if isinstance(spec.get("normalizer"), dict) else {}
    if "do_lower_case" in config and normalizer.get("type") == "BertNormalizer" \
            and bool(config["do_lower_case"]) != bool(normalizer.get("lowercase", True)):
        return False
    return config.get("truncation_side") in (None, "right")


def model_max_length(folder: str | os.PathLike) -> int | None:
    """The tokenizer's ``model_max_length`` (tokenizer_config.json), None when it gives none."""
    value = read_json(Path(folder) / "tokenizer_config.json").get("model_max_length")
    return int(value) if isinstance(value, (int, float)) and value > 0 else None


def batch_inputs(tokenizer: Any, texts: list[str], names: list[str]) -> dict:
    """A batch's model inputs (int64 arrays) from :func:`fast_tokenizer`."""
    import numpy as np

    encodings = tokenizer.encode_batch(texts)
    columns = {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
               "token_type_ids": [e.type_ids for e in encodings]}
    return {n: np.asarray(columns[n], dtype=np.int64) for n in names}
