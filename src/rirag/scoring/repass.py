"""RePASs scorer: model inference around the pure functions in :mod:`rirag.scoring.core`.

Fast path: for a batch of answers every (premise, hypothesis) pair is collected first, deduplicated and scored in
length-sorted batches; obligation classification is batched over the unique sentences; sentence splits are cached.

Modes (see ``evaluate_scripts/repass/README.md``):

* ``reference`` reproduces the RIRAG shared-task evaluation code (RegNLP/RePASs): passages joined by a space,
  obligations detected in passage *and* answer, the coverage model fed the single text
  ``"<answer obligation sentence> [SEP] <passage obligation>"`` and its top label read.
* ``paper`` follows section 4 of the paper: each passage split on its own, every answer sentence checked against
  each passage obligation as a proper (premise=answer sentence, hypothesis=obligation) pair.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rirag.scoring import core
from rirag.scoring.constants import (
    CONTRADICTION,
    COVERAGE_JOIN,
    COVERAGE_THRESHOLD,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODE,
    ENTAILMENT,
    MODES,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    OFFICIAL_OBLIGATION_MODEL,
    PASSAGE_JOIN,
    ROUND_DECIMALS,
)

logger = logging.getLogger(__name__)

SCORE_KEYS = ("entailment", "contradiction", "obligation_coverage", "repass")
Input = tuple[str, str | None]


@dataclass
class RePASsConfig:
    nli_model: str = field(default=OFFICIAL_NLI_MODEL, metadata={"help": "NLI cross-encoder for E and C."})
    coverage_model: str = field(default=OFFICIAL_COVERAGE_MODEL, metadata={"help": "NLI model for obligation coverage."})
    obligation_model: str = field(default=OFFICIAL_OBLIGATION_MODEL, metadata={"help": "Obligation sentence classifier."})
    sentence_splitter: Any = field(default="punkt", metadata={"help": "'punkt', 'nltk' or a callable str -> sentences."})
    batch_size: int = field(default=DEFAULT_BATCH_SIZE, metadata={"help": "Inputs per forward pass."})
    device: Any = field(default=None, metadata={"help": "'cpu', 'cuda', 'cuda:1', a CUDA ordinal, or None (auto)."})
    mode: str = field(default=DEFAULT_MODE, metadata={"help": f"One of {MODES}."})
    threshold: float = field(default=COVERAGE_THRESHOLD, metadata={"help": "Coverage entailment threshold (strict >)."})
    show_progress: bool = field(default=True, metadata={"help": "tqdm bars over inference batches."})

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}")


def normalise_inputs(predictions: Any, passages: Any) -> list[tuple[str | None, list[str]]]:
    """Validate and normalise: one answer (``None``/blank = skip) and a list of passage strings per item.

    A single string for ``passages`` of one item is accepted; the caller's lists are never mutated.
    """
    if isinstance(predictions, str):
        predictions = [predictions]
        if isinstance(passages, str) or (isinstance(passages, (list, tuple)) and all(isinstance(p, str) for p in passages)):
            passages = [passages]
    predictions, passages = list(predictions), list(passages)
    if len(predictions) != len(passages):
        raise ValueError(
            f"predictions and passages must have the same length, got {len(predictions)} predictions "
            f"and {len(passages)} passage lists"
        )
    items = []
    for i, (answer, item_passages) in enumerate(zip(predictions, passages)):
        if answer is not None and not isinstance(answer, str):
            raise TypeError(f"predictions[{i}] must be a string (or None to skip), got {type(answer).__name__}")
        if item_passages is None:
            item_passages = []
        elif isinstance(item_passages, str):
            item_passages = [item_passages]
        elif isinstance(item_passages, (list, tuple)):
            for j, p in enumerate(item_passages):
                if not isinstance(p, str):
                    raise TypeError(f"passages[{i}][{j}] must be a string, got {type(p).__name__}")
            item_passages = list(item_passages)
        else:
            raise TypeError(f"passages[{i}] must be a string or a list of strings, got {type(item_passages).__name__}")
        items.append((answer if answer and answer.strip() else None, item_passages))
    return items


class _Classifier:
    """One sequence classifier: deduplicated, length-sorted, batched probabilities over (text, text_pair) inputs."""

    def __init__(self, name: str, device: str, batch_size: int, show_progress: bool, positions_only: bool = False):
        from rirag.scoring.models import load_classifier, max_length_of

        self.name = name
        self.tokenizer, self.model = load_classifier(name, device)
        self.device = device
        self.batch_size = batch_size
        self.show_progress = show_progress
        # positions_only: truncate only where the model itself would fail (the reference's coverage pipeline
        # does not truncate), otherwise at the tokenizer's model_max_length (the reference's truncation=True)
        self.max_length = max_length_of(self.tokenizer, self.model, positions_only=positions_only)

    @property
    def config(self):
        return self.model.config

    def probabilities(self, inputs: Sequence[Input], desc: str = "") -> dict[Input, np.ndarray]:
        """Softmax probabilities for each unique input; returns {input: probs}."""
        import torch
        from tqdm.auto import tqdm

        unique = sorted(dict.fromkeys(inputs), key=lambda x: len(x[0]) + len(x[1] or ""))
        out: dict[Input, np.ndarray] = {}
        if not unique:
            return out
        starts = range(0, len(unique), self.batch_size)
        bar = tqdm(starts, desc=desc or self.name, disable=not self.show_progress, leave=False)
        with torch.inference_mode():
            for b in bar:
                batch = unique[b : b + self.batch_size]
                firsts = [x[0] for x in batch]
                seconds = [x[1] for x in batch]
                if any(s is None for s in seconds):
                    if not all(s is None for s in seconds):
                        raise ValueError("a batch mixes single texts and text pairs")
                    seconds = None
                features = self.tokenizer(
                    firsts, seconds, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
                ).to(self.device)
                logits = self.model(**features).logits.float().cpu().numpy()
                probs = core.softmax(logits)
                out.update(zip(batch, probs))
        return out


class RePASsScorer:
    """Score answers against their retrieved passages with RePASs. Models load on first use and are cached."""

    def __init__(self, config: RePASsConfig | None = None, **kwargs):
        self.config = config or RePASsConfig(**kwargs)
        if config is not None and kwargs:
            self.config = RePASsConfig(**{**asdict(config), **kwargs})
        self._classifiers: dict[str, _Classifier] = {}

    # -- models -------------------------------------------------------------------------------------------------
    def _classifier(self, name: str, role: str = "") -> _Classifier:
        key = f"{role}:{name}" if role else name
        if key not in self._classifiers:
            from rirag.scoring.models import resolve_device

            device = resolve_device(self.config.device)
            self._classifiers[key] = _Classifier(name, device, self.config.batch_size, self.config.show_progress,
                                                 positions_only=role == "coverage")
        return self._classifiers[key]

    # -- scoring --------------------------------------------------------------------------------------------------
    def _split_item(self, answer: str, passages: list[str], split: Callable[[str], Sequence[str]]):
        if self.config.mode == "reference":
            passage_sentences = list(split(PASSAGE_JOIN.join(passages)))
        else:
            passage_sentences = [s for p in passages for s in split(p)]
        return passage_sentences, list(split(answer))

    def score(self, predictions: Any, passages: Any) -> dict[str, Any]:
        """Score each answer against its passages.

        Returns the means over scored items (``None`` when nothing was scored), ``per_item`` lists (``None`` for a
        skipped item), ``skipped`` (indices of empty answers, skipped as the reference does) and ``n_scored``.
        """
        from rirag.scoring.models import label_index, obligation_index
        from rirag.scoring.sentences import get_splitter

        cfg = self.config
        items = normalise_inputs(predictions, passages)
        split = get_splitter(cfg.sentence_splitter)
        reference = cfg.mode == "reference"

        splits = []
        for i, (answer, item_passages) in enumerate(items):
            if answer is None:
                splits.append(None)
                continue
            p_sents, a_sents = self._split_item(answer, item_passages, split)
            if not p_sents:
                logger.warning("item %d has no passage text: E = C = OC = 0 (as the reference's formulas give)", i)
            splits.append((p_sents, a_sents))
        scored = [s for s in splits if s is not None]

        # Obligation detection (batched over unique sentences)
        to_classify = {s for p, a in scored for s in (p + a if reference else p)}
        is_obligation: dict[str, bool] = {}
        if to_classify:
            ob = self._classifier(cfg.obligation_model)
            ob_idx = obligation_index(ob.config)
            probs = ob.probabilities([(s, None) for s in to_classify], desc="obligations")
            is_obligation = {k[0]: int(np.argmax(v)) == ob_idx for k, v in probs.items()}

        # NLI pairs (premise = passage sentence, hypothesis = answer sentence)
        nli_inputs = [(p, a) for ps, as_ in scored for p in ps for a in as_]
        nli_probs: dict[Input, np.ndarray] = {}
        if nli_inputs:
            nli = self._classifier(cfg.nli_model)
            e_idx, c_idx = label_index(nli.config, ENTAILMENT), label_index(nli.config, CONTRADICTION)
            nli_probs = nli.probabilities(nli_inputs, desc="NLI pairs")

        # Coverage inputs
        def coverage_inputs(ps, as_):
            obligations = [p for p in ps if is_obligation[p]]
            if reference:
                answer_obligations = [a for a in as_ if is_obligation[a]]
                return obligations, answer_obligations, [
                    [(f"{a}{COVERAGE_JOIN}{o}", None) for a in answer_obligations] for o in obligations
                ]
            return obligations, as_, [[(a, o) for a in as_] for o in obligations]

        cov_per_item = [coverage_inputs(ps, as_) for ps, as_ in scored]
        covered = self._coverage_rounds(cov_per_item, reference)
        per_item: dict[str, list] = {k: [] for k in SCORE_KEYS}
        skipped = []
        scored_iter = iter(enumerate(zip(scored, cov_per_item)))
        for i, s in enumerate(splits):
            if s is None:
                skipped.append(i)
                for k in SCORE_KEYS:
                    per_item[k].append(None)
                continue
            item_no, ((ps, as_), (obligations, candidates, rows)) = next(scored_iter)
            if ps and as_:
                probs = np.stack([nli_probs[(p, a)] for p in ps for a in as_]).reshape(len(ps), len(as_), -1)
                e_matrix, c_matrix = probs[..., e_idx], probs[..., c_idx]
            else:
                e_matrix = c_matrix = np.zeros((len(ps), len(as_)))
            # an obligation is covered by any candidate: one column carrying the verdict is equivalent
            hits = (np.asarray(covered[item_no], dtype=bool).reshape(len(obligations), 1) if candidates
                    else np.zeros((len(obligations), 0), dtype=bool))
            result = core.score_item(e_matrix, c_matrix, hits, ROUND_DECIMALS)
            for k in SCORE_KEYS:
                per_item[k].append(result[k])

        return summarise(per_item, skipped)

    def _coverage_rounds(self, cov_per_item, reference: bool) -> list[list[bool]]:
        """Covered flag of each passage obligation of each item.

        Like the reference's early ``break``, candidates are tried in rounds (round j = the j-th candidate sentence
        of every still-uncovered obligation, all items batched together), so covered obligations cost no more
        pairs. The result equals ``any`` over all candidates.
        """
        from rirag.scoring.models import label_index

        covered = [[False] * len(obligations) for obligations, _, _ in cov_per_item]
        pending = [(i, k) for i, (obligations, candidates, _) in enumerate(cov_per_item) if candidates
                   for k in range(len(obligations))]
        if not pending:
            return covered
        cov = self._classifier(self.config.coverage_model, role="coverage")
        cov_idx = label_index(cov.config, ENTAILMENT)
        j = 0
        while pending:
            inputs = [cov_per_item[i][2][k][j] for i, k in pending]
            probs = cov.probabilities(inputs, desc=f"coverage round {j + 1}")
            batch = np.stack([probs[x] for x in inputs])[:, None, :]
            hits = core.coverage_hits(batch, cov_idx, self.config.threshold, require_top_label=reference)[:, 0]
            still = []
            for (i, k), hit in zip(pending, hits):
                if hit:
                    covered[i][k] = True
                elif j + 1 < len(cov_per_item[i][1]):
                    still.append((i, k))
            pending, j = still, j + 1
        return covered

    def score_dataset(self, dataset: Any, answer_column: str = "Answer",
                      passages_column: str = "RetrievedPassages") -> dict[str, Any]:
        """Score a ``datasets.Dataset``; under ``accelerate launch`` each process scores its shard.

        Results are gathered on every process in input order.
        """
        from accelerate import PartialState
        from accelerate.utils import gather_object

        for column in (answer_column, passages_column):
            if column not in dataset.column_names:
                raise KeyError(f"dataset has no column {column!r}; columns: {dataset.column_names}")
        state = PartialState()
        indices = list(range(len(dataset)))
        with state.split_between_processes(indices) as shard:
            shard = list(shard)
            part = dataset.select(shard) if shard else None
            result = self.score(part[answer_column], part[passages_column]) if part is not None else None
            records = [
                (idx, {k: result["per_item"][k][j] for k in SCORE_KEYS}) for j, idx in enumerate(shard)
            ] if result else []
        if state.num_processes > 1:
            records = gather_object(records)
        records = sorted(records, key=lambda r: r[0])
        per_item = {k: [r[1][k] for r in records] for k in SCORE_KEYS}
        skipped = [r[0] for r in records if r[1]["repass"] is None]
        return summarise(per_item, skipped)


def summarise(per_item: dict[str, list], skipped: list[int]) -> dict[str, Any]:
    """Means over scored items plus the per-item lists."""
    out: dict[str, Any] = {}
    for k in SCORE_KEYS:
        values = [v for v in per_item[k] if v is not None]
        out[k] = float(np.mean(values)) if values else None
    out["per_item"] = per_item
    out["skipped"] = skipped
    out["n_scored"] = len(per_item["repass"]) - len(skipped)
    return out
