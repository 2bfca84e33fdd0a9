"""RePASs (Regulatory Passage Answer Stability Score) as an ``evaluate`` metric."""

import dataclasses

import datasets
import evaluate

# The scorer is rirag's own (src/rirag/scoring), vendored beside this script as flat files since rirag is on no package
# index: evaluate fetches this script and each file it imports relatively at the top level, nothing else (no package,
# no requirements.txt). `make install` and `make publish` write them (rirag.hub.vendor.write_vendored).
from .vendored_rirag_scoring_constants import (
    COVERAGE_THRESHOLD,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODE,
    HUB_NLI_JUDGE,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    OFFICIAL_OBLIGATION_MODEL,
    REGNLP_BIBTEX,
)
from .vendored_rirag_scoring_models import MissingModelError
from .vendored_rirag_scoring_repass import RePASsConfig, RePASsScorer, normalise_inputs
# Vendored files not imported above, imported so that evaluate fetches them (rirag.hub.vendor):
from .vendored_punkt import __name__ as _
from .vendored_punkt_annotate import __name__ as _
from .vendored_punkt_data_english import __name__ as _
from .vendored_punkt_inference_tokenizer import __name__ as _
from .vendored_punkt_model_parameters import __name__ as _
from .vendored_punkt_rules_boundaries import __name__ as _
from .vendored_punkt_rules_language import __name__ as _
from .vendored_punkt_rules_orthography import __name__ as _
from .vendored_punkt_rules_tokens import __name__ as _
from .vendored_punkt_rules_words import __name__ as _
from .vendored_rirag import __name__ as _
from .vendored_rirag_constants import __name__ as _
from .vendored_rirag_models import __name__ as _
from .vendored_rirag_scoring_classifier import __name__ as _
from .vendored_rirag_scoring_core import __name__ as _
from .vendored_rirag_scoring_signature import __name__ as _
from .vendored_rirag_scoring_workers import __name__ as _
from .vendored_rirag_text_sentences import __name__ as _

_CITATION = REGNLP_BIBTEX

_DESCRIPTION = """\
RePASs is a reference-free score for answers generated from retrieved regulatory passages. It combines an
entailment score E (mean over answer sentences of the best entailment probability given any passage sentence),
a contradiction score C (same with contradiction) and an obligation coverage score OC (share of passage
obligation sentences entailed by some answer sentence with probability > 0.7) into RePASs = (E - C + OC + 1) / 3.
`mode="reference"` reproduces the RIRAG shared-task evaluation code exactly; `mode="paper"` follows the paper's
definition of obligation coverage. Numbers computed with locally trained stand-in models must be reported as
"RePASs (local judge)".
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): generated answers. An answer that is `None`, empty or blank is skipped wherever
        it stands (as the reference skips empty answers): its per-item scores are `None`, its index is listed in
        `skipped` and it does not count in the means. Any other non-string is a `TypeError` naming its index.
    passages (`list` of `list` of `str`, or `list` of `str`): the retrieved passages of each answer; each item may
        be one string or a list of strings, independently of the others. A non-string is a `TypeError` naming its
        index.
    mode (`str`, optional): override the module's `mode` ("reference" or "paper") for this call.
Module configuration (keyword arguments of `evaluate.load`):
    nli_model, coverage_model, obligation_model (`str`): Hub ids or local folders (defaults: the papers' NLI
        models and the published `rirag/rirag-obligation-classifier`); sentence_splitter ("punkt", "nltk" or a
        callable);
        batch_size (`int` or "auto"); device (`str` or `int`, default: CUDA when available); mode (`str`, default
        "reference"); threshold (`float`, coverage entailment threshold, default 0.7); show_progress (`bool`);
        workers (`int` or "auto": CPU processes); precision ("float32", or "int8": the fast mode).
Returns (11 keys; the four means are `None` when no answer was scored):
    entailment (`float`): mean E over scored answers, in [0, 1].
    contradiction (`float`): mean C, in [0, 1].
    obligation_coverage (`float`): mean OC, in [0, 1].
    repass (`float`): mean RePASs, in [0, 1].
    per_item (`dict` of `list`): the four scores of each answer (`None` where skipped).
    skipped (`list` of `int`): indices of skipped (empty) answers.
    n_scored (`int`): number of answers scored.
    no_passage_text (`list` of `int`): scored answers whose passages hold no sentence (E = C = OC = 0).
    truncations (`dict`): inputs cut to fit a model (`nli`, `obligation`, `coverage`, `coverage_obligation`).
    truncated_items (`list` of `int`): answers with a coverage input cut, on the answer side (`coverage`) or on
        the obligation side too (`coverage_obligation`).
    signature (`str`): what made the numbers: mode, the three models, precision, sentence splitter, coverage
        threshold and rirag version (`repass:mode=reference|nli=...|...`); its models say whether a number is
        "RePASs" or "RePASs (local judge)".
Examples:
    With models (offline: the local judge; label such numbers "RePASs (local judge)"):

    >>> import evaluate
    >>> judge = "rirag/rirag-nli-judge"
    >>> repass = evaluate.load("rirag/repass", nli_model=judge, coverage_model=judge,
    ...     obligation_model="rirag/rirag-obligation-classifier")
    >>> results = repass.compute(predictions=["Firms must keep records for six years."],
    ...     passages=[["An Authorised Person must maintain records for at least six years."]])
    >>> sorted(results)[:5]
    ['contradiction', 'entailment', 'n_scored', 'no_passage_text', 'obligation_coverage']
"""

#: The one form evaluate stores: an answer string and a list of passage strings per item (every accepted form is
#: normalised to it by ``add_batch`` / ``add`` first). Not a list of forms: evaluate 0.4.6 picks a form from the
#: first item of the first batch, keeps it until ``compute``, checks only that first item and casts the others
#: silently (``7`` -> ``"7"``, a passage string after a list -> its characters, a list after a string -> its repr,
#: one non-string passage -> every passage of the batch JSON-quoted), refuses a leading ``None``, and after a refused
#: call keeps the refused call's form for the next one.
FEATURES = datasets.Features({"predictions": datasets.Value("string"),
                              "passages": datasets.Sequence(datasets.Value("string"))})


def _to_arrow_inputs(predictions, passages):
    """Validate every item (``TypeError`` naming the index, ``ValueError`` for unequal lengths) and normalise to
    :data:`FEATURES`: a skipped answer (``None``/empty/blank) becomes ``""`` (the scorer skips it and reports its
    index), one passage string becomes a one-element list, and a bare-string ``predictions`` is one item."""
    items = normalise_inputs(predictions, passages)
    return [a if a is not None else "" for a, _ in items], [p for _, p in items]


def _config_keys() -> tuple[str, ...]:
    """The scorer's options: the fields of ``RePASsConfig`` (one source of truth)."""
    return tuple(f.name for f in dataclasses.fields(RePASsConfig))


#: The module options that name a model, by the scorer's role for it.
MODEL_OPTIONS = {"nli": "nli_model", "coverage": "coverage_model", "obligation": "obligation_model"}


def missing_models_message(err: MissingModelError) -> str:
    """One line in ``evaluate``'s terms: which ``evaluate.load`` option names a model that cannot be loaded, and
    which Hub ids to pass instead (the scorer's own message speaks of the rirag command line)."""
    missing = getattr(err, "missing", None) or []
    if not missing:
        return str(err)
    named = ", ".join(f"{MODEL_OPTIONS[role]}={name!r} ({reason})" for role, name, reason in missing)
    return (f"RePASs cannot load {named}: pass a Hub id or a local model folder instead, e.g. "
            f'evaluate.load("<namespace>/repass", {", ".join(f"{MODEL_OPTIONS[r]}=..." for r, _, _ in missing)}); '
            f"without the Hub, fetch these once and run offline from the cache: the papers' "
            f'nli_model="{OFFICIAL_NLI_MODEL}", coverage_model="{OFFICIAL_COVERAGE_MODEL}", or the local judge '
            f'nli_model="{HUB_NLI_JUDGE}", coverage_model="{HUB_NLI_JUDGE}" (numbers then labelled '
            f'"RePASs (local judge)"), and obligation_model="{OFFICIAL_OBLIGATION_MODEL}"')


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Repass(evaluate.Metric):
    def __init__(self, *args, nli_model=OFFICIAL_NLI_MODEL, coverage_model=OFFICIAL_COVERAGE_MODEL,
                 obligation_model=OFFICIAL_OBLIGATION_MODEL, sentence_splitter="punkt", batch_size=DEFAULT_BATCH_SIZE,
                 device=None, mode=DEFAULT_MODE, threshold=COVERAGE_THRESHOLD, show_progress=True, workers=1,
                 precision="float32", **kwargs):
        super().__init__(*args, **kwargs)
        self.scorer_config = dict(nli_model=nli_model, coverage_model=coverage_model,
                                  obligation_model=obligation_model, sentence_splitter=sentence_splitter,
                                  batch_size=batch_size, device=device, mode=mode, threshold=threshold,
                                  show_progress=show_progress, workers=workers, precision=precision)
        self._scorers = {}

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=FEATURES,
            codebase_urls=["https://github.com/RegNLP/RePASs"],
            reference_urls=["https://arxiv.org/abs/2409.05677"],
        )

    def _scorer(self, **overrides):
        config = {**self.scorer_config, **{k: v for k, v in overrides.items() if k in _config_keys()}}
        key = tuple(sorted((k, repr(v)) for k, v in config.items()))
        if key not in self._scorers:  # models are loaded once, here, and cached per process
            scorer = RePASsScorer(RePASsConfig(**config))
            try:
                scorer.load_models()
            except MissingModelError as err:
                raise MissingModelError(missing_models_message(err)) from None
            self._scorers[key] = scorer
        return self._scorers[key]

    # The only overrides: every item is validated and normalised to FEATURES before evaluate's encoding (see
    # FEATURES for what evaluate would do otherwise); a refused input raises here, before evaluate's state is
    # touched, so an earlier add_batch / add stays and the next call starts from a clean format. `compute` is
    # evaluate's own: it passes its predictions and passages through add_batch.
    def add_batch(self, *, predictions=None, passages=None, **kwargs):
        """Add a batch of answers and their passages (validated and normalised item by item).
"""
        predictions, passages = _to_arrow_inputs(predictions, passages)
        return super().add_batch(predictions=predictions, passages=passages, **kwargs)

    def add(self, *, prediction=None, passages=None, **kwargs):
        """Add one answer and its passages (validated and normalised).
"""
        (prediction,), (passages,) = _to_arrow_inputs([prediction], [passages])
        return super().add(prediction=prediction, passages=passages, **kwargs)

    def _compute(self, predictions, passages, **kwargs):
        unknown = set(kwargs) - set(_config_keys())
        if unknown:
            raise TypeError(f"unknown RePASs arguments: {sorted(unknown)}; known: {list(_config_keys())}")
        return self._scorer(**kwargs).score(predictions, passages).to_dict()
