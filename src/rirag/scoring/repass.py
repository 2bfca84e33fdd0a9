"""RePASs scorer: model inference around the pure functions in :mod:`rirag.scoring.core`.

Less work than the reference loop, same scores: for a batch of answers every input is collected first and
deduplicated; inputs are tokenized once and batched by exact token length (no padding); an obligation already
covered is not tried again (the reference's early ``break``, in rounds across answers); sentence splits, obligation
labels and pair probabilities are cached across answers and calls, keyed so that another model or mode never reuses
an entry.

Modes (see ``evaluate_scripts/repass/README.md``):

* ``reference`` reproduces the RIRAG shared-task evaluation code (RegNLP/RePASs): passages joined by a space,
  obligations detected in passage *and* answer, the coverage model fed the single text
  ``"<answer obligation sentence> [SEP] <passage obligation>"`` and its top label read.
* ``paper`` follows section 4 of the paper: each passage split on its own, every answer sentence checked against
  each passage obligation as a proper (premise=answer sentence, hypothesis=obligation) pair.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from rirag.scoring import core
from rirag.scoring.classifier import (
    CUT_FIRST,
    CUT_SECOND,
    JOINED,
    NOT_TRUNCATED,
    PAIR,
    PAIR_KEEP_SECOND,
    SINGLE,
    Classifier,
    Input,
)
from rirag.scoring.constants import (
    AUTO_BATCH_SIZE,
    CONTRADICTION,
    COVERAGE_THRESHOLD,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODE,
    DEFAULT_PRECISION,
    ENTAILMENT,
    MODES,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    OFFICIAL_OBLIGATION_MODEL,
    PASSAGE_JOIN,
    PRECISIONS,
    ROUND_DECIMALS,
)
from rirag.scoring.models import MissingModelError, label_index, obligation_index, resolve_device
from rirag.scoring.signature import repass_signature
from rirag.scoring.workers import AUTO_WORKERS, resolve_workers
from rirag.text.sentences import get_splitter

logger = logging.getLogger(__name__)

SCORE_KEYS = ("entailment", "contradiction", "obligation_coverage", "repass")
TRUNCATION_KEYS = ("nli", "obligation", "coverage", "coverage_obligation")
#: One scored item's sentences: (passage sentences, answer sentences).
Split = tuple[list[str], list[str]]
#: One scored item's coverage task: (passage obligations, candidate answer sentences, inputs per obligation).
Coverage = tuple[list[str], list[str], list[list[Input]]]


@dataclass
class RePASsConfig:
    nli_model: str = field(default=OFFICIAL_NLI_MODEL, metadata={"help": "NLI cross-encoder for E and C."})
    coverage_model: str = field(default=OFFICIAL_COVERAGE_MODEL,
                                metadata={"help": "NLI model for obligation coverage."})
    obligation_model: str = field(default=OFFICIAL_OBLIGATION_MODEL,
                                  metadata={"help": "Obligation sentence classifier."})
    sentence_splitter: Any = field(default="punkt",
                                   metadata={"help": "'punkt', 'nltk' or a callable str -> sentences."})
    batch_size: Any = field(default=DEFAULT_BATCH_SIZE, metadata={
        "help": "Inputs per forward pass, or 'auto' (a token budget per pass, see rirag.scoring.constants)."})
    device: Any = field(default=None, metadata={"help": "'cpu', 'cuda', 'cuda:1', a CUDA ordinal, or None (auto)."})
    mode: str = field(default=DEFAULT_MODE, metadata={"help": f"One of {MODES}."})
    threshold: float = field(default=COVERAGE_THRESHOLD, metadata={"help": "Coverage entailment threshold (strict >)."})
    show_progress: bool = field(default=True, metadata={"help": "tqdm bars over inference batches."})
    precision: str = field(default=DEFAULT_PRECISION, metadata={
        "help": f"One of {PRECISIONS}: 'int8' is the optional fast mode (CPU dynamic quantisation; scores may "
                "differ from the reference, never the default)."})
    workers: Any = field(default=1, metadata={
        "help": "CPU processes for the forward passes (1 torch thread each), or 'auto' (one per core); see "
                "rirag.scoring.workers. Ignored on CUDA."})

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if isinstance(self.batch_size, str) and self.batch_size.isdigit():
            self.batch_size = int(self.batch_size)
        if self.batch_size != AUTO_BATCH_SIZE and (
                not isinstance(self.batch_size, int) or isinstance(self.batch_size, bool) or self.batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or {AUTO_BATCH_SIZE!r}, got {self.batch_size!r}")
        if isinstance(self.workers, str) and self.workers.isdigit():
            self.workers = int(self.workers)
        if self.workers != AUTO_WORKERS and (
                not isinstance(self.workers, int) or isinstance(self.workers, bool) or self.workers < 1):
            raise ValueError(f"workers must be a positive integer or {AUTO_WORKERS!r}, got {self.workers!r}")


def normalise_inputs(predictions: Any, passages: Any) -> list[tuple[str | None, list[str]]]:
    """Validate and normalise, item by item: one answer and a list of passage strings per item.

    An answer that is ``None``, empty or blank is skipped (it becomes ``None`` here; the scorer reports its index),
    wherever it stands. Each item's passages may be one string or a list of strings, independently of the other
    items. A bare string ``predictions`` is one item. Anything else that is not a string is a ``TypeError`` naming
    the index. The caller's lists are never mutated.
    """
    if isinstance(predictions, str):
        predictions = [predictions]
        if isinstance(passages, str) or (isinstance(passages, (list, tuple))
                                         and all(isinstance(p, str) for p in passages)):
            passages = [passages]
    if predictions is None or isinstance(predictions, (bytes, dict)) or not hasattr(predictions, "__iter__"):
        raise TypeError(f"predictions must be a list of strings, got {type(predictions).__name__}")
    if passages is None or isinstance(passages, (str, bytes, dict)) or not hasattr(passages, "__iter__"):
        raise TypeError(f"passages must be a list with one entry (a string or a list of strings) per prediction, "
                        f"got {type(passages).__name__}")
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
        items.append((answer if answer and answer.strip() else None, _item_passages(i, item_passages)))
    return items


def _item_passages(i: int, item_passages: Any) -> list[str]:
    """Item ``i``'s passages as a new list of strings (``None``: none; one string: one passage)."""
    if item_passages is None:
        return []
    if isinstance(item_passages, str):
        return [item_passages]
    if not isinstance(item_passages, (list, tuple)):
        raise TypeError(f"passages[{i}] must be a string or a list of strings, got {type(item_passages).__name__}")
    for j, p in enumerate(item_passages):
        if not isinstance(p, str):
            raise TypeError(f"passages[{i}][{j}] must be a string, got {type(p).__name__}")
    return list(item_passages)


def _truncation(classifier: Any, key: Input) -> int:
    getter = getattr(classifier, "truncation", None)
    return NOT_TRUNCATED if getter is None else getter(key)


def _score_item(split: Split, coverage: Coverage, covered: list[bool], nli_probs: dict[Input, np.ndarray],
                labels: tuple[int, int] | None) -> dict[str, float]:
    """E, C, OC and RePASs of one scored item from its NLI probabilities and coverage verdicts."""
    (ps, as_), (obligations, candidates, _) = split, coverage
    if ps and as_:
        e_idx, c_idx = labels
        probs = np.stack([nli_probs[(p, a)] for p in ps for a in as_]).reshape(len(ps), len(as_), -1)
        e_matrix, c_matrix = probs[..., e_idx], probs[..., c_idx]
    else:
        e_matrix = c_matrix = np.zeros((len(ps), len(as_)))
    # an obligation is covered by any candidate: one column carrying the verdict is equivalent
    hits = (np.asarray(covered, dtype=bool).reshape(len(obligations), 1) if candidates
            else np.zeros((len(obligations), 0), dtype=bool))
    return core.score_item(e_matrix, c_matrix, hits, ROUND_DECIMALS)


@dataclass(eq=False)
class RePASsResult(Mapping):
    """What :meth:`RePASsScorer.score` returns: the means, the per-item scores, what was skipped or cut, and the
    signature of the scorer that made the numbers (:mod:`rirag.scoring.signature`).

    Also a read-only mapping with the keys of :meth:`to_dict`, the plain dict the scorer returned before it was
    typed plus ``signature``, so ``result["repass"]`` and ``dict(result)`` work as before; it equals any mapping
    with the same keys and values.
    """

    entailment: float | None
    contradiction: float | None
    obligation_coverage: float | None
    repass: float | None
    per_item: dict[str, list]
    skipped: list[int]
    n_scored: int
    no_passage_text: list[int]
    truncations: dict[str, int]
    truncated_items: list[int]
    signature: str

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON-ready) with every field, in field order."""
        return {k: getattr(self, k) for k in RESULT_KEYS}

    def __getitem__(self, key: str) -> Any:
        if key not in RESULT_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(RESULT_KEYS)

    def __len__(self) -> int:
        return len(RESULT_KEYS)


#: The keys of a :class:`RePASsResult` (its fields), in order.
RESULT_KEYS = tuple(f.name for f in fields(RePASsResult))


class RePASsScorer:
    """Score answers against their retrieved passages with RePASs. Models load on first use and are cached."""

    def __init__(self, config: RePASsConfig | None = None, **kwargs):
        self.config = config or RePASsConfig(**kwargs)
        if config is not None and kwargs:
            self.config = RePASsConfig(**{**asdict(config), **kwargs})
        self._classifiers: dict[str, Classifier] = {}

    # -- models -------------------------------------------------------------------------------------------------
    def _classifier(self, name: str, role: str) -> Classifier:
        """The classifier of ``role`` (``nli``, ``obligation`` or ``coverage``), built on first use."""
        key = f"{role}:{name}"
        if key not in self._classifiers:
            if role == "coverage":
                encoding = JOINED if self.config.mode == "reference" else PAIR_KEEP_SECOND
            else:
                encoding = SINGLE if role == "obligation" else PAIR
            device = resolve_device(self.config.device)
            self._classifiers[key] = Classifier(name, device, self.config.batch_size, self.config.show_progress,
                                                encoding=encoding, precision=self.config.precision,
                                                workers=resolve_workers(self.config.workers, device))
        return self._classifiers[key]

    def load_models(self) -> None:
        """Load the three models now; missing ones raise one ``MissingModelError`` saying how to get each."""
        problems, missing = [], []
        for role, name in (("obligation", self.config.obligation_model), ("nli", self.config.nli_model),
                           ("coverage", self.config.coverage_model)):
            try:
                self._classifier(name, role)
            except MissingModelError as err:
                if str(err) not in problems:
                    problems.append(str(err))
                missing += [(role, model, reason) for _, model, reason in err.missing] or [(role, name, str(err))]
        if problems:
            raise MissingModelError("; ".join(problems), missing)

    @property
    def signature(self) -> str:
        """What makes this scorer's numbers: mode, models, precision, splitter, ... (:mod:`rirag.scoring.signature`)."""
        return repass_signature(self.config)

    def _loaded(self, role: str) -> Classifier | None:
        """The classifier of ``role`` if this scorer has built it, else ``None`` (nothing is loaded)."""
        return self._classifiers.get(f"{role}:{getattr(self.config, f'{role}_model')}")

    # -- scoring, in stages: sentences -> obligations -> NLI -> coverage -> per item -> truncations -> result ----
    def score(self, predictions: Any, passages: Any) -> RePASsResult:
        """Score each answer against its passages.

        Returns a :class:`RePASsResult` (a mapping; ``.to_dict()`` gives a plain dict): the means over scored items
        (``None`` when nothing was scored), ``per_item`` lists (``None`` for a skipped item), ``skipped`` (indices of
        ``None``/empty/blank answers, skipped as the reference skips empty answers), ``n_scored``,
        ``no_passage_text`` (indices of scored items whose passages hold no sentence; the reference crashes on
        those, here they score E = C = OC = 0), ``truncations`` (how many inputs were cut to fit a model: ``nli``
        and ``obligation`` as the reference cuts them; ``coverage`` inputs whose answer sentence was shortened
        because the coverage model cannot take the full length; ``coverage_obligation`` inputs where even the
        obligation had to be cut) with ``truncated_items``, the items affected by either coverage cut, and
        ``signature`` (:attr:`signature`: the models, mode, precision and splitter that made the numbers).
        """
        splits, no_passage_text = self._sentences(normalise_inputs(predictions, passages))
        scored = [s for s in splits if s is not None]
        is_obligation = self._obligations(scored)
        nli_probs, labels = self._nli(scored)
        coverage = [self._coverage_inputs(ps, as_, is_obligation) for ps, as_ in scored]
        covered, tried = self._coverage_rounds(coverage, self.config.mode == "reference")
        per_item = self._per_item(splits, coverage, covered, nli_probs, labels)
        truncations, truncated_items = self._truncations(splits, tried)
        skipped = [i for i, s in enumerate(splits) if s is None]
        return self._result(per_item, skipped, no_passage_text, truncations, truncated_items)

    def _split_item(self, answer: str, passages: list[str], split: Callable[[str], Sequence[str]]):
        if self.config.mode == "reference":
            passage_sentences = list(split(PASSAGE_JOIN.join(passages)))
        else:
            passage_sentences = [s for p in passages for s in split(p)]
        return passage_sentences, list(split(answer))

    def _sentences(self, items: list[tuple[str | None, list[str]]]) -> tuple[list[Split | None], list[int]]:
        """Stage 1: the (passage sentences, answer sentences) of each item, ``None`` for a skipped answer; and the
        indices of the scored items whose passages hold no sentence."""
        split = get_splitter(self.config.sentence_splitter)
        splits: list[Split | None] = []
        no_passage_text = []
        for i, (answer, item_passages) in enumerate(items):
            if answer is None:
                splits.append(None)
                continue
            p_sents, a_sents = self._split_item(answer, item_passages, split)
            if not p_sents:
                logger.warning("item %d has no passage text: scored E = C = OC = 0 (the reference crashes here)", i)
                no_passage_text.append(i)
            splits.append((p_sents, a_sents))
        return splits, no_passage_text

    def _obligation_sentences(self, passage_sentences: list[str], answer_sentences: list[str]) -> list[str]:
        """The sentences of one item the obligation classifier judges: the passage's, the answer's too in
        reference mode (unique, in order)."""
        both = self.config.mode == "reference"
        return list(dict.fromkeys(passage_sentences + answer_sentences if both else passage_sentences))

    def _obligations(self, scored: list[Split]) -> dict[str, bool]:
        """Stage 2: whether each sentence to judge is an obligation (unique sentences, cached across calls)."""
        to_classify = list(dict.fromkeys(s for ps, as_ in scored for s in self._obligation_sentences(ps, as_)))
        if not to_classify:
            return {}
        ob = self._classifier(self.config.obligation_model, "obligation")
        ob_idx = obligation_index(ob.config)
        probs = ob.probabilities([(s, None) for s in to_classify], desc="obligations")
        return {k[0]: int(np.argmax(v)) == ob_idx for k, v in probs.items()}

    def _nli(self, scored: list[Split]) -> tuple[dict[Input, np.ndarray], tuple[int, int] | None]:
        """Stage 3: NLI probabilities of every (premise = passage sentence, hypothesis = answer sentence) pair, and
        the (entailment, contradiction) label indices (``None`` when there is no pair)."""
        inputs = [(p, a) for ps, as_ in scored for p in ps for a in as_]
        if not inputs:
            return {}, None
        nli = self._classifier(self.config.nli_model, "nli")
        labels = label_index(nli.config, ENTAILMENT), label_index(nli.config, CONTRADICTION)
        return nli.probabilities(inputs, desc="NLI pairs"), labels

    def _coverage_inputs(self, passage_sentences: list[str], answer_sentences: list[str],
                         is_obligation: dict[str, bool]) -> Coverage:
        """Stage 4a: one item's passage obligations, its candidate answer sentences and the coverage inputs (one row
        per obligation). Reference: answer obligation sentences only, joined to the obligation by " [SEP] " by the
        classifier; paper: every answer sentence, as (answer sentence, obligation) pairs."""
        obligations = [p for p in passage_sentences if is_obligation[p]]
        if self.config.mode == "reference":
            candidates = [a for a in answer_sentences if is_obligation[a]]
        else:
            candidates = answer_sentences
        return obligations, candidates, [[(a, o) for a in candidates] for o in obligations]

    def _coverage_rounds(self, cov_per_item, reference: bool) -> tuple[list[list[bool]], list[list[Input]]]:
        """Covered flag of each passage obligation of each item, and the coverage inputs each item needed.

        Like the reference's early ``break``, candidates are tried in rounds (round j = the j-th candidate sentence
        of every still-uncovered obligation, all items batched together), so covered obligations cost no more
        inputs (the coverage short-circuit). The result equals ``any`` over all candidates.
        """
        covered = [[False] * len(obligations) for obligations, _, _ in cov_per_item]
        tried: list[list[Input]] = [[] for _ in cov_per_item]
        pending = [(i, k) for i, (obligations, candidates, _) in enumerate(cov_per_item) if candidates
                   for k in range(len(obligations))]
        if not pending:
            return covered, tried
        cov = self._classifier(self.config.coverage_model, "coverage")
        cov_idx = label_index(cov.config, ENTAILMENT)
        j = 0
        while pending:
            inputs = [cov_per_item[i][2][k][j] for i, k in pending]
            probs = cov.probabilities(inputs, desc=f"coverage round {j + 1}")
            batch = np.stack([probs[x] for x in inputs])[:, None, :]
            hits = core.coverage_hits(batch, cov_idx, self.config.threshold, require_top_label=reference)[:, 0]
            still = []
            for (i, k), x, hit in zip(pending, inputs, hits):
                tried[i].append(x)
                if hit:
                    covered[i][k] = True
                elif j + 1 < len(cov_per_item[i][1]):
                    still.append((i, k))
            pending, j = still, j + 1
        return covered, tried

    def _per_item(self, splits: list[Split | None], coverage: list[Coverage], covered: list[list[bool]],
                  nli_probs: dict[Input, np.ndarray], labels: tuple[int, int] | None) -> dict[str, list]:
        """Stage 5: E, C, OC and RePASs of each item in input order (``None`` for a skipped one)."""
        per_item: dict[str, list] = {k: [] for k in SCORE_KEYS}
        item_no = 0
        for s in splits:
            if s is None:
                result = dict.fromkeys(SCORE_KEYS)
            else:
                result = _score_item(s, coverage[item_no], covered[item_no], nli_probs, labels)
                item_no += 1
            for k in SCORE_KEYS:
                per_item[k].append(result[k])
        return per_item

    def _truncations(self, splits: list[Split | None], tried: list[list[Input]]) -> tuple[dict[str, int], list[int]]:
        """Stage 6: how many inputs of the scored items were cut to fit a model (by kind), and the items with a cut
        coverage input."""
        truncations = dict.fromkeys(TRUNCATION_KEYS, 0)
        truncated_items = []
        nli, ob, cov = (self._loaded(role) for role in ("nli", "obligation", "coverage"))
        item_no = 0
        for i, s in enumerate(splits):
            if s is None:
                continue
            (ps, as_), item_tried = s, tried[item_no]
            item_no += 1
            if nli is not None:
                truncations["nli"] += sum(_truncation(nli, (p, a)) != NOT_TRUNCATED for p in ps for a in as_)
            if ob is not None:
                truncations["obligation"] += sum(_truncation(ob, (x, None)) != NOT_TRUNCATED
                                                 for x in self._obligation_sentences(ps, as_))
            codes = [_truncation(cov, key) for key in item_tried] if cov is not None else []
            truncations["coverage"] += codes.count(CUT_FIRST)
            truncations["coverage_obligation"] += codes.count(CUT_SECOND)
            if any(code != NOT_TRUNCATED for code in codes):
                truncated_items.append(i)
        if truncations["coverage"] or truncations["coverage_obligation"]:
            logger.warning("coverage model %s cannot take %d inputs in full: the answer sentence was cut "
                           "(the obligation too in %d); items %s", self.config.coverage_model,
                           truncations["coverage"], truncations["coverage_obligation"], truncated_items)
        return truncations, truncated_items

    def _result(self, per_item: dict[str, list], skipped: list[int], no_passage_text: list[int],
                truncations: dict[str, int], truncated_items: list[int]) -> RePASsResult:
        """Stage 7 (shared by :meth:`score` and :meth:`score_dataset`): means, counts and the signature."""
        return RePASsResult(**summarise(per_item, skipped), no_passage_text=no_passage_text,
                            truncations=truncations, truncated_items=truncated_items, signature=self.signature)

    def score_dataset(self, dataset: Any, answer_column: str = "Answer",
                      passages_column: str = "RetrievedPassages") -> RePASsResult:
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
                (idx, {k: result["per_item"][k][j] for k in SCORE_KEYS},
                 j in result["no_passage_text"], j in result["truncated_items"]) for j, idx in enumerate(shard)
            ] if result else []
            counts = [result["truncations"]] if result else []
        if state.num_processes > 1:
            records = gather_object(records)
            counts = gather_object(counts)
        records = sorted(records, key=lambda r: r[0])
        per_item = {k: [r[1][k] for r in records] for k in SCORE_KEYS}
        skipped = [r[0] for r in records if r[1]["repass"] is None]
        return self._result(per_item, skipped, [r[0] for r in records if r[2]],
                            {k: sum(c[k] for c in counts) for k in TRUNCATION_KEYS}, [r[0] for r in records if r[3]])


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
