"""The sequence classifiers of RePASs (:mod:`rirag.scoring.repass`): cached softmax probabilities over input
keys, each input tokenized once and batched by exact token length (no padding), forward passes in worker processes
on CPU (:mod:`rirag.scoring.workers`); the process-wide probability cache."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from rirag.scoring import core
from rirag.scoring import workers as pool
from rirag.scoring.constants import (
    AUTO_BATCH_SIZE,
    COVERAGE_JOIN,
    CPU_TOKENS_PER_BATCH,
    CUDA_TOKENS_PER_BATCH,
    DEFAULT_PRECISION,
    MAX_BATCH_ROWS,
    MAX_PADDING_SHARE,
)
from rirag.scoring.models import load_classifier, max_length_of, position_limit, prepared_model
from rirag.text.sentences import clear_split_caches

logger = logging.getLogger(__name__)

#: A classifier input: (first text, second text or ``None``).
Input = tuple[str, str | None]

#: How a classifier turns an input key into tokens (see :class:`Classifier`).
SINGLE, PAIR, JOINED, PAIR_KEEP_SECOND = "single", "pair", "joined", "pair-keep-second"
#: Truncation codes stored with each cached probability vector.
NOT_TRUNCATED, CUT_FIRST, CUT_SECOND = 0, 1, 2


class ProbabilityCache:
    """Softmax probabilities by (classifier fingerprint, input), shared by every scorer in the process.

    The fingerprint holds the encoding (which differs between modes for the coverage model), the model name and
    object, the device and the length limit, so a different model, mode or limit never reuses an entry. Bounded:
    when ``max_entries`` is reached the cache is emptied (scores never depend on it, only speed).
    """

    def __init__(self, max_entries: int = 2_000_000):
        self.max_entries = max_entries
        self._data: dict[tuple, tuple[np.ndarray, int]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, fingerprint: tuple, key: Input):
        value = self._data.get((fingerprint, key))
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, fingerprint: tuple, key: Input, value: tuple[np.ndarray, int]) -> None:
        if len(self._data) >= self.max_entries:
            logger.info("probability cache full (%d entries): emptied", len(self._data))
            self._data.clear()
        self._data[(fingerprint, key)] = value

    def clear(self) -> None:
        self._data.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


#: The process-wide cache (``clear_caches()`` empties it with the sentence-split cache).
PROBABILITY_CACHE = ProbabilityCache()


def clear_caches() -> None:
    """Empty the probability cache and the sentence-split caches (benchmarks time cold runs with this)."""
    PROBABILITY_CACHE.clear()
    clear_split_caches()


def auto_batch_rows(length: int, device: str) -> int:
    """Rows per forward pass for inputs of ``length`` tokens (the rule documented in ``constants``)."""
    budget = CUDA_TOKENS_PER_BATCH if str(device).startswith("cuda") else CPU_TOKENS_PER_BATCH
    return max(1, min(MAX_BATCH_ROWS, budget // max(1, length)))


class Classifier:
    """One sequence classifier: cached probabilities over input keys, computed in exact-length buckets.

    Encodings of an input key ``(first, second)``:

    * ``single``: ``first`` alone (``second`` is ``None``), truncated at the tokenizer's ``model_max_length`` as the
      reference's ``truncation=True`` does (obligation classifier).
    * ``pair``: the pair ``(first, second)``, ``truncation=True`` (longest first) at ``model_max_length``, as the
      reference's NLI call (E and C).
    * ``joined``: the single text ``f"{first} [SEP] {second}"`` (reference-mode coverage: answer sentence, passage
      obligation), not truncated, as the reference's pipeline. Only where the model itself cannot take the length
      (an absolute position table) are tokens cut, from the end of the answer sentence, never the obligation.
    * ``pair-keep-second``: the pair ``(first, second)`` (paper-mode coverage), cut from the first text only when
      the model cannot take the length.

    Every input is tokenized once without padding; inputs of equal token length are batched together, so no
    forward pass computes padding (a length that occurs once is a single-input call, as in the reference).
    """

    def __init__(self, name: str, device: str, batch_size: int | str, show_progress: bool, encoding: str = PAIR,
                 cache: ProbabilityCache | None = None, workers: int = 1, precision: str = DEFAULT_PRECISION):
        self.name = name
        self.precision = precision
        self.tokenizer, _ = load_classifier(name, device)
        self.model = prepared_model(name, device, precision)
        self.device = device
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.encoding = encoding
        if encoding in (JOINED, PAIR_KEEP_SECOND):
            self.max_length = position_limit(self.tokenizer, self.model)
        else:
            self.max_length = max_length_of(self.tokenizer, self.model)
        self.cache = PROBABILITY_CACHE if cache is None else cache
        self.max_padding = MAX_PADDING_SHARE
        self.fingerprint = (encoding, name, str(device), self.max_length, precision, id(self.model))
        self.workers = int(workers)
        self._cuts: dict[Input, int] = {}  # inputs this classifier saw cut, by truncation code
        #: Forward passes and tokens (padding included) computed so far, wherever they ran (parent or workers).
        self.work = {"forward_passes": 0, "tokens": 0}

    @property
    def config(self):
        return self.model.config

    # -- tokenization -------------------------------------------------------------------------------------------
    def _encode(self, keys: list[Input]) -> list[tuple[dict[str, list[int]], int]]:
        if self.encoding == SINGLE:
            return self._encode_truncating([k[0] for k in keys], None)
        if self.encoding == PAIR:
            return self._encode_truncating([k[0] for k in keys], [k[1] for k in keys])
        if self.encoding == JOINED:
            return [self._encode_joined(a, o) for a, o in keys]
        return [self._encode_pair_keep_second(a, o) for a, o in keys]

    def _encode_truncating(self, firsts, seconds):
        """The reference's ``truncation=True`` at ``max_length``; flags the inputs that were cut."""
        full = self.tokenizer(firsts, seconds, truncation=False)
        out = []
        over = [i for i, ids in enumerate(full["input_ids"]) if len(ids) > self.max_length]
        cut = {}
        if over:
            sub = self.tokenizer([firsts[i] for i in over], None if seconds is None else [seconds[i] for i in over],
                                 truncation=True, max_length=self.max_length)
            cut = {i: {k: v[j] for k, v in sub.items()} for j, i in enumerate(over)}
        for i in range(len(firsts)):
            if i in cut:
                out.append((cut[i], CUT_FIRST))
            else:
                out.append(({k: v[i] for k, v in full.items()}, NOT_TRUNCATED))
        return out

    def _encode_joined(self, answer_sentence: str, obligation: str):
        text = f"{answer_sentence}{COVERAGE_JOIN}{obligation}"
        if self.max_length is None:
            return dict(self.tokenizer(text)), NOT_TRUNCATED
        enc = self.tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
        excess = len(enc["input_ids"]) - self.max_length
        if excess <= 0:
            return {k: v for k, v in enc.items() if k not in ("offset_mapping", "special_tokens_mask")}, NOT_TRUNCATED
        n_answer = len(answer_sentence)
        answer_tokens = [i for i, ((s, e), special) in enumerate(zip(enc["offset_mapping"], enc["special_tokens_mask"]))
                         if not special and e <= n_answer and e > s]
        drop = set(answer_tokens[len(answer_tokens) - min(excess, len(answer_tokens)):])
        code = CUT_FIRST
        if excess > len(answer_tokens):  # even without the answer sentence the obligation does not fit
            rest = [i for i, special in enumerate(enc["special_tokens_mask"]) if not special and i not in drop]
            drop |= set(rest[len(rest) - (excess - len(answer_tokens)):])
            code = CUT_SECOND
        keep = [i for i in range(len(enc["input_ids"])) if i not in drop]
        return {k: [v[i] for i in keep] for k, v in enc.items()
                if k not in ("offset_mapping", "special_tokens_mask")}, code

    def _encode_pair_keep_second(self, first: str, second: str):
        enc = self.tokenizer(first, second, truncation=False)
        if self.max_length is None or len(enc["input_ids"]) <= self.max_length:
            return dict(enc), NOT_TRUNCATED
        try:
            return dict(self.tokenizer(first, second, truncation="only_first", max_length=self.max_length)), CUT_FIRST
        except Exception:  # the second text alone is too long: cut both, longest first
            return dict(self.tokenizer(first, second, truncation=True, max_length=self.max_length)), CUT_SECOND

    # -- inference ----------------------------------------------------------------------------------------------
    def _rows(self, length: int) -> int:
        if self.batch_size == AUTO_BATCH_SIZE:
            return auto_batch_rows(length, self.device)
        return int(self.batch_size)

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices grouped into forward passes: length-sorted, at most ``self.max_padding`` padded tokens per real
        token (0: exact-length buckets) and at most ``_rows(length)`` rows."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        batches, current, real = [], [], 0
        for i in order:
            length = lengths[i]  # the longest so far: inputs come in ascending length
            rows = len(current) + 1
            fits = (current and rows <= self._rows(length)
                    and rows * length - (real + length) <= self.max_padding * (real + length))
            if current and not fits:
                batches.append(current)
                current, real = [], 0
            current.append(i)
            real += length
        if current:
            batches.append(current)
        return batches

    def _features(self, encoded, members) -> dict[str, np.ndarray]:
        """The model inputs of one batch as int64 arrays (no padding when the members share one length)."""
        if len({len(encoded[i][0]["input_ids"]) for i in members}) == 1:  # one length: no padding at all
            names = [k for k in encoded[members[0]][0] if k in ("input_ids", "token_type_ids", "attention_mask")]
            return {k: np.asarray([encoded[i][0][k] for i in members], dtype=np.int64) for k in names}
        padded = self.tokenizer.pad([encoded[i][0] for i in members], return_tensors="np")
        return {k: np.asarray(v, dtype=np.int64) for k, v in padded.items()}

    def probabilities(self, inputs: Sequence[Input], desc: str = "") -> dict[Input, np.ndarray]:
        """Softmax probabilities for each unique input; returns {input: probs}."""
        import torch
        from tqdm.auto import tqdm

        out: dict[Input, np.ndarray] = {}
        todo = []
        for key in dict.fromkeys(inputs):
            hit = self.cache.get(self.fingerprint, key)
            if hit is None:
                todo.append(key)
            else:
                out[key] = hit[0]
                if hit[1] != NOT_TRUNCATED:
                    self._cuts[key] = hit[1]
        if not todo:
            return out
        encoded = self._encode(todo)
        batches = self._batches([len(enc["input_ids"]) for enc, _ in encoded])
        bar = tqdm(total=len(todo), desc=desc or self.name, disable=not self.show_progress, leave=False)

        def record(members, logits):
            for i, probs in zip(members, core.softmax(logits)):
                out[todo[i]] = probs
                self.cache.put(self.fingerprint, todo[i], (probs, encoded[i][1]))
                if encoded[i][1] != NOT_TRUNCATED:
                    self._cuts[todo[i]] = encoded[i][1]
            bar.update(len(members))

        features = [self._features(encoded, members) for members in batches]
        costs = [int(f["input_ids"].size) for f in features]
        self.work["forward_passes"] += len(features)
        self.work["tokens"] += sum(costs)
        left = list(range(len(batches)))
        if pool.pool_worth_it(self.workers, sum(costs)):
            done: set[int] = set()
            try:
                for task, future in pool.submit(self.name, self.precision, self.workers, features, costs):
                    for b, logits in zip(task, future.result()):
                        record(batches[b], logits)
                        done.add(b)
            except (BrokenProcessPool, OSError) as err:  # a worker died: finish here, start a fresh pool next time
                logger.warning("RePASs worker pool failed (%s: %s); finishing %d batches in this process",
                               type(err).__name__, err, len(batches) - len(done))
                pool.drop_pool(self.workers)
            left = [b for b in left if b not in done]
        with torch.inference_mode():
            for b in left:
                tensors = {k: torch.from_numpy(v).to(self.device) for k, v in features[b].items()}
                record(batches[b], self.model(**tensors).logits.float().cpu().numpy())
        bar.close()
        return out

    def truncation(self, key: Input) -> int:
        """How ``key`` was cut (``NOT_TRUNCATED``, ``CUT_FIRST``, ``CUT_SECOND``), once it has been scored.

        Cut inputs are remembered by the classifier itself, so emptying the probability cache loses no count.
        """
        return self._cuts.get(key, NOT_TRUNCATED)
