"""Typed card data: what a model or Space card says, one dataclass per artifact kind, saved beside the artifact.

A trainer fills its kind's dataclass (base model, the run's non-default hyperparameters, training facts, the
held-out numbers as a ``model-index``) and :func:`save_card` writes it as ``card_data.json`` next to the weights,
with the ``README.md`` its template (``model_cards/<kind>.md.j2``, :attr:`CardData.TEMPLATE`) renders from it.
``hub_push`` (:func:`rirag.hub.entry_cards.publish_card`) reads that file back, lets the manifest's words replace the
trainer's
(:data:`WORDS`), adds what only publishing knows (the repo id, Hub ids, the model-index from
``benchmarks/results/*.json``) and renders the same template: one card path, at training and at publish time.

Non-default hyperparameters are found as sentence-transformers' model-card callback finds them: the run's arguments
compared with the defaults of their dataclass (:func:`non_default_hyperparameters`).
"""

from __future__ import annotations

import enum
import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from rirag.constants import PASSAGE_PREFIX, QUERY_PREFIX
from rirag.hub.cards import CardError, model_index, render_card, results_from, results_table, with_install
from rirag.io import atomic_write_json, atomic_write_text, portable_args, weights_fingerprint
from rirag.scoring.constants import LOCAL_JUDGE_LABEL, NLI_ID2LABEL, OBLIGATION_ID2LABEL

#: Beside the artifact: the card data (this module's dataclasses as JSON) and the card rendered from it.
CARD_DATA_FILE = "card_data.json"
CARD_FILE = "README.md"
#: The RePASs metric script as a local path: what a card rendered at training time loads (hub_push names its repo).
LOCAL_METRIC = "evaluate_scripts/repass"
#: Fields where the manifest's curated words replace the trainer's when both give them; for every other field the
#: artifact's own record wins (the manifest's value only fills in for an artifact without card data).
WORDS = frozenset({"license", "datasets", "tags", "description", "recipe", "train_data", "limits"})
#: Training arguments never recorded as hyperparameters: paths, logging and saving cadence, progress bars, secrets
#: (sentence-transformers' model-card callback ignores the same kind of keys).
IGNORED_HYPERPARAMETERS = frozenset({
    "output_dir", "logging_dir", "overwrite_output_dir", "logging_strategy", "logging_first_step", "logging_steps",
    "eval_strategy", "evaluation_strategy", "eval_steps", "eval_delay", "save_strategy", "save_steps",
    "save_total_limit", "report_to", "run_name", "disable_tqdm", "show_progress_bar", "do_train", "do_eval",
    "do_predict", "push_to_hub", "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo",
    "push_to_hub_token", "push_to_hub_model_id", "push_to_hub_organization", "results_path",
    "model_name_or_path", "data", "data_dir", "data_path", "obliqa_dir",  # the card's base model and training data
})


#: safetensors' names of the floating-point tensor types, as torch names them.
SAFETENSORS_DTYPES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64"}


def config_dtype(folder: str | Path) -> str:
    """The dtype a folder's ``config.json`` declares (``dtype``, or ``torch_dtype`` of older transformers): what
    transformers loads the weights as; empty when it declares none."""
    path = Path(folder) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except ValueError:
        return ""
    return str(config.get("dtype") or config.get("torch_dtype") or "") if isinstance(config, dict) else ""


def weights_dtype(folder: str | Path) -> str:
    """The floating-point type of the tensors of a folder's ``*.safetensors`` files (read from their headers), joined
    with ``+`` when they differ; empty when there is none."""
    import struct

    found = set()
    for path in sorted(Path(folder).glob("*.safetensors")):
        with open(path, "rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8).ljust(8, b"\0"))
            if not 0 < size <= path.stat().st_size - 8:
                continue  # not a safetensors file (a stand-in)
            try:
                header = json.loads(fh.read(size))
            except ValueError:
                continue
        found |= {SAFETENSORS_DTYPES[t["dtype"]] for k, t in header.items()
                  if k != "__metadata__" and t.get("dtype") in SAFETENSORS_DTYPES}
    return "+".join(sorted(found))


def training_command(script: str, argv: list[str], run: Any = 1) -> str:
    """The command a trainer ran, as a card records it, so that running it again as written gives the same world size
    (and so the same global batch): ``python SCRIPT ARGS`` on one process; on N, ``accelerate launch --config_file
    CONFIG --num_processes N SCRIPT ARGS``, with the config that starts N processes on the run's device
    (:data:`rirag.models.CPU_MULTIPROCESS_CONFIG` on CPUs: a bare ``--num_processes N`` starts one process there;
    :data:`rirag.models.GPU_MULTIPROCESS_CONFIG` on GPUs). ``run``: the trainer's ``TrainingArguments`` (its
    ``world_size`` and device), or the process count of a CPU run."""
    import shlex

    from rirag.models import CPU_MULTIPROCESS_CONFIG, GPU_MULTIPROCESS_CONFIG

    world_size = int(getattr(run, "world_size", run) or 1)
    args = shlex.join(portable_args(argv))
    if world_size > 1:
        on_cpu = not hasattr(run, "device") or run.device.type == "cpu"
        config = CPU_MULTIPROCESS_CONFIG if on_cpu else GPU_MULTIPROCESS_CONFIG
        return f"accelerate launch --config_file {config} --num_processes {world_size} {script} {args}".rstrip()
    return f"python {script} {args}".rstrip()


def _labels(id2label: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in id2label.items())


#: Every card kind, by the template that renders it and by the kind recorded in card_data.json: each class below
#: that names its own ``TEMPLATE`` registers itself here when it is defined (one declaration per kind).
CARD_TYPES: list[type[CardData]] = []


@dataclass
class CardData:
    """The fields every card template uses. ``repo_id`` is what the usage snippet loads: the artifact's folder (or
    the trainer's ``hub_model_id``) at training time, the Hub repo once published."""

    TEMPLATE: ClassVar[str] = ""
    KIND: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("TEMPLATE"):  # a concrete kind (not a shared base such as RulebookCard)
            known = {c.KIND for c in CARD_TYPES} | {c.TEMPLATE for c in CARD_TYPES}
            if cls.KIND in known or cls.TEMPLATE in known:
                raise TypeError(f"{cls.__name__}: card kind {cls.KIND!r} or template {cls.TEMPLATE!r} is taken")
            CARD_TYPES.append(cls)

    name: str = ""
    repo_id: str = ""
    license: str = "apache-2.0"
    base_model: str | None = None
    datasets: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    description: str = ""
    command: str = "not recorded"
    recipe: str | None = None
    train_data: str = ""
    limits: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)  # training facts, by display name
    hyperparameters: dict[str, Any] = field(default_factory=dict)  # the run's non-default training arguments
    results: list[dict] = field(default_factory=list)  # rirag.hub.cards.results_table rows
    model_index: list[dict] = field(default_factory=list)
    #: rirag.io.weights_fingerprint of the folder the card is saved in (set by save_card): the weights ``results``
    #: and ``model_index`` were measured on; hub_push keeps them only for those exact weights.
    weights_sha256: str | None = None
    # the run's scale (rirag.training.runner.batch_facts): processes, per-device and global batch, examples (pairs) and
    # tokens seen summed over all ranks; None where not recorded
    world_size: int | None = None
    per_device_batch: int | None = None
    global_batch: int | None = None
    examples_seen: int | None = None
    tokens_seen: int | None = None

    @classmethod
    def from_dict(cls, values: dict, where: str = "card data") -> CardData:
        """The card of this kind from ``values``; a key that is not one of its fields is a :class:`CardError`."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise CardError(f"{where}: unknown field(s) {unknown} for a {cls.KIND} card; known: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict:
        return {"kind": self.KIND, **asdict(self)}

    def render(self, templates_dir: str | Path | None = None) -> str:
        return with_install(render_card(self.TEMPLATE, templates_dir, **asdict(self)))

    def with_results(self, data: Any, artifact: str, source: str) -> CardData:
        """This card with ``results`` and ``model_index`` read from one results record (as hub_push reads the file
        the trainer writes it to, so both give the same model-index)."""
        found = results_from(data, artifact, source)
        self.results, self.model_index = results_table(found), model_index(self.name, found)
        return self


@dataclass
class ClassifierCard(CardData):
    """The obligation classifier (``train/obligation_classifier.py``)."""

    TEMPLATE: ClassVar[str] = "obligation_classifier.md.j2"
    KIND: ClassVar[str] = "classifier"

    labels: str = field(default_factory=lambda: _labels(OBLIGATION_ID2LABEL))
    metric_repo: str = LOCAL_METRIC
    weights_dtype: str = ""  # the floating-point type of the weights' tensors (weights_dtype), e.g. float16
    config_dtype: str = ""  # the dtype config.json declares (config_dtype): what they load as


@dataclass
class JudgeCard(CardData):
    """The local NLI judge (``train/nli_judge.py``); ``probe`` is its in-domain probe accuracy, overall and per type."""

    TEMPLATE: ClassVar[str] = "nli_judge.md.j2"
    KIND: ClassVar[str] = "judge"

    labels: str = field(default_factory=lambda: _labels(NLI_ID2LABEL))
    local_judge_label: str = LOCAL_JUDGE_LABEL
    probe: dict | None = None


@dataclass
class EncoderCard(CardData):
    """A sentence-transformers bi-encoder (entailment / contrastive tuning)."""

    TEMPLATE: ClassVar[str] = "sentence_transformer.md.j2"
    KIND: ClassVar[str] = "encoder"

    query_prefix: str = QUERY_PREFIX
    passage_prefix: str = PASSAGE_PREFIX


@dataclass
class RerankerCard(CardData):
    """A cross-encoder reranker (``train/reranker.py``)."""

    TEMPLATE: ClassVar[str] = "cross_encoder_reranker.md.j2"
    KIND: ClassVar[str] = "reranker"


@dataclass
class LearnedFusionCard(CardData):
    """A learned-fusion ranker (``train/learned_fusion.py``); ``encoders``: ``{path, repo, hub_or_path}`` each."""

    TEMPLATE: ClassVar[str] = "learned_fusion.md.j2"
    KIND: ClassVar[str] = "learned-fusion"

    encoders: list[dict] = field(default_factory=list)
    feature_version: int | None = None
    memory: bool = False
    eval_split: str = "validation"


@dataclass
class RAFTAdapterCard(CardData):
    """A RAFT LoRA adapter, or its base with the adapter merged in (``train/raft.py`` writes one of each).
    ``variant``: ``adapter`` or ``merged``; ``adapter``: the adapter's folder (its Hub id once published);
    ``lora``: the recipe (LoRA, quantisation, optimiser, schedule), by display name; ``raft_data``: the RAFT
    DatasetDict trained on (``dataset``, ``split``, ``rows``, ``dropped_too_long``, the builder's ``report``);
    ``training``: the run's measured facts (rows, steps, loss, tokens per second, hardware). Named apart from the
    base fields they would clash with (``recipe`` is the recipe file, ``results`` the benchmark rows)."""

    TEMPLATE: ClassVar[str] = "raft_adapter.md.j2"
    KIND: ClassVar[str] = "raft"

    variant: str = "adapter"
    adapter: str = ""
    lora: dict[str, Any] = field(default_factory=dict)
    raft_data: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)


@dataclass
class NLIDatasetCard(CardData):
    """The NLI pairs of the local judge (``dataset_builders/nli.py``): rows per split and source."""

    TEMPLATE: ClassVar[str] = "nli_dataset.md.j2"
    KIND: ClassVar[str] = "nli-dataset"

    splits: list[str] = field(default_factory=list)
    data_files: list[dict] = field(default_factory=list)
    statistics: list[dict] = field(default_factory=list)


@dataclass
class RulebookCard(CardData):
    """A rulebook's data built by ``rirag data ingest`` / ``rirag data xref``: where its text comes from
    (``source_text``), when it was captured, the terms of that text, the commands that rebuild it from the saved pages
    (``rebuild``) and, for a builder-only entry (``builder_only``: the terms do not allow redistributing the text),
    the fact that the repository holds the card and no data."""

    source_text: str = ""
    captured: str = ""
    terms: str = ""
    builder_only: bool = False
    rebuild: list[str] = field(default_factory=list)


@dataclass
class RulebookCorpusCard(RulebookCard):
    """A corpus folder written by ``rirag data ingest``; ``report``: its build report (counts, no text)."""

    TEMPLATE: ClassVar[str] = "rulebook_corpus.md.j2"
    KIND: ClassVar[str] = "rulebook-corpus"

    report: dict[str, Any] = field(default_factory=dict)


@dataclass
class XrefGraphCard(RulebookCard):
    """A cross-reference graph written by ``rirag data xref`` (its ``xref`` datasets config): ``summary`` (its
    counts), ``section`` (what a row is and how references resolve, :func:`rirag.xref.graph.card_section`) and
    ``quality`` (the resolver's measured precision and recall on this corpus's labelled sample, by set, with the
    command that measured them)."""

    TEMPLATE: ClassVar[str] = "xref_dataset.md.j2"
    KIND: ClassVar[str] = "xref-graph"

    config: str = "xref"
    data_file: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    section: str = ""
    quality: dict[str, Any] = field(default_factory=dict)


@dataclass
class DemoSpaceCard(CardData):
    """The demo Space: the models it uses and its configuration variables (``{name, default, help}`` each)."""

    TEMPLATE: ClassVar[str] = "demo_space.md.j2"
    KIND: ClassVar[str] = "demo-space"

    models: list[str] = field(default_factory=list)
    variables: list[dict] = field(default_factory=list)
    #: the variables the Space is created with (``{name, value}``, Hub ids), which a local run sets the same way
    space_env: list[dict] = field(default_factory=list)




def card_type(template_or_kind: str) -> type[CardData]:
    for cls in CARD_TYPES:
        if template_or_kind in (cls.TEMPLATE, cls.KIND):
            return cls
    known = ", ".join(f"{c.KIND} ({c.TEMPLATE})" for c in CARD_TYPES)
    raise CardError(f"no card data type for {template_or_kind!r}; known: {known}")


def save_card(card: CardData, folder: str | Path) -> str:
    """Write ``card_data.json`` and the ``README.md`` rendered from it into ``folder``; returns the card text. The
    card records the fingerprint of the weights already in ``folder`` (:func:`rirag.io.weights_fingerprint`)."""
    card.weights_sha256 = weights_fingerprint(folder) or card.weights_sha256
    if isinstance(card, ClassifierCard):
        card.weights_dtype = weights_dtype(folder) or card.weights_dtype
        card.config_dtype = config_dtype(folder) or card.config_dtype
    text = card.render()
    atomic_write_json(Path(folder) / CARD_DATA_FILE, card.to_dict())
    atomic_write_text(Path(folder) / CARD_FILE, text)
    return text


def load_card_data(folder: str | Path, expected: type[CardData] | None = None) -> CardData | None:
    """The card data saved in ``folder`` (None when there is none); a malformed file, or one of another kind than
    ``expected``, is a :class:`CardError` naming it."""
    path = Path(folder) / CARD_DATA_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise CardError(f"{path}: malformed JSON ({err.msg}, line {err.lineno})") from err
    if not isinstance(raw, dict) or "kind" not in raw:
        raise CardError(f"{path}: expected a JSON object with a 'kind'")
    cls = card_type(str(raw.pop("kind")))
    if expected is not None and cls is not expected:
        raise CardError(f"{path}: a {cls.KIND} card, but {expected.TEMPLATE} renders {expected.KIND} cards")
    return cls.from_dict(raw, where=str(path))


# --------------------------------------------------------------------------------------------------
# Non-default hyperparameters
# --------------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON- and YAML-friendly copy of an argument value (enums by value, callables by name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if callable(value):
        return getattr(value, "__qualname__", type(value).__name__)
    return str(value)


def _fresh_defaults(cls: type, **kwargs: Any) -> dict:
    """``cls(**kwargs).to_dict()`` for a ``TrainingArguments`` class without touching accelerate's shared state: a
    fresh instance would reset it (afterwards every rank of a multi-process run says it is process 0 of 1), so it is
    built on the state already configured (``use_configured_state``) when there is one."""
    from accelerate import PartialState

    if PartialState._shared_state:
        kwargs["accelerator_config"] = {"use_configured_state": True}
    fresh = cls(**kwargs).to_dict()
    fresh.pop("accelerator_config", None)
    return fresh


def _values_and_defaults(args: Any) -> tuple[dict, dict]:
    """An arguments dataclass's values and its class defaults. ``transformers.TrainingArguments`` (it has
    ``to_dict``) is compared with a fresh instance, as ``__post_init__`` leaves it (with the run's device flags where
    the plain defaults cannot be built on this machine: those flags are then not recorded), built without touching
    the run's accelerate state (:func:`_fresh_defaults`)."""
    if hasattr(args, "to_dict"):
        output_dir = getattr(args, "output_dir", None) or "unused"
        values = args.to_dict()
        values.pop("accelerator_config", None)
        try:
            return values, _fresh_defaults(type(args), output_dir=output_dir)
        except ValueError:  # trl's SFTConfig defaults to bf16, which a machine without it refuses: the run's device
            device = {k: getattr(args, k) for k in ("use_cpu", "bf16", "fp16") if hasattr(args, k)}
            return values, _fresh_defaults(type(args), output_dir=output_dir, **device)
    values, defaults = {}, {}
    for f in fields(args):
        if not f.init:
            continue
        values[f.name] = getattr(args, f.name)
        if f.default is not MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not MISSING:
            defaults[f.name] = f.default_factory()
    return values, defaults


def non_default_hyperparameters(*arguments: Any, ignore: frozenset[str] = IGNORED_HYPERPARAMETERS) -> dict:
    """The arguments of a run that differ from their dataclass defaults, in field order, later objects winning
    (e.g. ``non_default_hyperparameters(script_args, training_args)``); paths, logging and secrets are left out."""
    out: dict[str, Any] = {}
    for args in arguments:
        values, defaults = _values_and_defaults(args)
        for key, value in values.items():
            if key in ignore or key not in defaults:
                continue
            if _plain(value) != _plain(defaults[key]):
                out[key] = _plain(value)
    return out
