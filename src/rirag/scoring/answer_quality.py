"""Answer metrics that copying cannot game, reported next to RePASs.

RePASs rewards copying the passages: an answer made of every obligation sentence scores high whatever was asked.
These metrics pull against it (per answer, macro-averaged over the answers; the gold passages come from the
question's qrels):

* ``gold_citation_precision``: of the passages an answer cites (valid ``[n]`` markers, each passage once), the
  share that are gold passages of its question; an answer that cites nothing scores 0;
* ``gold_citation_recall``: of the question's gold passages, the share the answer cites;
* ``gold_citation_f1``: the harmonic mean of the two, per answer (0 when either is 0), averaged;
* ``cite_all_share``: the share of answers that cite every gold passage of their question, beside its ceiling
  ``context_all_share``, the share whose passages (``RetrievedIDs``: the context the answerer was given, after the
  score filter) hold every gold passage, and ``context_recall``, the mean share of gold passages in the context;
* ``cited_per_answer`` / ``gold_per_question``: passages cited and gold passages, means (an answer that cites one of
  three scores well on precision and shows here);
* ``words_per_cited_passage``: median of words over passages cited, among answers that cite one;
* ``words_median`` / ``words_p95`` / ``words_max``: answer length in words, citation markers removed;
* ``shared_answers``: answers whose text (whitespace- and case-normalised, markers removed) is also the answer to
  another question whose gold passages differ (identical answers to different questions did not read them); the
  bare abstention line is left to ``flag_rate``;
* ``broken_units`` / ``answers_with_broken_units``: answer units (:func:`rirag.text.units.answer_units`: the text up to
  each citation) that start with a bare list label or end inside a list (:func:`rirag.text.units.is_broken_unit`);
* ``cites_two_or_more``: share of answers citing at least two passages;
* ``gold_below_rank1_cited`` (of ``gold_below_rank1_questions``): among the questions whose gold passage was given
  below rank 1 (a gold passage at rank 2 or lower of the answer's passages), the share whose answer cites one of
  those gold passages;
* ``missing_part_rate``: share of answers that say a part of the question is not stated by the passages
  (:func:`rirag.text.missing_parts.has_missing_statement`);
* the gold-text metrics of :mod:`rirag.scoring.gold_text` (``gold_rule_coverage_min`` / ``_mean``,
  ``gold_text_precision``, each also over the questions whose context held every gold passage), when the gold
  passages' texts are given;
* ``flag_rate``: share of answers that say their passages do not address the question (the focused answerer's
  :data:`~rirag.text.units.NOT_ADDRESSED` opening) or abstain (:data:`~rirag.generation.prompts.NO_ANSWER`).
  Measured on mismatched contexts (each question answered from another question's passages) it is the share of
  such answers that notice; on matched contexts, the share that wrongly give up.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

import numpy as np

from rirag.scoring.gold_text import GOLD_TEXT_METRICS, gold_text_metrics
from rirag.text.citations import CITATION_PATTERN, NO_ANSWER, numbers_in
from rirag.text.missing_parts import MISSING_PREFIX, has_missing_statement
from rirag.text.units import NOT_ADDRESSED, answer_units, is_broken_unit

METRICS = ("gold_citation_precision", "gold_citation_recall", "gold_citation_f1", "cite_all_share",
           "context_all_share", "context_recall", "cited_per_answer", "gold_per_question", "words_per_cited_passage",
           "words_median", "words_p95", "words_max",
           "shared_answers", "broken_units", "answers_with_broken_units", "flag_rate", "cites_two_or_more",
           "gold_below_rank1_cited", "gold_below_rank1_questions", "missing_part_rate")
#: A citation marker with the space before it (the space before punctuation is kept, unlike strip_citations).
_MARKERS = re.compile(r"\s*" + CITATION_PATTERN.pattern)


def plain(answer: str | None) -> str:
    """The answer without citation markers, whitespace-normalised."""
    return " ".join(_MARKERS.sub("", answer or "").split())


def words(answer: str | None) -> int:
    return len(plain(answer).split())


def cited_passages(answer: str | None, retrieved_ids: Sequence[str]) -> list[str]:
    """The passage ids an answer cites (valid markers, each once, in order of first citation)."""
    ids = []
    for n in numbers_in(answer or ""):
        if 1 <= n <= len(retrieved_ids):
            ids.append(retrieved_ids[n - 1])
    return list(dict.fromkeys(ids))


def gold_citation(cited: Sequence[str], gold: Sequence[str]) -> tuple[float, float]:
    """(precision, recall) of one answer's cited passages against its gold passages (precision 0 when nothing is
    cited; recall undefined without gold: raises)."""
    if not gold:
        raise ValueError("gold_citation needs at least one gold passage")
    hits = len(set(cited) & set(gold))
    return (hits / len(set(cited)) if cited else 0.0), hits / len(set(gold))


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def is_flagged(answer: str | None) -> bool:
    """Whether an answer says its passages do not address the question, or abstains."""
    text = (answer or "").strip()
    return text.startswith(NOT_ADDRESSED) or text.startswith(NO_ANSWER)


def gold_below_rank1(cited: Sequence[str], retrieved_ids: Sequence[str], gold: Sequence[str]) -> bool | None:
    """Whether an answer cites a gold passage that was given below rank 1 (``None`` when none was)."""
    lower = set(retrieved_ids[1:]) & set(gold)
    return bool(lower & set(cited)) if lower else None


def shared_answers(answers: Sequence[str | None], golds: Sequence[Sequence[str]]) -> int:
    """How many non-empty answers are identical (normalised) to the answer of a question with different gold."""
    by_text: dict[str, list[int]] = {}
    for i, a in enumerate(answers):
        key = plain(a).lower()
        if key and key != NO_ANSWER.lower():  # the same abstention line is counted by flag_rate, not here
            by_text.setdefault(key, []).append(i)
    count = 0
    for members in by_text.values():
        for i in members:
            if any(frozenset(golds[j]) != frozenset(golds[i]) for j in members if j != i):
                count += 1
    return count


def broken_units(answer: str | None) -> int:
    """Broken units of an answer (the :data:`NOT_ADDRESSED` opening is not a unit; the unit after it is)."""
    units = [u[len(NOT_ADDRESSED):].strip() if u.startswith(NOT_ADDRESSED) else u for u in answer_units(answer or "")]
    return sum(is_broken_unit(u) for u in units if u and not u.startswith(MISSING_PREFIX))


def mismatched_partners(golds: Sequence[Sequence[str]], contexts: Sequence[Sequence[str]], seed: int) -> list[int]:
    """For each question, another question (seeded: the next one in a shuffled order that qualifies) whose gold
    passages share none of its own and whose context (passage ids) holds none of its gold passages: answering from
    the partner's context is the mismatched-context test of ``flag_rate``. Several questions may share a partner."""
    import random

    order = list(range(len(golds)))
    random.Random(seed).shuffle(order)
    partner = []
    position = {i: pos for pos, i in enumerate(order)}
    for i in range(len(golds)):
        pos = position[i]
        for step in range(1, len(order)):
            j = order[(pos + step) % len(order)]
            if not set(golds[j]) & set(golds[i]) and not set(contexts[j]) & set(golds[i]) \
                    and list(contexts[j]) != list(contexts[i]):
                partner.append(j)
                break
        else:
            raise ValueError(f"question {i} has no partner with other gold passages and another context")
    return partner


def answer_quality(answers: Sequence[str | None], retrieved_ids: Sequence[Sequence[str]],
                   golds: Sequence[Sequence[str]] | None = None,
                   passage_text: Mapping[str, str] | None = None) -> dict:
    """The metrics of the module over parallel lists; the gold-citation metrics and ``shared_answers`` only when
    ``golds`` is given (``None`` values otherwise); with ``passage_text`` (gold passage id -> text) too, the
    gold-text metrics (:mod:`rirag.scoring.gold_text`: how much of each gold rule the answer quotes, how much of the
    answer comes from gold rules). Per-answer values are under ``per_item``."""
    if len(answers) != len(retrieved_ids) or (golds is not None and len(golds) != len(answers)):
        raise ValueError("answers, retrieved ids and gold passages must be parallel lists")
    n_words = [words(a) for a in answers]
    broken = [broken_units(a) for a in answers]
    flagged = [is_flagged(a) for a in answers]
    cited = [cited_passages(a, ids) for a, ids in zip(answers, retrieved_ids)]
    missing = [has_missing_statement(a) for a in answers]
    per: dict[str, list] = {"words": n_words, "broken_units": broken, "flagged": flagged,
                            "cited_passages": [len(c) for c in cited], "missing_part_statement": missing}
    out: dict = {m: None for m in (*METRICS, *GOLD_TEXT_METRICS)}
    if golds is not None:
        below = [gold_below_rank1(c, ids, g) for c, ids, g in zip(cited, retrieved_ids, golds)]
        per["gold_below_rank1_cited"] = below
        asked = [b for b in below if b is not None]
        out["gold_below_rank1_questions"] = len(asked)
        out["gold_below_rank1_cited"] = float(np.mean(asked)) if asked else None
        pr = [gold_citation(cited_passages(a, ids), g) if g else (None, None)
              for a, ids, g in zip(answers, retrieved_ids, golds)]
        per["gold_citation_precision"] = [p for p, _ in pr]
        per["gold_citation_recall"] = [r for _, r in pr]
        per["gold_citation_f1"] = [None if p is None else f1(p, r) for p, r in pr]
        per["context_recall"] = [len(set(g) & set(ids)) / len(set(g)) if g else None
                                 for ids, g in zip(retrieved_ids, golds)]
        for key in ("gold_citation_precision", "gold_citation_recall", "gold_citation_f1", "context_recall"):
            values = [v for v in per[key] if v is not None]
            out[key] = float(np.mean(values)) if values else None
        out |= _set_metrics(per, cited, golds)
        out["shared_answers"] = shared_answers(answers, golds)
        if passage_text is not None:
            text_metrics, text_per = gold_text_metrics(answers, retrieved_ids, golds, passage_text)
            out |= text_metrics
            per |= text_per
    if answers:
        out |= {"words_median": float(np.median(n_words)), "words_p95": float(np.percentile(n_words, 95)),
                "words_max": int(max(n_words)), "broken_units": int(sum(broken)),
                "answers_with_broken_units": int(sum(b > 0 for b in broken)),
                "flag_rate": float(np.mean(flagged)),
                "cites_two_or_more": float(np.mean([len(c) >= 2 for c in cited])),
                "missing_part_rate": float(np.mean(missing)),
                "cited_per_answer": float(np.mean([len(c) for c in cited]))}
        per_cited = [w / len(c) for w, c in zip(n_words, cited) if c]
        out["words_per_cited_passage"] = float(np.median(per_cited)) if per_cited else None
    out["answers"] = len(answers)
    out["per_item"] = per
    return out


def _set_metrics(per: dict[str, list], cited: Sequence[Sequence[str]], golds: Sequence[Sequence[str]]) -> dict:
    """Whether each answer cites every gold passage, beside whether its context held them all (the ceiling)."""
    asked = [i for i, g in enumerate(golds) if g]
    per["cites_all_gold"] = [set(g) <= set(c) if g else None for c, g in zip(cited, golds)]
    per["context_holds_all_gold"] = [r == 1.0 if r is not None else None for r in per["context_recall"]]
    if not asked:
        return {}
    return {"cite_all_share": float(np.mean([per["cites_all_gold"][i] for i in asked])),
            "context_all_share": float(np.mean([per["context_holds_all_gold"][i] for i in asked])),
            "gold_per_question": float(np.mean([len(set(golds[i])) for i in asked]))}


def format_quality(result: Mapping) -> str:
    def cell(v):
        return "n/a" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))

    rows = [("Gold-citation precision", cell(result.get("gold_citation_precision"))),
            ("Gold-citation recall (context holds)",
             f"{cell(result.get('gold_citation_recall'))} ({cell(result.get('context_recall'))})"),
            ("Gold-citation F1", cell(result.get("gold_citation_f1"))),
            ("Cite every gold passage (context holds them all)",
             f"{cell(result.get('cite_all_share'))} ({cell(result.get('context_all_share'))})"),
            ("Gold-rule coverage, min (context holds all)",
             f"{cell(result.get('gold_rule_coverage_min'))} "
             f"({cell(result.get('gold_rule_coverage_min_context_holds'))})"),
            ("Gold-rule coverage, mean (context holds all)",
             f"{cell(result.get('gold_rule_coverage_mean'))} "
             f"({cell(result.get('gold_rule_coverage_mean_context_holds'))})"),
            ("Gold-text precision (context holds all)",
             f"{cell(result.get('gold_text_precision'))} ({cell(result.get('gold_text_precision_context_holds'))})"),
            ("Passages cited / gold passages (means)",
             f"{cell(result.get('cited_per_answer'))} / {cell(result.get('gold_per_question'))}"),
            ("Words per cited passage (median)", cell(result.get("words_per_cited_passage"))),
            ("Words (median / p95 / max)", f"{cell(result.get('words_median'))} / {cell(result.get('words_p95'))} / "
                                           f"{cell(result.get('words_max'))}"),
            ("Answers shared across questions", cell(result.get("shared_answers"))),
            ("Broken units", cell(result.get("broken_units"))),
            ("Flagged (not addressed / no answer)", cell(result.get("flag_rate"))),
            ("Answers citing >= 2 passages", cell(result.get("cites_two_or_more"))),
            (f"Gold below rank 1 cited (of {cell(result.get('gold_below_rank1_questions'))})",
             cell(result.get("gold_below_rank1_cited"))),
            ("Missing-part statements", cell(result.get("missing_part_rate")))]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)
