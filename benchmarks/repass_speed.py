"""RePASs speed and exactness: our batched scorer vs. a faithful re-implementation of the reference loop.

Both run the same models on the same 200 answers built (seeded) from real ObliQA passages: answers that copy
obligation sentences, sentences from unrelated passages, negated sentences, and multi-sentence mixes of these.
Reports the per-item maximum absolute difference over E, C, OC and RePASs, and the speed ratio; writes
``benchmarks/results/repass_speed.json``. Offline the official models are unavailable, so the local stand-ins are
used and the scores are "RePASs (local judge)".

Usage:

    python benchmarks/repass_speed.py                                  # artifacts/nli_judge, artifacts/obligation_classifier
    python benchmarks/repass_speed.py --n_answers 40 --nli_model cross-encoder/nli-deberta-v3-xsmall \
        --coverage_model microsoft/deberta-large-mnli --obligation_model artifacts/obligation_classifier
"""

from __future__ import annotations

import glob
import json
import logging
import os
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field

from rirag.constants import SEED
from rirag.scoring.constants import (
    LOCAL_JUDGE_LABEL,
    LOCAL_NLI_JUDGE,
    LOCAL_OBLIGATION_CLASSIFIER,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
)

logger = logging.getLogger(__name__)


@dataclass
class SpeedArguments:
    corpus_dir: str = field(default="../shared/data/obliqa/documents", metadata={"help": "ObliQA document JSONs."})
    n_answers: int = field(default=200, metadata={"help": "Answers to score (4 per passage set)."})
    nli_model: str = field(default=LOCAL_NLI_JUDGE, metadata={"help": "NLI model (E, C)."})
    coverage_model: str = field(default=LOCAL_NLI_JUDGE, metadata={"help": "Coverage NLI model."})
    obligation_model: str = field(default=LOCAL_OBLIGATION_CLASSIFIER, metadata={"help": "Obligation classifier."})
    batch_size: int = field(default=64, metadata={"help": "Batch size of our scorer."})
    device: str = field(default="cpu", metadata={"help": "Device for both implementations."})
    seed: int = field(default=SEED, metadata={"help": "Seed of the answer construction."})
    output: str = field(default="benchmarks/results/repass_speed.json", metadata={"help": "Result JSON."})


NEGATIONS = ((r"\bmust not\b", "must"), (r"\bmust\b", "must not"), (r"\bshall\b", "shall not"),
             (r"\bis\b", "is not"), (r"\bare\b", "are not"), (r"\bmay\b", "may not"))


def negate(sentence: str) -> str:
    for pattern, repl in NEGATIONS:
        if re.search(pattern, sentence):
            return re.sub(pattern, repl, sentence, count=1)
    return "It is not the case that " + sentence[0].lower() + sentence[1:]


def build_answers(corpus_dir: str, n_answers: int, seed: int):
    """(answers, passages) lists: n_answers // 4 passage sets x {copied, unrelated, negated, mix}."""
    from rirag.scoring.sentences import punkt_split

    passages = []
    for path in sorted(glob.glob(os.path.join(corpus_dir, "*.json"))):
        with open(path, encoding="utf-8") as f:
            for p in json.load(f):
                text = (p.get("Passage") or "").strip()
                if 150 <= len(text) <= 900 and len(punkt_split(text)) >= 2:
                    passages.append((p.get("DocumentID"), text))
    if not passages:
        raise FileNotFoundError(f"no usable ObliQA passages under {corpus_dir}")
    rng = random.Random(seed)
    answers, contexts = [], []
    while len(answers) < n_answers:
        k = rng.randint(1, 3)
        start = rng.randrange(len(passages) - k)
        context = [t for _, t in passages[start : start + k]]
        sentences = [s for t in context for s in punkt_split(t)]
        obligations = [s for s in sentences if re.search(r"\b(must|shall|required)\b", s)] or sentences
        other = [s for _, t in rng.sample(passages, 3) for s in punkt_split(t)]
        copied = rng.sample(obligations, min(len(obligations), rng.randint(1, 3)))
        unrelated = rng.sample(other, min(len(other), rng.randint(1, 3)))
        negated = [negate(s) for s in rng.sample(sentences, min(len(sentences), rng.randint(1, 2)))]
        mix = copied[:1] + unrelated[:1] + negated[:1] + rng.sample(sentences, 1)
        rng.shuffle(mix)
        for answer in (copied, unrelated, negated, mix):
            if len(answers) < n_answers:
                answers.append(" ".join(answer))
                contexts.append(list(context))
    return answers, contexts


def main(args: SpeedArguments) -> dict:
    import torch

    from rirag.scoring.reference_impl import ReferenceRePASs
    from rirag.scoring.repass import SCORE_KEYS, RePASsConfig, RePASsScorer
    from rirag.scoring.sentences import punkt_split

    answers, contexts = build_answers(args.corpus_dir, args.n_answers, args.seed)
    models = dict(nli_model=args.nli_model, coverage_model=args.coverage_model, obligation_model=args.obligation_model)

    # Reference loop (models loaded before timing)
    reference = ReferenceRePASs(**models, device=args.device)
    punkt_split.cache_clear()
    start = time.perf_counter()
    ref_scores = [reference.score_item(a, p) for a, p in zip(answers, contexts)]
    ref_seconds = time.perf_counter() - start

    # Ours (models loaded before timing, sentence cache cleared)
    scorer = RePASsScorer(RePASsConfig(**models, batch_size=args.batch_size, device=args.device, mode="reference"))
    scorer._classifier(args.nli_model)
    scorer._classifier(args.obligation_model)
    scorer._classifier(args.coverage_model, role="coverage")
    punkt_split.cache_clear()
    start = time.perf_counter()
    ours = scorer.score(answers, contexts)
    our_seconds = time.perf_counter() - start

    diffs = [abs(ours["per_item"][k][i] - ref[k]) for i, ref in enumerate(ref_scores) for k in SCORE_KEYS]
    official = args.nli_model == OFFICIAL_NLI_MODEL and args.coverage_model == OFFICIAL_COVERAGE_MODEL
    result = {
        "n_answers": len(answers),
        "speedup": round(ref_seconds / our_seconds, 2),
        "max_abs_diff": max(diffs),
        "reference_seconds": round(ref_seconds, 2),
        "ours_seconds": round(our_seconds, 2),
        "metric_label": "RePASs" if official else LOCAL_JUDGE_LABEL,
        "mean_scores_ours": {k: ours[k] for k in SCORE_KEYS},
        "models": models,
        "batch_size": args.batch_size,
        "device": args.device,
        "torch_threads": torch.get_num_threads(),
        "cpu_cores": os.cpu_count(),
        "command": "python benchmarks/repass_speed.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "config": asdict(args),
    }
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(f"{result['metric_label']}: {len(answers)} answers | reference loop {ref_seconds:.1f}s | "
          f"ours {our_seconds:.1f}s | speedup {result['speedup']}x | max |diff| {result['max_abs_diff']:.2e}")
    for k in SCORE_KEYS:
        print(f"  mean {k:<20} {ours[k]:.5f}")
    return result


if __name__ == "__main__":
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.WARNING)
    (speed_args,) = HfArgumentParser(SpeedArguments).parse_args_into_dataclasses()
    main(speed_args)
