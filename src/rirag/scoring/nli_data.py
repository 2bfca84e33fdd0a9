"""Load the public NLI pair files under ``../shared/data/nli`` into one normalised table.

Every row becomes ``{"premise", "hypothesis", "label", "source"}`` with ``label`` one of ``entailment``,
``neutral``, ``contradiction`` (RTE keeps its 2-way ``entailment`` / ``not_entailment``). Rows without a gold
label (SNLI ``-``) and empty texts are dropped. Per-file layouts are described in ``data/nli/SOURCES.md``.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import random
from collections.abc import Iterator

logger = logging.getLogger(__name__)

NOT_ENTAILMENT = "not_entailment"
_LABELS = {
    "entailment": "entailment", "e": "entailment", "support": "entailment",
    "neutral": "neutral", "n": "neutral", "notmentioned": "neutral", "unrelated": "neutral",
    "contradiction": "contradiction", "c": "contradiction", "refute": "contradiction",
    "not_entailment": NOT_ENTAILMENT,
}
#: Sources whose labels are only 2-way: evaluation only (entailment vs. not).
TWO_WAY_SOURCES = ("rte",)


def normalise_label(raw, source: str = "?") -> str | None:
    """Map a raw label to the canonical names; ``-``/empty gives ``None`` (drop the row)."""
    key = str(raw).strip().lower()
    if key in ("-", "", "none"):
        return None
    if key not in _LABELS:
        raise ValueError(f"source {source}: unknown NLI label {raw!r}")
    return _LABELS[key]


def _row(premise, hypothesis, label, source):
    label = normalise_label(label, source)
    if label is None or not premise or not hypothesis or not str(premise).strip() or not str(hypothesis).strip():
        return None
    return {"premise": str(premise).strip(), "hypothesis": str(hypothesis).strip(), "label": label, "source": source}


def _csv(path, delimiter=",", encoding="utf-8"):
    with open(path, encoding=encoding, newline="") as f:
        yield from csv.DictReader(f, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE)


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _contract_nli(path) -> Iterator[tuple]:
    """Premise = the annotated evidence spans; NotMentioned takes one unannotated span of the same NDA."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    hypotheses = {k: v["hypothesis"] for k, v in data["labels"].items()}
    for doc in data["documents"]:
        text, spans = doc["text"], doc["spans"]
        annotations = doc["annotation_sets"][0]["annotations"]
        used = {i for a in annotations.values() for i in a.get("spans", [])}
        free = [i for i in range(len(spans)) if i not in used] or list(range(len(spans)))
        for k, (key, ann) in enumerate(sorted(annotations.items())):
            idx = ann.get("spans") or [free[k % len(free)]]
            premise = " ".join(text[spans[i][0]: spans[i][1]] for i in idx)
            yield premise, hypotheses[key], ann["choice"]


def iter_source(root: str, source: str) -> Iterator[dict]:
    """Yield normalised rows of one source (a folder name under ``root``)."""
    d = os.path.join(root, source)
    raw: Iterator[tuple]
    if source in ("snli", "mnli"):
        raw = ((r["sentence1"], r["sentence2"], r["label"]) for f in sorted(os.listdir(d)) for r in _csv(os.path.join(d, f)))
    elif source == "sick":
        raw = ((r["sentence_A"], r["sentence_B"], r["entailment_judgment"]) for r in _csv(os.path.join(d, "SICK.txt"), "\t"))
    elif source == "rte":
        raw = ((r["sentence1"], r["sentence2"], r["label"]) for f in ("train.tsv", "dev.tsv") for r in _csv(os.path.join(d, f), "\t"))
    elif source == "xnli-en":
        names = {"0": "entailment", "1": "neutral", "2": "contradiction"}
        raw = ((r["premise"], r["hypothesis"], names[r["label"]]) for f in sorted(os.listdir(d)) for r in _csv(os.path.join(d, f), "\t"))
    elif source == "anli":
        raw = ((r["context"], r["hypothesis"], r["label"]) for rnd in ("R1", "R2", "R3") for f in ("dev.jsonl", "test.jsonl")
               for r in _jsonl(os.path.join(d, rnd, f)))
    elif source in ("control", "lingnli"):
        files = [os.path.join(dp, f) for dp, _, fs in sorted(os.walk(d)) for f in sorted(fs) if f.endswith(".jsonl")]
        raw = ((r["premise"], r["hypothesis"], r["label"]) for f in files for r in _jsonl(f))
    elif source == "breaking-nli":
        raw = ((r["sentence1"], r["sentence2"], r["gold_label"]) for r in _jsonl(os.path.join(d, "dataset.jsonl")))
    elif source == "nli4wills":
        names = {"0": "refute", "1": "support", "2": "unrelated"}
        raw = ((r["statement"], r["conditions"], names[str(r["classification"]).strip()])
               for state in sorted(os.listdir(d)) for f in sorted(os.listdir(os.path.join(d, state)))
               for r in _csv(os.path.join(d, state, f), encoding="utf-8-sig"))
    elif source == "contract-nli":
        raw = (x for f in ("dev.json", "test.json") for x in _contract_nli(os.path.join(d, f)))
    else:
        raise ValueError(f"unknown NLI source {source!r} under {root}")
    for premise, hypothesis, label in raw:
        row = _row(premise, hypothesis, label, source)
        if row is not None:
            yield row


SOURCES = ("snli", "mnli", "sick", "anli", "xnli-en", "lingnli", "control", "breaking-nli", "nli4wills",
           "contract-nli", "rte")


def build_splits(root: str, sources=SOURCES, test_per_source: int = 300, max_train_per_source: int | None = None,
                 seed: int = 42) -> dict[str, list[dict]]:
    """Shuffle each source with ``seed``, hold out ``test_per_source`` rows (at most 20%) as its test part.

    2-way sources (RTE) contribute only to ``test``. Deduplicated on (premise, hypothesis) within a source, so a
    pair never sits on both sides.
    """
    rng = random.Random(seed)
    train, test = [], []
    for source in sources:
        rows = list({(r["premise"], r["hypothesis"]): r for r in iter_source(root, source)}.values())
        rng.shuffle(rows)
        n_test = min(test_per_source, max(1, len(rows) // 5))
        test.extend(rows[:n_test])
        if source not in TWO_WAY_SOURCES:
            rest = rows[n_test:]
            train.extend(rest[:max_train_per_source] if max_train_per_source else rest)
        logger.info("%s: %d rows, %d test", source, len(rows), n_test)
    rng.shuffle(train)
    return {"train": train, "test": test}
