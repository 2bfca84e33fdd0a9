"""Question files on any corpus: the one reader of ``--questions`` (:func:`read_questions`), and gold passages given
by passage id or by passage text, mapped to the corpus (:func:`load_questions`); a corpus folder's unseen questions
(:func:`unseen_questions`) are read by the same reader.

A question file (JSON, JSONL or CSV: :mod:`rirag.data.question_files`) holds records ``{QuestionID, Question, Gold |
Passages}``; each gold item is

* a passage id (a string, or an object with ``ID``), taken as it is when the corpus has it;
* or a passage text (an object with ``text`` or ``Passage``), optionally with a hint of its document (``page``,
  ``document`` or ``DocumentID``: a document key, source file stem or number of the corpus's document map), as in
  ``ukfin_xref`` whose gold passages come from another segmentation of the same pages.

A text is mapped to the passage that holds it: word-level containment (case, spacing and punctuation ignored) in the
hinted document, then anywhere in the corpus, then fuzzy containment (rapidfuzz ``partial_ratio`` at least
:data:`~rirag.constants.GOLD_TEXT_MIN_RATIO` on a passage at least :data:`~rirag.constants.GOLD_TEXT_MIN_COVER` as
long). "Anywhere" is where an index says (``candidates``: the commands pass
:func:`rirag.retrieval.gold_index.bm25_candidates`, a text's BM25 top passages), not a scan of the corpus per text;
without one (a library call) the passages holding the text's three longest words are scanned for. What does not map
is reported, never silently dropped. Records without gold are questions to answer only: gold is mapped only where it
is scored (``rirag retrieve`` and the answering commands read the questions alone, :func:`read_questions`).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from rirag.constants import GOLD_TEXT_FUZZY_CANDIDATES, GOLD_TEXT_MIN_COVER, GOLD_TEXT_MIN_RATIO
from rirag.data.ingest.raw import document_key
from rirag.data.obliqa import DOCUMENT_MAP_FILE, ObliQA, Passage, Question, load_obliqa
from rirag.data.passage_store import PassageTable
from rirag.data.question_files import question_records
from rirag.errors import DataError, UsageError
from rirag.io import read_json
from rirag.validation import record_id, without_controls

logger = logging.getLogger(__name__)

GOLD_LIST_FIELDS = ("Gold", "Passages")
GOLD_TEXT_FIELDS = ("text", "Passage", "passage")
GOLD_ID_FIELDS = ("ID", "id")
GOLD_DOCUMENT_FIELDS = ("page", "document", "DocumentID")
#: After this many gold items of a file, none mapped, :func:`load_questions` says so at once, not at the end.
UNMAPPED_EARLY = 10
#: An index of a corpus for gold texts: given the corpus, a function from a text to the ids of the passages worth
#: checking for it, best first (:func:`rirag.retrieval.gold_index.bm25_candidates`).
CandidateIndex = Callable[[Mapping[str, Passage]], Callable[[str], Sequence[str]]]


@dataclass
class GoldMapping:
    """One gold item of one question and where it went."""

    question_id: str
    index: int
    how: str  # "id", "exact", "exact-other-document", "fuzzy" or "unmapped"
    passage_id: str | None = None
    score: float | None = None
    holders: int = 0  # passages holding the text (exact matches)
    role: str | None = None
    text: str | None = None

    def as_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if v is not None}
        if "text" in d and len(d["text"]) > 160:
            d["text"] = d["text"][:160] + "…"
        return d


@dataclass
class QuestionSet:
    """Questions of a file with their gold mapped to a corpus."""

    source: str
    questions: list[Question]
    #: per question, the passage of each gold item in the file's order (``None``: unmapped)
    items: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    mappings: list[GoldMapping] = field(default_factory=list)

    def role_pairs(self, first: str = "src", second: str = "tgt") -> dict[str, tuple[str, str]]:
        """question id -> (passage of its ``first`` gold item, passage of its ``second``), by the items' ``role``
        (ukfin_xref: the rule and the rule it cites), for the questions whose two items both mapped, to two
        different passages."""
        roles: dict[str, dict[str | None, str | None]] = {}
        for m in self.mappings:
            roles.setdefault(m.question_id, {})[m.role] = m.passage_id
        return {q: (r[first], r[second]) for q, r in roles.items()
                if r.get(first) and r.get(second) and r[first] != r[second]}

    def report(self) -> dict:
        hows = Counter(m.how for m in self.mappings)
        total = len(self.mappings)
        mapped = total - hows.get("unmapped", 0)
        return {
            "questions": len(self.questions),
            "questions_with_gold": sum(1 for q in self.questions if q.gold),
            "gold_items": total,
            "gold_mapped": mapped,
            "gold_mapped_share": round(mapped / total, 4) if total else None,
            "by": dict(sorted(hows.items())),
            "held_by_several": sum(1 for m in self.mappings if m.holders > 1),
            "pairs_on_one_passage": sum(1 for its in self.items.values()
                                        if len(its) == 2 and its[0] is not None and its[0] == its[1]),
            "unmapped": [m.as_dict() for m in self.mappings if m.how == "unmapped"],
            "fuzzy": [m.as_dict() for m in self.mappings if m.how == "fuzzy"],
        }


def _positions_by_value(values: list[int]) -> dict[int, list[int]]:
    """Each value's positions in ``values``, in increasing order (numpy's stable sort: a second at a million
    passages as a Python loop)."""
    import numpy as np

    array = np.asarray(values, dtype=np.int64)
    order = np.argsort(array, kind="stable")
    keys, starts = np.unique(array[order], return_index=True)
    return {int(k): part.tolist() for k, part in zip(keys, np.split(order, starts[1:]))}


def normalise(text: str) -> str:
    """Words only, lower case, single spaces: what containment compares."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def _has_all(text: str, words: list[str]) -> bool:
    return all(w in text for w in words)


class TextMapper:
    """Map gold texts to the corpus passages that hold them. A passage's text is normalised the first time a gold
    text is looked for in it: a gold text whose document is hinted reads that document only; one not found there
    (or with no hint) is looked for in the passages ``candidates`` gives for it (an index's: word for word, then
    fuzzily), and without an index in the passages that hold its three longest words, and only one found nowhere
    (fuzzy containment) normalises the whole corpus."""

    def __init__(self, corpus: Mapping[str, Passage], document_names: Mapping[int, list[str]] | None = None,
                 candidates: Callable[[str], Sequence[str]] | None = None):
        self.ids = list(corpus)
        self.candidates, self._positions = candidates, None
        self._corpus = corpus  # a PassageTable's texts are read only where looked for
        self._texts: dict[int, str] = {}
        documents = (corpus.document_ids() if isinstance(corpus, PassageTable)
                     else [p.document_id for p in corpus.values()])
        self.by_document: dict[int, list[int]] = _positions_by_value(documents)
        self.names: dict[str, int] = {}
        for doc, names in (document_names or {}).items():
            for name in names:
                for alias in (str(name), Path(str(name)).stem, document_key(Path(str(name)).stem)):
                    self.names.setdefault(alias, int(doc))

    def text(self, i: int) -> str:
        """The ``i``-th passage's text, normalised (:func:`normalise`)."""
        text = self._texts.get(i)
        if text is None:
            text = self._texts[i] = normalise(self._corpus[self.ids[i]].text)
        return text

    def _candidates(self, text: str) -> list[int]:
        """The positions of the passages the index ranks first for ``text``, best first."""
        if self._positions is None:
            self._positions = {pid: i for i, pid in enumerate(self.ids)}
        return [self._positions[pid] for pid in self.candidates(text) if pid in self._positions]

    def _holding(self, words: list[str]) -> list[int]:
        """The passages already normalised and those whose casefolded text holds all ``words``, in corpus order."""
        if isinstance(self._corpus, PassageTable):
            return sorted(set(self._corpus.holding(words)).union(self._texts))
        return [i for i in range(len(self.ids))
                if i in self._texts or _has_all(self._corpus[self.ids[i]].text.casefold(), words)]

    def document_of(self, hint: Any) -> int | None:
        if hint is None:
            return None
        if isinstance(hint, int) or (isinstance(hint, str) and hint.isdigit()):
            return int(hint) if int(hint) in self.by_document else None
        return self.names.get(str(hint))

    def map(self, text: str, hint: Any = None) -> tuple[str | None, str, float | None, int]:
        """(passage id or None, how, fuzzy score, number of passages holding the text)."""
        gold = normalise(text)
        if not gold:
            return None, "unmapped", None, 0
        doc = self.document_of(hint)
        scopes = [("exact", self.by_document.get(doc, []))] if doc is not None else []
        scopes.append(("exact-other-document" if doc is not None else "exact", range(len(self.ids))))
        # each word of the gold text is in the casefolded text of every passage that holds it: its three longest
        # pick the passages worth normalising
        words = sorted(set(gold.split()), key=lambda w: (-len(w), w))[:3]
        found: list[int] | None = None  # the index's candidates, looked for once the hinted document has it not
        for how, scope in scopes:
            if isinstance(scope, range):  # the whole corpus: the index's candidates, else the passages with those words
                found = self._candidates(text) if self.candidates is not None else None
                scope = found if found is not None else self._holding(words)
            holders = [i for i in scope if gold in self.text(i)]
            if holders:
                best = min(holders, key=lambda i: (len(self.text(i)), i))  # the most specific holder
                return self.ids[best], how, None, len(holders)
        from rapidfuzz import fuzz, process

        min_len = GOLD_TEXT_MIN_COVER * len(gold)
        everywhere = found[:GOLD_TEXT_FUZZY_CANDIDATES] if found is not None else range(len(self.ids))
        for scope in ([self.by_document.get(doc, [])] if doc is not None else []) + [everywhere]:
            choices = {i: self.text(i) for i in scope if len(self.text(i)) >= min_len}
            hit = process.extractOne(gold, choices, scorer=fuzz.partial_ratio, score_cutoff=GOLD_TEXT_MIN_RATIO)
            if hit is not None:
                return self.ids[hit[2]], "fuzzy", round(float(hit[1]), 2), 0
        return None, "unmapped", None, 0


def document_names(root: str | Path) -> dict[int, list[str]]:
    """DocumentID -> its names in the corpus's document map (source file, key, title), for document hints."""
    path = Path(root) / DOCUMENT_MAP_FILE
    if not path.exists():
        return {}
    raw = read_json(path)
    if not isinstance(raw, dict):
        return {}
    return {int(k): ([v] if isinstance(v, str) else [str(x) for x in v]) for k, v in raw.items()}


def is_blank(text: str) -> bool:
    """Nothing is left of ``text`` once its control and invisible (format: zero-width space, BOM, soft hyphen)
    characters and its white space are removed: a question that is not one."""
    return not "".join(c for c in without_controls(text) if unicodedata.category(c) != "Cf").strip()


def read_questions(path: str | Path) -> list[dict[str, Any]]:
    """The records of a questions file, checked: JSON, JSONL or CSV
    (:data:`~rirag.data.question_files.FORMATS_READ`, :func:`~rirag.data.question_files.question_records`), not
    empty, each record an object with a ``QuestionID`` that a run can hold (one word:
    :func:`rirag.validation.record_id`), unique, and a ``Question`` that is a string and not blank
    (:func:`is_blank`). Errors name the file, the record (or line), its QuestionID and the field. Every command's
    ``--questions`` is read here."""
    path = Path(path)
    records = question_records(path)
    seen: set[str] = set()
    for at, rec in records:
        where = f"{path}: {at}"
        if not isinstance(rec, dict):
            raise DataError(f"{where}: expected an object, got {type(rec).__name__}")
        for key in ("QuestionID", "Question"):
            if key not in rec:
                raise DataError(f"{where} (id {rec.get('QuestionID')}): missing field {key!r}")
            if not isinstance(rec[key], str):
                raise DataError(f"{where}: field {key!r} must be a string, got {type(rec[key]).__name__}")
        qid = record_id(rec["QuestionID"], f"{where}: field 'QuestionID'")  # a run must hold it as one word
        if is_blank(rec["Question"]):
            invisible = " (control or invisible characters only)" if rec["Question"].strip() else ""
            raise DataError(f"{where} (QuestionID {qid!r}): field 'Question' is empty{invisible}")
        if qid in seen:
            raise DataError(f"{where}: QuestionID {qid!r} occurs twice")
        seen.add(qid)
    if not records:
        raise DataError(f"{path}: no questions")
    return [rec for _, rec in records]


def unseen_questions(obliqa: ObliQA) -> list[Question]:
    """The corpus folder's unseen questions (:data:`rirag.data.obliqa.UNSEEN_FILE`, the shared task's questions
    without gold), read by :func:`read_questions` as every questions file is; none when the folder has no such
    file."""
    path = obliqa.unseen_path
    if not path.exists():
        return []
    return [Question(rec["QuestionID"], rec["Question"]) for rec in read_questions(path)]


def question_ids(questions: Iterable[tuple[str, str]], source: str) -> None:
    """Every QuestionID is one a run can hold (:func:`rirag.validation.record_id`), checked before anything is
    written: the run and the answers file hold them."""
    for i, (qid, _) in enumerate(questions):
        record_id(qid, f"{source}: record {i}: field 'QuestionID'")


def question_texts(questions: Iterable[tuple[str, str]], source: str) -> None:
    """Every question has text and an id a run can hold: a question that is blank once its control and invisible
    characters are removed (``'   '``, ``'\\x00\\x00'``, ``'\\u200b'``: :func:`rirag.data.questions.is_blank`) is
    refused, as is a QuestionID that is empty or holds whitespace or a control character
    (:func:`rirag.validation.record_id`: TREC is whitespace-separated), naming the file, the record and its
    QuestionID."""
    questions = list(questions)
    question_ids(questions, source)
    for i, (qid, text) in enumerate(questions):
        if not isinstance(text, str) or is_blank(text):
            raise UsageError(f"{source}: record {i} (QuestionID {qid!r}): field 'Question' is empty"
                             + (" (control or invisible characters only)" if isinstance(text, str) and text.strip()
                                else ""))



class _LazyMapper:
    """A :class:`TextMapper` of the corpus, built on the first gold text (a file of ids never builds one, nor its
    index)."""

    def __init__(self, obliqa: ObliQA, index: CandidateIndex | None = None):
        self.obliqa, self.index, self._mapper = obliqa, index, None

    def map(self, text: str, hint: Any) -> tuple[str | None, str, float | None, int]:
        if self._mapper is None:
            corpus = self.obliqa.corpus
            self._mapper = TextMapper(corpus, document_names(self.obliqa.root),
                                      self.index(corpus) if self.index is not None else None)
        return self._mapper.map(text, hint)


def _map_gold(qid: str, j: int, item: Any, corpus: Mapping[str, Passage], mapper: _LazyMapper,
              where: str) -> GoldMapping:
    """Where gold item ``j`` of question ``qid`` goes: its id when the corpus has it, else its text's passage."""
    role = item.get("role") if isinstance(item, dict) else None
    pid = item if isinstance(item, str) else next(
        (item[f] for f in GOLD_ID_FIELDS if isinstance(item, dict) and f in item), None)
    text = next((item[f] for f in GOLD_TEXT_FIELDS if isinstance(item, dict) and f in item), None)
    if pid is None and text is None:
        raise DataError(f"{where}: neither a passage id nor a passage text ('ID' or 'text')")
    if pid is not None and str(pid) in corpus:
        return GoldMapping(qid, j, "id", str(pid), role=role)
    if text is None:
        return GoldMapping(qid, j, "unmapped", None, role=role, text=f"id {pid} (not in the corpus)")
    if not isinstance(text, str):
        raise DataError(f"{where}: field 'text' must be a string, got {type(text).__name__}")
    hint = next((item[f] for f in GOLD_DOCUMENT_FIELDS if f in item), None)
    cid, how, score, holders = mapper.map(text, hint)
    return GoldMapping(qid, j, how, cid, score, holders, role, text)


def load_questions(path: str | Path, obliqa: ObliQA, index: CandidateIndex | None = None) -> QuestionSet:
    """The questions of ``path`` (:func:`read_questions`) with their gold (by id or by text) mapped to ``obliqa``'s
    corpus, a text through ``index`` when given (:data:`CandidateIndex`). For gold that is scored: reading the
    questions alone is :func:`read_questions`."""
    path = Path(path)
    data = read_questions(path)
    corpus = obliqa.corpus
    mapper = _LazyMapper(obliqa, index)
    result = QuestionSet(str(path), [])
    for i, rec in enumerate(data):
        qid = rec["QuestionID"]
        where = f"{path}: record {i} (id {qid})"
        gold_list = next((rec[f] for f in GOLD_LIST_FIELDS if f in rec), [])
        if not isinstance(gold_list, list):
            raise DataError(f"{where}: field 'Gold' must be a list")
        items: list[str | None] = []
        for j, item in enumerate(gold_list):
            m = _map_gold(qid, j, item, corpus, mapper, f"{where} gold {j}")
            result.mappings.append(m)
            items.append(m.passage_id)
            if len(result.mappings) == UNMAPPED_EARLY and all(m.how == "unmapped" for m in result.mappings):
                logger.warning("%s: its first %d gold passages map to no passage of %s: questions of another "
                               "corpus? (mapping the rest)", path, UNMAPPED_EARLY, obliqa.root)
        gold = tuple(dict.fromkeys(c for c in items if c is not None))
        docs = tuple(dict.fromkeys(corpus[c].document_id for c in gold))
        result.questions.append(Question(qid, rec["Question"], gold, rec.get("Group"), docs))
        result.items[qid] = tuple(items)
    unmapped = [m for m in result.mappings if m.how == "unmapped"]
    if unmapped:
        logger.warning("%s: %d of %d gold passages map to no passage of %s", path, len(unmapped),
                       len(result.mappings), obliqa.root)
    return result


def gold_report(questions: str | Path, corpus_folder: str | Path, index: CandidateIndex | None = None) -> dict:
    """How the gold passages of the questions file ``questions`` map to the corpus in ``corpus_folder``
    (:meth:`QuestionSet.report`, with the file's name): what ``rirag data ingest --questions`` reports."""
    return {"file": Path(questions).name, **load_questions(questions, load_obliqa(corpus_folder), index).report()}


def ingest_with_questions(source: str | Path, out: str | Path, questions: str | Path | None = None,
                          index: CandidateIndex | None = None) -> dict:
    """``rirag data ingest``: :func:`rirag.data.ingest.corpus.ingest` of ``source`` into ``out``, with the gold of
    ``questions`` (when given) mapped to the new corpus before it is moved in (:func:`gold_report`, under the
    report's ``"questions"``; ``index``: :data:`CandidateIndex`)."""
    from rirag.data.ingest.corpus import ingest  # only this command reads pages: `ask` and the rest never load it

    return ingest(source, out, check=partial(gold_report, questions, index=index) if questions else None)
