"""How much of each gold rule an answer carries, and how much of the answer comes from gold rules (issue 64).

Citation metrics say which passages an answer names; these say what it *says* of them, by content words (lower-cased
word tokens, the English stopwords of ``bm25s`` out), per question with gold passages whose text is known:

* ``gold_rule_coverage_min``: the share of a gold rule's content words (types) that the answer holds, for the gold
  rule the answer covers least; the mean over questions. An answer that quotes one rule of two whole scores 0 on a
  question needing both; one that quotes both whole scores 1.
* ``gold_rule_coverage_mean``: the same share averaged over the question's gold rules; the mean over questions.
* ``gold_text_precision``: the share of the answer's content words (tokens) that occur in its question's gold rules;
  an answer padded with other rules, or with words of its own, scores lower. An empty answer is left out.
* each ``..._context_holds``: the same mean over the questions whose context (``RetrievedIDs``) held every gold
  passage: where quoting could reach 1, the figure the issue's targets read.

The two pull against each other: quoting the whole context raises coverage and lowers precision; quoting one short
sentence does the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from rirag.text.citations import CITATION_PATTERN

GOLD_TEXT_METRICS = ("gold_rule_coverage_min", "gold_rule_coverage_mean", "gold_text_precision",
                     "gold_rule_coverage_min_context_holds", "gold_rule_coverage_mean_context_holds",
                     "gold_text_precision_context_holds", "questions_context_holds")
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(STOPWORDS_EN)


def content_words(text: str | None) -> list[str]:
    """The text's content words in order: lower-cased word tokens, citation markers and stopwords out."""
    text = CITATION_PATTERN.sub(" ", text or "")
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def coverage(answer: str | None, rule: str) -> float | None:
    """The share of ``rule``'s content words (types) that ``answer`` holds; ``None`` for a rule without any."""
    wanted = set(content_words(rule))
    return len(wanted & set(content_words(answer))) / len(wanted) if wanted else None


def precision(answer: str | None, rules: Sequence[str]) -> float | None:
    """The share of ``answer``'s content words (tokens) that occur in ``rules``; ``None`` for an empty answer."""
    said = content_words(answer)
    if not said:
        return None
    known = {w for r in rules for w in content_words(r)}
    return sum(w in known for w in said) / len(said)


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def gold_text_metrics(answers: Sequence[str | None], retrieved_ids: Sequence[Sequence[str]],
                      golds: Sequence[Sequence[str]], passage_text: Mapping[str, str]) -> tuple[dict, dict]:
    """(the module's metrics, per-answer values) over parallel lists; a question without gold, or whose gold text
    is unknown to ``passage_text``, is left out of every mean."""
    per: dict[str, list] = {"gold_rule_coverage_min": [], "gold_rule_coverage_mean": [], "gold_text_precision": []}
    holds: list[bool] = []
    for answer, ids, gold in zip(answers, retrieved_ids, golds):
        texts = [passage_text[g] for g in dict.fromkeys(gold) if g in passage_text]
        shares = [s for s in (coverage(answer, t) for t in texts) if s is not None]
        per["gold_rule_coverage_min"].append(min(shares) if shares else None)
        per["gold_rule_coverage_mean"].append(float(np.mean(shares)) if shares else None)
        per["gold_text_precision"].append(precision(answer, texts) if texts else None)
        holds.append(bool(texts) and set(gold) <= set(ids))
    out = {key: _mean(values) for key, values in per.items()}
    out |= {f"{key}_context_holds": _mean([v for v, h in zip(values, holds) if h]) for key, values in per.items()}
    out["questions_context_holds"] = int(sum(holds))
    return out, per
