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
from collections.abc import Callable, Iterator

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
        yield from csv.DictReader(f, delimiter=delimiter,
                                  quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE)


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}: line {number} is not valid JSON ({err.msg})") from err


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


def _pairs(d: str, files, premise: str, hypothesis: str, label: str, delimiter: str = ",") -> Iterator[tuple]:
    """(premise, hypothesis, label) of delimited files under ``d``, by their field names."""
    return ((r[premise], r[hypothesis], r[label]) for f in files for r in _csv(os.path.join(d, f), delimiter))


def _xnli(d: str) -> Iterator[tuple]:
    names = {"0": "entailment", "1": "neutral", "2": "contradiction"}
    return ((r["premise"], r["hypothesis"], names[r["label"]])
            for f in sorted(os.listdir(d)) for r in _csv(os.path.join(d, f), "\t"))


def _jsonl_tree(d: str) -> Iterator[tuple]:
    files = [os.path.join(dp, f) for dp, _, fs in sorted(os.walk(d)) for f in sorted(fs) if f.endswith(".jsonl")]
    return ((r["premise"], r["hypothesis"], r["label"]) for f in files for r in _jsonl(f))


def _nli4wills(d: str) -> Iterator[tuple]:
    names = {"0": "refute", "1": "support", "2": "unrelated"}
    # The label says whether the will's statement is valid under the law given the conditions: premise = the
    # conditions then the law (conditions first, so truncation keeps them), hypothesis = the statement.
    return ((f'{r["conditions"].strip()} {r["law"].strip()}', r["statement"], names[str(r["classification"]).strip()])
            for state in sorted(os.listdir(d)) for f in sorted(os.listdir(os.path.join(d, state)))
            for r in _csv(os.path.join(d, state, f), encoding="utf-8-sig"))


#: source -> its reader: the folder -> (premise, hypothesis, label) in the source's own label words.
READERS: dict[str, Callable[[str], Iterator[tuple]]] = {
    "snli": lambda d: _pairs(d, sorted(os.listdir(d)), "sentence1", "sentence2", "label"),
    "mnli": lambda d: _pairs(d, sorted(os.listdir(d)), "sentence1", "sentence2", "label"),
    "sick": lambda d: _pairs(d, ["SICK.txt"], "sentence_A", "sentence_B", "entailment_judgment", "\t"),
    "rte": lambda d: _pairs(d, ["train.tsv", "dev.tsv"], "sentence1", "sentence2", "label", "\t"),
    "xnli-en": _xnli,
    "anli": lambda d: ((r["context"], r["hypothesis"], r["label"]) for rnd in ("R1", "R2", "R3")
                       for f in ("dev.jsonl", "test.jsonl") for r in _jsonl(os.path.join(d, rnd, f))),
    "control": _jsonl_tree,
    "lingnli": _jsonl_tree,
    "breaking-nli": lambda d: ((r["sentence1"], r["sentence2"], r["gold_label"])
                               for r in _jsonl(os.path.join(d, "dataset.jsonl"))),
    "nli4wills": _nli4wills,
    "contract-nli": lambda d: (x for f in ("dev.json", "test.json") for x in _contract_nli(os.path.join(d, f))),
}


def iter_source(root: str, source: str) -> Iterator[dict]:
    """Yield normalised rows of one source (a folder name under ``root``; its reader in :data:`READERS`)."""
    d = os.path.join(root, source)
    if source in SOURCES and not os.path.isdir(d):
        raise FileNotFoundError(f"NLI source {source!r}: folder {d} not found (see data/nli/SOURCES.md)")
    if source not in READERS:
        raise ValueError(f"unknown NLI source {source!r} under {root}")
    try:
        for premise, hypothesis, label in READERS[source](d):
            row = _row(premise, hypothesis, label, source)
            if row is not None:
                yield row
    except KeyError as err:
        raise ValueError(f"NLI source {source!r} under {root}: a record lacks the field {err.args[0]!r}") from err


SOURCES = ("snli", "mnli", "sick", "anli", "xnli-en", "lingnli", "control", "breaking-nli", "nli4wills",
           "contract-nli", "rte")


def normalise_text(text: str) -> str:
    """The key two texts share when they are the same sentence up to case and whitespace."""
    return " ".join(str(text).lower().split())


def pair_key(row: dict) -> tuple[str, str]:
    return normalise_text(row["premise"]), normalise_text(row["hypothesis"])


def load_source(root: str, source: str) -> list[dict]:
    """One source's rows, deduplicated on the normalised (premise, hypothesis) pair.

    A pair that occurs with two different labels (NLI4Wills repeats statements with conflicting classifications) is
    dropped entirely: no label for it can be trusted.
    """
    by_key: dict[tuple[str, str], dict] = {}
    conflicting: set[tuple[str, str]] = set()
    for row in iter_source(root, source):
        key = pair_key(row)
        if key in by_key and by_key[key]["label"] != row["label"]:
            conflicting.add(key)
        by_key.setdefault(key, row)
    if conflicting:
        logger.info("%s: %d pairs with conflicting labels dropped", source, len(conflicting))
    return [r for k, r in by_key.items() if k not in conflicting]


def parse_caps(spec: str | dict | None) -> dict[str, int]:
    """``"lingnli=15000,anli=2000"`` (or a dict) -> ``{"lingnli": 15000, "anli": 2000}``."""
    if not spec:
        return {}
    if isinstance(spec, dict):
        return {str(k): int(v) for k, v in spec.items()}
    caps = {}
    for item in str(spec).split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise ValueError(f"bad per-source cap {item!r}: expected source=N, e.g. 'lingnli=15000'")
        caps[name.strip()] = int(value)
    return caps


def hold_out(rows: list[dict], n_test: int, seed: int, source: str) -> tuple[list[dict], list[dict]]:
    """Split one source's rows into (test, rest) by premise group: every hypothesis of a held-out premise is held out.

    Premise groups are sorted, then shuffled with a generator seeded by ``(seed, source)`` alone, so a source's test
    part does not move when other sources are added or removed. Groups are taken until ``n_test`` rows are reached.
    """
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(normalise_text(row["premise"]), []).append(row)
    order = sorted(groups)
    random.Random(f"{seed}:{source}").shuffle(order)
    test, rest = [], []
    for premise in order:
        (test if len(test) < n_test else rest).extend(groups[premise])
    return test, rest


def build_splits(root: str, sources=SOURCES, test_per_source: int = 500, max_train_per_source: int | None = None,
                 seed: int = 42, train_caps: str | dict | None = None,
                 test_fraction_max: float = 0.2) -> dict[str, list[dict]]:
    """Hold out a seeded test part per source (``test_per_source`` rows, at most ``test_fraction_max`` of it).

    * The test part is chosen by premise group (:func:`hold_out`), so no premise of a test pair is trained on.
    * Across sources, a training row is dropped when its premise or its (premise, hypothesis) pair occurs in any
      source's test part (LingNLI takes its premises from MNLI; XNLI-en from the same genres), normalised for case
      and whitespace.
    * 2-way sources (RTE) contribute only to ``test``.
    * ``train_caps`` (``"lingnli=15000"``) and ``max_train_per_source`` subsample a source's training rows (seeded).
    """
    caps = parse_caps(train_caps)
    unknown = set(caps) - set(sources)
    if unknown:
        raise ValueError(f"train_caps names sources that are not loaded: {sorted(unknown)}")
    tests, rests = {}, {}
    for source in sources:
        rows = load_source(root, source)
        if not rows:
            raise ValueError(f"NLI source {source!r} under {root} has no usable rows")
        n_test = min(test_per_source, max(1, int(len(rows) * test_fraction_max)))
        tests[source], rests[source] = hold_out(rows, n_test, seed, source)
    test_premises = {normalise_text(r["premise"]) for rows in tests.values() for r in rows}
    test_pairs = {pair_key(r) for rows in tests.values() for r in rows}
    train, test = [], []
    for source in sources:
        test.extend(tests[source])
        if source in TWO_WAY_SOURCES:
            continue
        kept = [r for r in rests[source]
                if normalise_text(r["premise"]) not in test_premises and pair_key(r) not in test_pairs]
        dropped = len(rests[source]) - len(kept)
        cap = caps.get(source, max_train_per_source)
        if cap is not None and len(kept) > cap:
            kept = random.Random(f"{seed}:{source}:train").sample(kept, cap)
        train.extend(kept)
        logger.info("%s: %d test, %d train (%d dropped: premise or pair in a test part)",
                    source, len(tests[source]), len(kept), dropped)
    random.Random(seed).shuffle(train)
    return {"train": train, "test": test}
