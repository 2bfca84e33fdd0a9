"""A question that is only a rule label ("Rule 3.2.1", "6.8.3", "Article 313-1") looked up as that rule.

A corpus stores each passage's label as its ``PassageID`` (:attr:`rirag.data.passage_store.Passage.passage_id`: an
ObliQA passage's ``3.2.1`` or ``Part 2.Chapter 1.7.(2)``, an ingested page's rule label, qualified by its heading
where the page's numbers repeat: ``Article 14 4.``). Words would find the passages that *cite* the rule, not the
rule: so :class:`RuleLabelFirst` puts the passages labelled so before the retriever's ranking, the retriever's own
order among them, and the answer is drawn from them first. A label matches a passage whose label is the same once
case, spacing, a trailing full stop and a part suffix (``(part 2)``, ``#2``) are set aside, with or without its kind
word (``Rule``, ``Article``, ...); where none is the same, the passages under it (``3.2.1.(1)``, ``Article 14 4.``).
Any other question is the retriever's alone.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Mapping, Sequence

from rirag.constants import RUN_DEPTH
from rirag.data.passage_store import Passage, PassageTable
from rirag.data.runs import Retriever, Run

#: The kind words a label may open with ("Rule 3.2.1", "Art. 5"); they are also tried left out.
LABEL_KINDS = ("rule", "article", "art", "regulation", "reg", "paragraph", "para", "section", "part", "chapter",
               "schedule", "appendix", "annex", "§")
#: A whole question that is a label: an optional kind word, then one token holding a digit (no spaces), then at
#: most a full stop or question mark.
_LABEL = re.compile(r"(?:(?P<kind>" + "|".join(map(re.escape, LABEL_KINDS)) + r")\.?\s*)?"
                    r"(?P<number>[^\W\d_]{0,4}\d[\w.\-()/]*?)\s*[.?]?", re.IGNORECASE)
_PART_SUFFIX = re.compile(r"\s*(?:#\d+|\(part \d+\))$", re.IGNORECASE)
#: What may follow a label in the label of a passage under it ("3.2.1" -> "3.2.1.(1)", "Article 14" -> "Article 14 4.").
_UNDER = (".", " ", "(")
#: At most this many passages under a label are put first (a chapter's number would otherwise bring hundreds).
MAX_LABELLED = 20


def label_key(label: str) -> str:
    """A passage label as labels are compared: case folded, spacing single, a part suffix and a trailing full stop
    dropped."""
    return " ".join(_PART_SUFFIX.sub("", label).casefold().split()).rstrip(". ")


def question_labels(question: str) -> tuple[str, ...]:
    """The label keys a question that is only a rule label names (the label with its kind word, and without);
    none for any other question."""
    match = _LABEL.fullmatch(" ".join(question.split()))
    if match is None:
        return ()
    number = label_key(match["number"])
    kind = match["kind"]
    return (f"{kind.casefold()} {number}", number) if kind else (number,)


class LabelIndex:
    """The corpus's passage labels, sorted, to find a label's passages and those under it by binary search."""

    def __init__(self, corpus: Mapping[str, Passage]):
        self.ids = list(corpus)
        labels = corpus.passage_labels() if isinstance(corpus, PassageTable) else [
            p.passage_id for p in corpus.values()]
        self.keys = sorted((label_key(str(label)), i) for i, label in enumerate(labels))

    def _starting(self, prefix: str) -> list[tuple[str, int]]:
        out = []
        for key, i in self.keys[bisect_left(self.keys, (prefix, -1)):]:
            if not key.startswith(prefix):
                break
            out.append((key, i))
        return out

    def find(self, keys: Sequence[str]) -> list[str]:
        """The ids of the passages labelled as one of ``keys``; where none is, of those under the first key that has
        some (at most :data:`MAX_LABELLED`); corpus order."""
        exact = sorted(i for key in keys for k, i in self._starting(key) if k == key)
        if exact:
            return [self.ids[i] for i in exact]
        for key in keys:
            under = sorted(i for k, i in self._starting(key) if k[len(key):len(key) + 1] in _UNDER)
            if under:
                return [self.ids[i] for i in under[:MAX_LABELLED]]
        return []


class RuleLabelFirst:
    """``base``'s run, where a question is only a rule label (:func:`question_labels`) with that rule's passages
    first (see the module); the label index is built on the first such question."""

    def __init__(self, base: Retriever, corpus: Mapping[str, Passage]):
        self.base, self.corpus, self._index = base, corpus, None

    def __getattr__(self, name: str):  # the base retriever's own attributes (its name, its index)
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def labelled(self, question: str) -> list[str]:
        """The passages a label-only question names (none for any other question)."""
        keys = question_labels(question)
        if not keys:
            return []
        if self._index is None:
            self._index = LabelIndex(self.corpus)
        return self._index.find(keys)

    def search(self, queries: Mapping[str, str], k: int = RUN_DEPTH, show_progress: bool = False) -> Run:
        run = self.base.search(queries, k=k, show_progress=show_progress)
        for qid, question in queries.items():
            hits = self.labelled(question)
            if hits:
                run[qid] = first(hits, run.get(qid, {}), k)
        return run


def first(hits: Sequence[str], results: Mapping[str, float], k: int) -> dict[str, float]:
    """``results`` with ``hits`` above every other passage (in the retriever's order among them, then corpus order),
    cut to ``k``."""
    top = max(results.values(), default=0.0)
    hits = sorted(hits, key=lambda pid: (pid not in results, -results.get(pid, 0.0)))[:k]
    ranked = {pid: top + len(hits) - n for n, pid in enumerate(hits)}
    rest = sorted(((s, pid) for pid, s in results.items() if pid not in ranked), key=lambda x: (-x[0], x[1]))
    ranked.update((pid, s) for s, pid in rest[:max(0, k - len(ranked))])
    return ranked
