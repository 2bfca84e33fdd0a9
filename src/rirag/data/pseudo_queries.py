"""Pseudo-questions of an ingested rulebook, for tuning an encoder on it without labels (issue 65, point 3).

A rulebook ingested by ``rirag data ingest`` keeps each passage's heading path (``Headings`` in its document files:
the page title, then the chapter, section, article or rule headings above the passage). A heading says what the
passages under it are about in the words a reader would ask with ("Liquidity coverage requirement", "Notification
of breaches"), so a heading is a question that those passages answer. :func:`pseudo_questions` turns every heading
with at least :data:`~rirag.constants.PSEUDO_QUERY_MIN_WORDS` words (its leading number or label removed: "Article 4",
"2.1") into one question whose gold passages are the passages directly under it (at most
:data:`~rirag.constants.PSEUDO_QUERY_MAX_GOLD` of them, the first ones: a long chapter would otherwise dominate), with
the page title appended where the heading alone is short. Nothing of any labelled question is read: these are the
corpus's own words. A corpus without heading paths (ObliQA's) gives none, and says so.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from rirag.constants import PSEUDO_QUERY_MAX_GOLD, PSEUDO_QUERY_MIN_WORDS
from rirag.data.obliqa import Question, document_files, records_in
from rirag.errors import DataError

logger = logging.getLogger(__name__)

#: Words that open a heading as its label, not its subject ("Article 4 ...", "Chapter 2 ...", "Rule 3.1 ...").
LABEL_WORDS = frozenset({"article", "chapter", "part", "section", "rule", "annex", "schedule", "appendix", "title",
                         "paragraph", "regulation"})


def heading_subject(heading: str) -> str:
    """The heading without its leading number or label: ``"Article 4 Liquidity coverage"`` -> ``"Liquidity
    coverage"``, ``"2.1 Notification"`` -> ``"Notification"``."""
    words = heading.split()
    while words and _is_label(words[0]):
        words = words[1:]
    return " ".join(words).strip(" -–—:")


def _is_label(word: str) -> bool:
    """A heading's opening label word: ``Article``, ``4``, ``2.1``, ``4A``, ``(b)``."""
    bare = word.strip("().:")
    return (bare.lower() in LABEL_WORDS or not any(ch.isalpha() for ch in bare)
            or (bare[:1].isdigit() and len(bare) <= 6)  # 4A, 428b, 2.1a
            or (len(bare) <= 4 and set(bare) <= set("IVXL"))  # a roman numeral: II, XIV
            or (len(bare) == 1 and word != bare))  # (a), b.


def _query(path: list[str]) -> str | None:
    subjects = [heading_subject(h) for h in path]
    last = subjects[-1] if subjects else ""
    if len(last.split()) < PSEUDO_QUERY_MIN_WORDS:
        return None
    title = subjects[0] if len(subjects) > 1 else ""
    short = len(last.split()) < 2 * PSEUDO_QUERY_MIN_WORDS
    return f"{last} ({title})" if short and title and title != last else last


def pseudo_questions(root: str | Path, corpus: Mapping | None = None) -> list[Question]:
    """One question per distinct heading query of the corpus folder ``root`` (see the module), gold: the passages
    under it that are in ``corpus`` (when given), in document order. A :class:`DataError` where the folder has no
    heading paths at all."""
    root = Path(root)
    groups: dict[str, list[str]] = {}
    docs: dict[str, int] = {}
    seen = 0
    for path in document_files(root):
        for rec in records_in(path, ("ID", "DocumentID")):
            headings = [str(h) for h in (rec.get("Headings") or []) if str(h).strip()]
            seen += bool(headings)
            query = _query(headings) if headings else None
            if query is None or (corpus is not None and rec["ID"] not in corpus):
                continue
            gold = groups.setdefault(query, [])
            docs.setdefault(query, int(rec["DocumentID"]))
            if len(gold) < PSEUDO_QUERY_MAX_GOLD:
                gold.append(rec["ID"])
    if not seen:
        raise DataError(f"{root}: no passage has a heading path (Headings), so there are no pseudo-questions; "
                        "ingest the rulebook with `rirag data ingest`, which keeps them")
    questions = [Question(id=f"pseudo-{i}", text=q, gold=tuple(gold), group=docs[q], gold_documents=(docs[q],))
                 for i, (q, gold) in enumerate(groups.items())]
    logger.info("%d pseudo-questions (headings) over %d passages of %s", len(questions),
                sum(len(q.gold) for q in questions), root)
    return questions
