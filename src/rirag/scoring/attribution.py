"""Attribution metrics for cited answers, next to RePASs: do the citations support the sentences, and how much of
the answer is copied from the passages?

Per answer (sentences split with Punkt; a citation marker after a full stop belongs to the sentence before it; the
NLI judge sees the cited passage as premise and the sentence without its markers as hypothesis, and a pair
*entails* when the judge's arg-max label is entailment):

* ``citation_precision``: share of the answer's citations whose passage entails the citing sentence (a citation
  outside the passage list cannot support anything and counts as not supporting); undefined without citations.
  The premises of a cited passage are the passage itself (a passage longer than :data:`PREMISE_MAX_CHARS` in
  windows of whole sentences) and each of its sentences; any premise entailing the sentence is enough (a small NLI
  judge often answers "neutral" for a long premise that contains the hypothesis word for word). An inline marker
  inside a sentence (the focused answerer's ``--follow-references``: "... subject to Rule 9.5.2 [3], ... [1].") is
  a citation of that sentence like any other (:mod:`rirag.text.citations`): the followed passage is judged against
  the sentence that refers to it, which it entails only when it states what the sentence says, so such a marker
  usually counts as not supporting and lowers precision (the followed passage is also quoted after it with its own
  marker, judged against its own text); it may also make a sentence cited, or supported, that was not;
* ``citation_recall``: share of sentences with at least one supporting citation;
* ``uncited_share``: share of sentences without any citation;
* ``invalid_citations``: number of citations outside the passage list;
* ``copy_ratio``: share of the answer's word tokens (lower-cased ``\\w+``, citation markers removed) that lie
  inside a span of at least :data:`MIN_COPY_SPAN` consecutive tokens occurring verbatim in one passage. RePASs
  rewards copying, so every table shows this next to the score.

Empty answers are skipped; an answer that is exactly the abstention reply
(:data:`rirag.generation.prompts.NO_ANSWER`) is counted as ``abstained`` and has no citation metrics. Means are
over the answers where a metric is defined (macro average).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from rirag.data.answers import read_answers
from rirag.scoring.classifier import PAIR, Classifier
from rirag.scoring.constants import ENTAILMENT, LOCAL_NLI_JUDGE
from rirag.scoring.models import label_index, resolve_device
from rirag.scoring.workers import resolve_workers
from rirag.text.citations import NO_ANSWER, parse_citations, strip_citations
from rirag.text.sentences import punkt_split

logger = logging.getLogger(__name__)

#: A copied span is at least this many consecutive word tokens found verbatim in one passage.
MIN_COPY_SPAN = 8
#: A cited passage longer than this (characters) is judged in windows of whole sentences up to this length (a
#: citation is supported when any window entails the sentence), so that truncation never hides its end.
PREMISE_MAX_CHARS = 1200
METRICS = ("citation_precision", "citation_recall", "uncited_share", "invalid_citations", "copy_ratio")

EntailFn = Callable[[list[tuple[str, str]]], list[bool]]
_TOKEN = re.compile(r"\w+")


def premise_windows(passage: str, max_chars: int = PREMISE_MAX_CHARS) -> list[str]:
    """The passage itself when short, else consecutive whole-sentence windows of at most ``max_chars``."""
    if len(passage) <= max_chars:
        return [passage]
    windows, current = [], ""
    for sentence in punkt_split(passage):
        if current and len(current) + 1 + len(sentence) > max_chars:
            windows.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        windows.append(current)
    return windows


def premises(passage: str, max_chars: int = PREMISE_MAX_CHARS) -> list[str]:
    """Everything a citation of ``passage`` is judged against: its windows, then each of its sentences."""
    return list(dict.fromkeys([*premise_windows(passage, max_chars), *punkt_split(passage)]))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def copy_ratio(answer: str, passages: Sequence[str], min_span: int = MIN_COPY_SPAN) -> float:
    """Share of the answer's tokens inside a verbatim span of ``min_span``+ tokens of one passage (0 when empty)."""
    words = tokens(strip_citations(answer))
    if not words:
        return 0.0
    grams = set()
    for passage in passages:
        p = tokens(passage)
        grams.update(tuple(p[i:i + min_span]) for i in range(len(p) - min_span + 1))
    covered = np.zeros(len(words), dtype=bool)
    for i in range(len(words) - min_span + 1):
        if tuple(words[i:i + min_span]) in grams:
            covered[i:i + min_span] = True
    return float(covered.mean())


@dataclass
class AttributionConfig:
    nli_model: str = field(default=LOCAL_NLI_JUDGE, metadata={"help": "NLI cross-encoder that judges support."})
    batch_size: int = field(default=32, metadata={"help": "Pairs per forward pass."})
    device: Any = field(default=None, metadata={"help": "'cpu', 'cuda', ... or None (auto)."})
    min_copy_span: int = field(default=MIN_COPY_SPAN, metadata={"help": "Tokens in a copied span."})
    show_progress: bool = field(default=True, metadata={"help": "tqdm over NLI batches."})
    workers: Any = field(default=1, metadata={"help": "CPU worker processes (rirag.scoring.workers), or 'auto'."})


def nli_judge(config: AttributionConfig) -> EntailFn:
    """``[(premise, hypothesis)] -> [entails]`` by the NLI model of ``config``, through RePASs' classifier (same
    loading and truncation, no padding, the shared probability cache)."""
    device = resolve_device(config.device)
    classifier = Classifier(config.nli_model, device, config.batch_size, config.show_progress, PAIR,
                            workers=resolve_workers(config.workers, device))
    e_idx = label_index(classifier.config, ENTAILMENT)

    def entails(pairs: list[tuple[str, str]]) -> list[bool]:
        probs = classifier.probabilities(pairs, desc="attribution NLI")
        return [int(np.argmax(probs[p])) == e_idx for p in pairs]

    return entails


class AttributionScorer:
    """Citation precision/recall, uncited share, invalid citations and copy ratio; ``entails`` overrides the NLI
    judge (tests)."""

    def __init__(self, config: AttributionConfig | None = None, entails: EntailFn | None = None):
        self.config = config or AttributionConfig()
        self._entails = entails

    def entails(self, pairs: list[tuple[str, str]]) -> list[bool]:
        if not pairs:
            return []
        if self._entails is None:
            self._entails = nli_judge(self.config)
        unique = list(dict.fromkeys(pairs))  # an injected judge (tests) sees each pair once too
        verdicts = dict(zip(unique, self._entails(unique)))
        return [verdicts[p] for p in pairs]

    def score(self, answers: Sequence[str | None], passages: Sequence[Sequence[str]]) -> dict[str, Any]:
        """Per-answer metrics (``None`` where undefined or skipped) and their means."""
        if len(answers) != len(passages):
            raise ValueError(f"{len(answers)} answers but {len(passages)} passage lists")
        per: dict[str, list] = {m: [] for m in METRICS}
        parsed_items, pairs, skipped, abstained = [], [], [], []
        for i, (answer, item_passages) in enumerate(zip(answers, passages)):
            item_passages = [item_passages] if isinstance(item_passages, str) else list(item_passages or [])
            if not answer or not answer.strip():
                skipped.append(i)
                parsed_items.append(None)
                continue
            if answer.strip() == NO_ANSWER:
                abstained.append(i)
            parsed = parse_citations(answer, item_passages)  # a valid citation's "id" is its passage text
            parsed_items.append((parsed, item_passages))
            for c in parsed.citations:
                if c.valid:
                    windows = premises(item_passages[c.number - 1])
                    pairs.append([(w, parsed.claims[c.sentence]) for w in windows])
        flat = self.entails([p for group in pairs for p in group])
        grouped, at = [], 0
        for group in pairs:
            grouped.append(any(flat[at:at + len(group)]))
            at += len(group)
        verdicts = iter(grouped)
        for i, item in enumerate(parsed_items):
            if item is None:
                for m in METRICS:
                    per[m].append(None)
                continue
            parsed, item_passages = item
            supported = [False] * len(parsed.sentences)
            hits = 0
            for c in parsed.citations:
                if c.valid and next(verdicts):
                    hits += 1
                    supported[c.sentence] = True
            n_sent = len(parsed.sentences)
            cited = {c.sentence for c in parsed.citations}
            defined = i not in abstained
            per["citation_precision"].append(hits / len(parsed.citations) if parsed.citations and defined else None)
            per["citation_recall"].append(sum(supported) / n_sent if n_sent and defined else None)
            per["uncited_share"].append((n_sent - len(cited)) / n_sent if n_sent and defined else None)
            per["invalid_citations"].append(len(parsed.invalid))
            per["copy_ratio"].append(copy_ratio(answers[i], item_passages, self.config.min_copy_span))
        means = {m: (float(np.mean([v for v in per[m] if v is not None])) if any(v is not None for v in per[m])
                     else None) for m in METRICS}
        means["invalid_citations_total"] = int(sum(v for v in per["invalid_citations"] if v is not None))
        return {**means, "per_item": per, "skipped": skipped, "abstained": abstained,
                "n_scored": len(answers) - len(skipped)}


def score_answers_file(path: str, scorer: AttributionScorer) -> dict[str, Any]:
    """Attribution metrics of a shared-task answers JSON (citations re-parsed from each ``Answer``, numbered by
    the order of ``RetrievedPassages``); per-question values keyed by QuestionID."""
    data = read_answers(path)
    result = scorer.score([r["Answer"] for r in data], [r["RetrievedPassages"] for r in data])
    qids = [str(r["QuestionID"]) for r in data]
    result["per_question"] = {q: {m: result["per_item"][m][i] for m in METRICS} for i, q in enumerate(qids)}
    del result["per_item"]
    result["skipped"] = [qids[i] for i in result["skipped"]]
    result["abstained"] = [qids[i] for i in result["abstained"]]
    return result


def format_attribution(result: dict[str, Any]) -> str:
    def cell(v):
        return "n/a" if v is None else f"{v:.5f}"

    rows = [("Citation precision", cell(result["citation_precision"])),
            ("Citation recall", cell(result["citation_recall"])),
            ("Uncited sentences", cell(result["uncited_share"])),
            ("Invalid citations", str(result["invalid_citations_total"])),
            (f"Copy ratio (≥{MIN_COPY_SPAN} tokens)", cell(result["copy_ratio"])),
            ("answers (abstained)", f"{result['n_scored']} ({len(result['abstained'])})")]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)
