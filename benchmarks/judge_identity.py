"""How the RePASs NLI judge scores a sentence against itself: the ceiling of answers that copy passage sentences.

RePASs takes, for each answer sentence, the largest entailment and the largest contradiction over the passage
sentences. An answer sentence copied from a passage meets itself there, so its identity pair (premise = hypothesis)
bounds what copying can earn: a judge that gives a sentence and itself E < 1 and C > 0 caps E and floors C for any
copying answer. This judges every unique sentence of an answers file (citation markers removed, as the generation
benchmark scores them) against itself with the RePASs NLI classifier (same loading, truncation and batching as
scoring) and reports the mean entailment and contradiction per sentence-length bucket.

Usage:
    python benchmarks/judge_identity.py [--answers benchmarks/answers/extractive.json.gz] \
        [--nli-model artifacts/nli_judge]

Writes benchmarks/results/judge_identity.json.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from rirag.io import atomic_write_json, provenance

RESULTS = Path(__file__).parent / "results" / "judge_identity.json"
#: Upper bounds (in judge tokens, one copy of the sentence) of the length buckets.
BUCKETS = (40, 64, 10**6)


@dataclass
class Config:
    answers: str = field(default="benchmarks/answers/extractive.json.gz",
                         metadata={"help": "Answers JSON (.json or .json.gz) in the shared-task format."})
    nli_model: str = field(default="artifacts/nli_judge", metadata={"help": "RePASs NLI model (path or Hub id)."})
    threads: int = field(default=2, metadata={"help": "torch threads."})
    out: str = field(default=str(RESULTS), metadata={"help": "Results JSON."})


def main(config: Config) -> dict:
    import numpy as np
    import torch

    from rirag.data.answers import read_answers
    from rirag.scoring.answers import repass_text
    from rirag.scoring.constants import CONTRADICTION, ENTAILMENT
    from rirag.scoring.models import label_index
    from rirag.scoring.repass import RePASsConfig, RePASsScorer
    from rirag.text.sentences import punkt_split

    torch.set_num_threads(config.threads)
    records = read_answers(config.answers)
    sentences = list(dict.fromkeys(s for r in records if r.get("Answer")
                                   for s in punkt_split(repass_text(r["Answer"]))))
    if not sentences:
        raise ValueError(f"{config.answers}: no answer sentences to judge")
    scorer = RePASsScorer(RePASsConfig(nli_model=config.nli_model, coverage_model=config.nli_model))
    nli = scorer._classifier(config.nli_model, "nli")
    probs = nli.probabilities([(s, s) for s in sentences], desc="identity pairs")
    e_idx, c_idx = label_index(nli.config, ENTAILMENT), label_index(nli.config, CONTRADICTION)
    e = np.array([probs[(s, s)][e_idx] for s in sentences])
    c = np.array([probs[(s, s)][c_idx] for s in sentences])
    lengths = np.array([len(nli.tokenizer(s)["input_ids"]) for s in sentences])
    buckets, low = {}, 0
    for high in BUCKETS:
        k = (lengths > low) & (lengths <= high)
        name = f"{low + 1}-{high} tokens" if high < 10**6 else f"over {low} tokens"
        if k.any():
            buckets[name] = {"n": int(k.sum()), "entailment": round(float(e[k].mean()), 4),
                             "contradiction": round(float(c[k].mean()), 4)}
        low = high
    result = {
        "answers": config.answers,
        "nli_model": config.nli_model,
        "max_length": nli.max_length,
        "sentences": len(sentences),
        "identity_entailment": round(float(e.mean()), 4),
        "identity_contradiction": round(float(c.mean()), 4),
        "by_length": buckets,
        "repass_ceiling_with_full_coverage": round(float((e.mean() - c.mean() + 2) / 3), 4),
        "note": "each sentence judged against itself; repass_ceiling_with_full_coverage = (E - C + 1 + 1) / 3 with "
                "these identity means and obligation coverage 1",
        **provenance(),
    }
    atomic_write_json(config.out, result)
    return result


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (cfg,) = HfArgumentParser(Config).parse_args_into_dataclasses()
    print(json.dumps(main(cfg), indent=2))
