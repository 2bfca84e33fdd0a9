"""RePASs (Regulatory Passage Answer Stability Score) as an ``evaluate`` metric."""

import datasets
import evaluate

from rirag.scoring.constants import (
    COVERAGE_THRESHOLD,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODE,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    OFFICIAL_OBLIGATION_MODEL,
    REGNLP_BIBTEX,
)

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
    truncated_items (`list` of `int`): answers with a coverage input cut on the answer side.
    signature (`str`): what made the numbers: mode, the three models, precision, sentence splitter, coverage
        threshold and rirag version (`repass:mode=reference|nli=...|...`); its models say whether a number is
        "RePASs" or "RePASs (local judge)".
Examples:
    The composite from its parts (the rounding is the reference's):

    >>> from rirag.scoring.core import composite_score
    >>> composite_score(obligation_coverage_score=0.5, entailment=0.8, contradiction=0.1)
    0.73333

    With models (offline: the local judge; label such numbers "RePASs (local judge)"):

    >>> repass = evaluate.load("evaluate_scripts/repass", nli_model="artifacts/nli_judge",
    ...     coverage_model="artifacts/nli_judge", obligation_model="artifacts/obligation_classifier")  # doctest: +SKIP
    >>> results = repass.compute(predictions=["Firms must keep records for six years."],
    ...     passages=[["An Authorised Person must maintain records for at least six years."]])  # doctest: +SKIP
    >>> sorted(k for k in results if k != "per_item")  # doctest: +SKIP
    ['contradiction', 'entailment', 'n_scored', 'no_passage_text', 'obligation_coverage', 'repass', 'signature',
     'skipped', 'truncated_items', 'truncations']
"""

def _to_arrow_inputs(predictions, passages):
    """Validate (``TypeError`` naming the index) and normalise item by item for the Arrow features.

    Skipped answers (``None``/empty/blank) become ``""`` (the scorer skips them and reports the index), one
    passage string becomes a one-element list, and a bare-string ``predictions`` is one item.
    """
    from rirag.scoring.repass import normalise_inputs

    items = normalise_inputs(predictions, passages)
    return [a if a is not None else "" for a, _ in items], [p for _, p in items]


def _config_keys() -> tuple[str, ...]:
    """The scorer's options: the fields of ``RePASsConfig`` (one source of truth)."""
    import dataclasses

    from rirag.scoring.repass import RePASsConfig

    return tuple(f.name for f in dataclasses.fields(RePASsConfig))


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
            # one format: compute()/add_batch()/add() normalise every item to a list of passage strings first
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "passages": datasets.Sequence(datasets.Value("string"))}),
            codebase_urls=["https://github.com/RegNLP/RePASs"],
            reference_urls=["https://arxiv.org/abs/2409.05677"],
        )

    def _scorer(self, **overrides):
        from rirag.scoring.repass import RePASsConfig, RePASsScorer

        config = {**self.scorer_config, **{k: v for k, v in overrides.items() if k in _config_keys()}}
        key = tuple(sorted((k, repr(v)) for k, v in config.items()))
        if key not in self._scorers:  # models are loaded lazily by the scorer and cached per process
            self._scorers[key] = RePASsScorer(RePASsConfig(**config))
        return self._scorers[key]

    # Inputs are validated and normalised item by item *before* evaluate's Arrow encoding, which would otherwise
    # cast silently (7 -> "7"), split a string passage into characters after a list, fail on a leading None, and
    # leave a half-written batch behind that breaks the next call.
    def compute(self, *, predictions=None, passages=None, **kwargs):
        """Score ``predictions`` against ``passages`` (plus anything added with ``add``/``add_batch``).
"""
        if predictions is not None or passages is not None:
            predictions, passages = _to_arrow_inputs(predictions, passages)
        return self._guarded(super().compute, predictions=predictions, passages=passages, **kwargs)

    def add_batch(self, *, predictions=None, passages=None, **kwargs):
        """Add a batch of answers and their passages (validated and normalised item by item).
"""
        predictions, passages = _to_arrow_inputs(predictions, passages)
        return self._guarded(super().add_batch, predictions=predictions, passages=passages, **kwargs)

    def add(self, *, prediction=None, passages=None, **kwargs):
        """Add one answer and its passages (validated and normalised).
"""
        (prediction,), (passages,) = _to_arrow_inputs([prediction], [passages])
        return self._guarded(super().add, prediction=prediction, passages=passages, **kwargs)

    def _guarded(self, call, **kwargs):
        """``call(**kwargs)``; a failure resets the half-written state so that the next call starts clean."""
        try:
            return call(**kwargs)
        except BaseException:
            self._reset_after_failure()
            raise

    def _reset_after_failure(self):
        """Drop evaluate's per-call state after an error so the next call starts clean."""
        for lock in getattr(self, "filelocks", None) or []:
            try:
                lock.release()
            except Exception:  # noqa: BLE001 - best effort cleanup
                pass
        self.writer = None
        self.buf_writer = None
        self.data = None
        self.selected_feature_format = None
        self.cache_file_name = None
        self.filelock = None

    def _compute(self, predictions, passages, **kwargs):
        unknown = set(kwargs) - set(_config_keys())
        if unknown:
            raise TypeError(f"unknown RePASs arguments: {sorted(unknown)}; known: {list(_config_keys())}")
        return self._scorer(**kwargs).score(predictions, passages).to_dict()
