"""RePASs signatures: which models, mode, precision and splitter made a score, recorded with the score.

Like BERTScore's hash, a signature is one line that travels with the numbers:

    repass:mode=reference|nli=artifacts/nli_judge|obligation=artifacts/obligation_classifier|coverage=artifacts/nli_judge|precision=float32|splitter=punkt|threshold=0.7|version=0.1.0

Only what changes a score is in it (the three models, the mode, the weights' precision, the sentence splitter, the
coverage threshold, the rirag version), not how fast it was computed (batch size, device, worker processes). Tables
read their "RePASs" / "RePASs (local judge)" label from it (:func:`judge_label`) instead of keeping that label by
hand. Importing this module loads no model and no heavy library.
"""

from __future__ import annotations

from typing import Any

from rirag.constants import VERSION
from rirag.scoring.constants import LOCAL_JUDGE_LABEL, OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL
from rirag.text.sentences import SPLITTERS

#: The signature's first word and its fields, in the order they are written.
SIGNATURE_PREFIX = "repass"
SIGNATURE_FIELDS = ("mode", "nli", "obligation", "coverage", "precision", "splitter", "threshold", "version")
#: The label of a score made with the official NLI and coverage models.
OFFICIAL_LABEL = "RePASs"
#: What documents print for a result that was stored before results carried a signature.
NOT_RECORDED = "signature not recorded"
#: The key under which a results row that holds other metrics too (benchmarks/generation.py) stores the signature of
#: its RePASs numbers (a RePASs result itself has it under ``signature``).
ROW_KEY = "repass_signature"

_SEPARATOR, _ASSIGN = "|", "="
_ESCAPES = (("%", "%25"), (_SEPARATOR, "%7C"), (_ASSIGN, "%3D"))


def _escape(value: str) -> str:
    for raw, code in _ESCAPES:
        value = value.replace(raw, code)
    return value


def _unescape(value: str) -> str:
    for raw, code in reversed(_ESCAPES):
        value = value.replace(code, raw)
    return value


def splitter_name(splitter: Any) -> str:
    """``punkt`` or ``nltk`` for the named splitters (or their functions), else ``module.qualname`` of a callable."""
    if splitter is None:
        return "punkt"
    if isinstance(splitter, str):
        return splitter
    for name, function in SPLITTERS.items():
        if splitter is function:
            return name
    return f"{getattr(splitter, '__module__', '?')}.{getattr(splitter, '__qualname__', type(splitter).__name__)}"


def repass_signature(config: Any) -> str:
    """The signature of a :class:`rirag.scoring.repass.RePASsConfig` (or anything with its fields)."""
    values = {"mode": config.mode, "nli": config.nli_model, "obligation": config.obligation_model,
              "coverage": config.coverage_model, "precision": config.precision,
              "splitter": splitter_name(config.sentence_splitter), "threshold": f"{config.threshold:g}",
              "version": VERSION}
    return f"{SIGNATURE_PREFIX}:" + _SEPARATOR.join(f"{k}{_ASSIGN}{_escape(str(values[k]))}"
                                                   for k in SIGNATURE_FIELDS)


def parse_signature(signature: str) -> dict[str, str]:
    """The fields of a signature (``ValueError`` when it is not one)."""
    prefix = f"{SIGNATURE_PREFIX}:"
    if not isinstance(signature, str) or not signature.startswith(prefix):
        raise ValueError(f"not a RePASs signature: {signature!r}")
    fields = {}
    for part in signature[len(prefix):].split(_SEPARATOR):
        key, assign, value = part.partition(_ASSIGN)
        if not assign:
            raise ValueError(f"not a RePASs signature (field {part!r}): {signature!r}")
        fields[key] = _unescape(value)
    missing = [k for k in ("nli", "coverage") if k not in fields]
    if missing:
        raise ValueError(f"RePASs signature without {missing}: {signature!r}")
    return fields


def is_official_judge(nli_model: str, coverage_model: str) -> bool:
    """Whether the official NLI and coverage models judge (otherwise numbers are 'RePASs (local judge)')."""
    return nli_model == OFFICIAL_NLI_MODEL and coverage_model == OFFICIAL_COVERAGE_MODEL


def judge_label(signature: str) -> str:
    """``RePASs`` for a signature with the official NLI and coverage models, else ``RePASs (local judge)``."""
    fields = parse_signature(signature)
    return OFFICIAL_LABEL if is_official_judge(fields["nli"], fields["coverage"]) else LOCAL_JUDGE_LABEL
