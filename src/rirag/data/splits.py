"""Split schemes over ObliQA: the published splits and the leakage-free document-level re-split.

Split names used everywhere (CLI, benchmarks, builders):

* ``original-train`` (when the source has it), ``original-dev``, ``original-test``: the published splits;
* ``train``, ``validation``, ``test``: the leakage-free re-split of the second seed paper. The 40 documents are
  shuffled under a fixed seed and assigned 80/15/5 %; a question lands in the split that holds *all* of its
  gold passages' documents and is discarded (and counted) otherwise. The corpus is the whole corpus for every
  split, as in the paper.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from dataclasses import dataclass, field

from rirag.constants import AUDIT_COSINE_MIN, AUDIT_FUZZY_MIN_RATIO, SEED, SPLIT_FRACTIONS
from rirag.data.obliqa import ObliQA, Question
from rirag.errors import DataError

logger = logging.getLogger(__name__)

ORIGINAL_SPLITS = {"original-train": "train", "original-dev": "dev", "original-test": "test"}
LEAKAGE_FREE_SPLITS = ("train", "validation", "test")
SPLIT_NAMES = tuple(ORIGINAL_SPLITS) + LEAKAGE_FREE_SPLITS
#: Splits one may evaluate on (the CLI's choices).
EVAL_SPLITS = ("original-dev", "original-test", "validation", "test")


@dataclass
class LeakageFreeSplit:
    seed: int
    documents: dict[str, list[int]]  # split -> DocumentIDs
    questions: dict[str, list[Question]]
    discarded_multi_document: int = 0
    discarded_no_gold: int = 0
    pooled_questions: int = 0
    discarded_ids: list[str] = field(default_factory=list)

    def fingerprint(self) -> str:
        """A content hash of the assignment: the same seed and data give the same value."""
        payload = {
            "seed": self.seed,
            "documents": self.documents,
            "questions": {s: [q.id for q in qs] for s, qs in self.questions.items()},
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def statistics(self, corpus_passages: int) -> list[dict]:
        return [
            {
                "split": s,
                "documents": len(self.documents[s]),
                "questions": len(self.questions[s]),
                "corpus_passages": corpus_passages,
            }
            for s in LEAKAGE_FREE_SPLITS
        ]


def leakage_free_split(obliqa: ObliQA, seed: int = SEED, fractions=SPLIT_FRACTIONS) -> LeakageFreeSplit:
    """Re-split all published questions at document level (deterministic for a given seed)."""
    if abs(sum(fractions) - 1.0) > 1e-9 or len(fractions) != 3:
        raise ValueError(f"split fractions must be three numbers summing to 1, got {fractions}")
    docs = sorted({p.document_id for p in obliqa.passages.values()})
    random.Random(seed).shuffle(docs)
    n_train = round(fractions[0] * len(docs))
    n_val = round(fractions[1] * len(docs))
    assignment = {
        "train": sorted(docs[:n_train]),
        "validation": sorted(docs[n_train : n_train + n_val]),
        "test": sorted(docs[n_train + n_val :]),
    }
    doc_split = {d: s for s, ds in assignment.items() for d in ds}

    pooled: dict[str, Question] = {}
    for name in ("train", "dev", "test"):
        for q in obliqa.splits.get(name, []):
            pooled.setdefault(q.id, q)
    result = LeakageFreeSplit(seed, assignment, {s: [] for s in LEAKAGE_FREE_SPLITS}, pooled_questions=len(pooled))
    for q in pooled.values():
        if not q.gold:
            result.discarded_no_gold += 1
            result.discarded_ids.append(q.id)
            continue
        splits = {doc_split[d] for d in q.gold_documents}
        if len(splits) == 1:
            result.questions[splits.pop()].append(q)
        else:
            result.discarded_multi_document += 1
            result.discarded_ids.append(q.id)
    logger.info(
        "leakage-free split (seed %d): %s; discarded %d multi-document and %d gold-less questions",
        seed, {s: len(qs) for s, qs in result.questions.items()},
        result.discarded_multi_document, result.discarded_no_gold,
    )
    return result


def check_split_name(name: str) -> str:
    if name not in SPLIT_NAMES:
        raise DataError(f"unknown split {name!r}; choose one of: {', '.join(SPLIT_NAMES)}")
    return name


def split_questions(obliqa: ObliQA, name: str, seed: int = SEED) -> list[Question]:
    """The questions of a named split (see the module docstring for the names)."""
    check_split_name(name)
    if name in ORIGINAL_SPLITS:
        source = ORIGINAL_SPLITS[name]
        if source not in obliqa.splits:
            raise DataError(f"split {name!r} needs ObliQA_{source}.json, which {obliqa.root} does not have")
        return obliqa.splits[source]
    return leakage_free_split(obliqa, seed).questions[name]


#: Size of the fixed, seeded question sample of the answer benchmarks (benchmarks/generation.py); the focused
#: answerer's selection options are chosen on validation questions outside it.
ANSWER_SAMPLE_SIZE = 150


def seeded_sample(questions: list[Question], run: dict, size: int = ANSWER_SAMPLE_SIZE, seed: int = SEED) -> list:
    """A fixed, seeded sample of ``size`` questions that have a ranking in ``run`` (order is part of the sample)."""
    eligible = sorted((q for q in questions if q.id in run), key=lambda q: q.id)
    if len(eligible) < size:
        raise ValueError(f"only {len(eligible)} questions have a ranking in the run; the sample needs {size}")
    return random.Random(seed).sample(eligible, size)


def qrels_of(questions: list[Question]) -> dict[str, dict[str, int]]:
    return {q.id: {cid: 1 for cid in q.gold} for q in questions if q.gold}


# --------------------------------------------------------------------------------------------------
# Overlap audit
# --------------------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def overlap_audit(
    train: list[Question],
    evaluation: list[Question],
    embedder=None,
    fuzzy_min: float = AUDIT_FUZZY_MIN_RATIO,
    cosine_min: float = AUDIT_COSINE_MIN,
    max_listed: int = 200,
) -> dict:
    """Count train/eval question pairs that match exactly, fuzzily (ratio >= 85) or semantically (cos >= 0.85).

    ``embedder`` is a callable ``list[str] -> np.ndarray`` of L2-normalised rows (or None: the semantic check
    is skipped and the report says so).
    """
    import numpy as np
    from rapidfuzz import fuzz, process

    train_text = [_normalise(q.text) for q in train]
    eval_text = [_normalise(q.text) for q in evaluation]
    report: dict = {"train_questions": len(train), "eval_questions": len(evaluation)}

    train_set = {}
    for i, t in enumerate(train_text):
        train_set.setdefault(t, i)
    exact = [(train[train_set[t]].id, evaluation[j].id) for j, t in enumerate(eval_text) if t in train_set]
    report["exact"] = {"pairs": len(exact), "examples": exact[:max_listed]}

    fuzzy_pairs = []
    if train_text and eval_text:
        scores = process.cdist(eval_text, train_text, scorer=fuzz.ratio, score_cutoff=fuzzy_min, dtype=np.uint8,
                               workers=-1)
        for j, i in zip(*np.nonzero(scores)):
            fuzzy_pairs.append((train[i].id, evaluation[j].id, int(scores[j, i])))
    report["fuzzy"] = {"threshold": fuzzy_min, "pairs": len(fuzzy_pairs), "examples": fuzzy_pairs[:max_listed]}

    if embedder is None:
        report["semantic"] = {"threshold": cosine_min, "skipped": "no embedder available"}
        logger.warning("overlap audit: embedding check skipped (no embedder available)")
    else:
        a = np.asarray(embedder([q.text for q in evaluation]), dtype=np.float32)
        b = np.asarray(embedder([q.text for q in train]), dtype=np.float32)
        pairs = []
        for start in range(0, len(a), 1024):
            sims = a[start : start + 1024] @ b.T
            for j, i in zip(*np.nonzero(sims >= cosine_min)):
                pairs.append((train[i].id, evaluation[start + j].id, round(float(sims[j, i]), 4)))
        report["semantic"] = {"threshold": cosine_min, "pairs": len(pairs), "examples": pairs[:max_listed]}
    return report
