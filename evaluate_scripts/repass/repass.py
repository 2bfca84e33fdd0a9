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
)

_CITATION = """\
@inproceedings{gokhan-etal-2025-regnlp,
    title = "{R}eg{NLP} in Action: Facilitating Compliance Through Automated Information Retrieval and Answer Generation",
    author = "Gokhan, Tuba and Wang, Kexin and Gurevych, Iryna and Briscoe, Ted",
    booktitle = "Proceedings of the Natural Legal Language Processing Workshop 2025",
    year = "2025",
    eprint = "2409.05677",
    archivePrefix = "arXiv",
}
"""

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
    predictions (`list` of `str`): generated answers. An empty or blank answer is skipped (as the reference does):
        its per-item scores are `None` and it does not count in the means.
    passages (`list` of `list` of `str`, or `list` of `str`): the retrieved passages of each answer; a single
        string per answer is accepted.
    mode (`str`, optional): override the module's `mode` ("reference" or "paper") for this call.
Module configuration (keyword arguments of `evaluate.load`):
    nli_model, coverage_model, obligation_model (`str`): Hub ids or local folders (defaults: the official
        models and `artifacts/obligation_classifier`); sentence_splitter ("punkt", "nltk" or a callable);
        batch_size (`int`); device (`str` or `int`, default: CUDA when available); mode (`str`, default "reference").
Returns:
    entailment (`float`): mean E over scored answers, in [0, 1].
    contradiction (`float`): mean C, in [0, 1].
    obligation_coverage (`float`): mean OC, in [0, 1].
    repass (`float`): mean RePASs, in [0, 1].
    per_item (`dict` of `list`): the four scores of each answer (`None` where skipped).
    skipped (`list` of `int`): indices of skipped (empty) answers.
    n_scored (`int`): number of answers scored.
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
    ['contradiction', 'entailment', 'n_scored', 'obligation_coverage', 'repass', 'skipped']
"""

_CONFIG_KEYS = ("nli_model", "coverage_model", "obligation_model", "sentence_splitter", "batch_size", "device", "mode",
                "threshold", "show_progress")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Repass(evaluate.Metric):
    def __init__(self, *args, nli_model=OFFICIAL_NLI_MODEL, coverage_model=OFFICIAL_COVERAGE_MODEL,
                 obligation_model=OFFICIAL_OBLIGATION_MODEL, sentence_splitter="punkt", batch_size=DEFAULT_BATCH_SIZE,
                 device=None, mode=DEFAULT_MODE, threshold=COVERAGE_THRESHOLD, show_progress=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.scorer_config = dict(nli_model=nli_model, coverage_model=coverage_model,
                                  obligation_model=obligation_model, sentence_splitter=sentence_splitter,
                                  batch_size=batch_size, device=device, mode=mode, threshold=threshold,
                                  show_progress=show_progress)
        self._scorers = {}

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": datasets.Value("string"),
                                   "passages": datasets.Sequence(datasets.Value("string"))}),
                datasets.Features({"predictions": datasets.Value("string"), "passages": datasets.Value("string")}),
            ],
            codebase_urls=["https://github.com/RegNLP/RePASs"],
            reference_urls=["https://arxiv.org/abs/2409.05677"],
        )

    def _scorer(self, **overrides):
        from rirag.scoring.repass import RePASsConfig, RePASsScorer

        config = {**self.scorer_config, **{k: v for k, v in overrides.items() if k in _CONFIG_KEYS}}
        key = tuple(sorted((k, repr(v)) for k, v in config.items()))
        if key not in self._scorers:  # models are loaded lazily by the scorer and cached per process
            self._scorers[key] = RePASsScorer(RePASsConfig(**config))
        return self._scorers[key]

    def _compute(self, predictions, passages, **kwargs):
        unknown = set(kwargs) - set(_CONFIG_KEYS)
        if unknown:
            raise TypeError(f"unknown RePASs arguments: {sorted(unknown)}; known: {list(_CONFIG_KEYS)}")
        return self._scorer(**kwargs).score(predictions, passages)
