"""The answer record: its required fields and reader, the no-answer reply, and citations ``[n]`` in answers (parse
them, attach them to sentences, map them back to passage ids). Below the generation and scoring layers, which both
read and write answers; :mod:`rirag.text.citations` re-exports the citation names.


Accepted forms: ``[1]``, ``[1, 2]`` (also ``;`` as separator) and adjacent markers ``[1][3]``. Numbers are
1-based positions in the prompt's passage list. A number outside the list is kept as an *invalid* citation
(``passage_id`` is ``None``), never dropped. A marker at the very start of a sentence (``... rule. [2] Next``)
belongs to the previous sentence, as writers put it after the full stop.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from rirag.io import read_input_bytes
from rirag.text.sentences import punkt_split

#: The reply when the passages do not settle the question (worked example 3; RAFT targets without the oracle);
#: re-exported by :mod:`rirag.generation.prompts`.
NO_ANSWER = "The provided passages do not answer this question."
#: Fields every answer record must have.
REQUIRED_FIELDS = ("QuestionID", "RetrievedPassages", "Answer")

#: One bracketed citation group: ``[1]``, ``[1, 2]``, ``[1; 2]``.
CITATION_PATTERN = re.compile(r"\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]")
_LEADING_MARKERS = re.compile(r"^(?:\s*\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\])+")


@dataclass(frozen=True)
class Citation:
    """One cited number in one sentence: ``number`` as written, ``passage_id`` (``None`` when out of range)."""

    number: int
    sentence: int
    passage_id: str | None

    @property
    def valid(self) -> bool:
        return self.passage_id is not None

    def as_dict(self) -> dict:
        return {"n": self.number, "sentence": self.sentence, "ID": self.passage_id, "valid": self.valid}


@dataclass
class ParsedAnswer:
    """An answer split into sentences (citation markers kept in :attr:`sentences`, removed in :attr:`claims`)."""

    sentences: list[str]
    claims: list[str]
    citations: list[Citation] = field(default_factory=list)

    @property
    def invalid(self) -> list[Citation]:
        return [c for c in self.citations if not c.valid]

    @property
    def cited_ids(self) -> list[str]:
        """Valid cited passage ids, each once, in order of first citation."""
        return list(dict.fromkeys(c.passage_id for c in self.citations if c.valid))

    def sentence_citations(self, index: int) -> list[Citation]:
        return [c for c in self.citations if c.sentence == index]

    def as_dict(self) -> dict:
        return {"sentences": self.sentences, "citations": citation_records(self)}


def numbers_in(marker_text: str) -> list[int]:
    """Every cited number in ``marker_text``, in order, repeats kept."""
    return [int(n) for group in CITATION_PATTERN.findall(marker_text) for n in re.split(r"\s*[,;]\s*", group)]


def strip_citations(text: str) -> str:
    """The text without citation markers (and without the space before them)."""
    return re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s*" + CITATION_PATTERN.pattern, "", text)).strip()


def with_citation(sentence: str, number: int | Sequence[int]) -> str:
    """``sentence`` (whitespace-normalised) with ``[n]`` before its closing full stop (appended when it has none):
    how the extractive answerers cite. Several numbers (the same rule in several passages) are adjacent markers,
    ``[2][4]``."""
    sentence = " ".join(sentence.split())
    marker = f"[{number}]" if isinstance(number, int) else "".join(f"[{n}]" for n in number)
    match = re.search(r"([.!?])[\"')\]]*$", sentence)
    if match:
        return f"{sentence[:match.start()].rstrip()} {marker}{sentence[match.start():]}"
    return f"{sentence} {marker}"


def _default_splitter() -> Callable[[str], Sequence[str]]:
    return punkt_split


def parse_citations(answer: str, passage_ids: Sequence[str],
                    split: Callable[[str], Sequence[str]] | None = None) -> ParsedAnswer:
    """Split ``answer`` into sentences and map each ``[n]`` to ``passage_ids[n - 1]``.

    A citation repeated in one sentence counts once for that sentence; the same number in two sentences is two
    citations. ``split`` defaults to the Punkt splitter RePASs uses.
    """
    split = split or _default_splitter()
    raw = [s.strip() for s in split(answer or "") if s.strip()]
    sentences: list[str] = []
    for s in raw:
        lead = _LEADING_MARKERS.match(s)
        if lead and sentences:  # "... rule. [2] Next sentence": the marker closes the previous sentence
            sentences[-1] = f"{sentences[-1]} {lead.group(0).strip()}"
            s = s[lead.end():].strip()
            if not s:
                continue
        sentences.append(s)
    citations: list[Citation] = []
    for i, sentence in enumerate(sentences):
        for n in dict.fromkeys(numbers_in(sentence)):
            pid = passage_ids[n - 1] if 1 <= n <= len(passage_ids) else None
            citations.append(Citation(n, i, pid))
    claims = [strip_citations(s) for s in sentences]
    return ParsedAnswer(sentences, claims, citations)


def citation_records(parsed: ParsedAnswer) -> list[dict]:
    """The ``Citations`` field of an answer record: one object per citation (``n``, ``sentence``, ``ID``,
    ``valid``)."""
    return [c.as_dict() for c in parsed.citations]


def read_answers(path: str) -> list[dict[str, Any]]:
    """Load and validate the answer JSON (``.json``, or gzipped ``.json.gz`` as the benchmarks commit them); errors
    name the file, the record and the field."""
    raw = read_input_bytes(path)  # bounded: its size checked first; a device or an endless pipe refused
    try:
        data = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    except RecursionError:
        raise ValueError(f"{path}: not valid JSON (nested too deeply to read)") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of answer records, got {type(data).__name__}")
    seen = set()
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"{path}: record {i} is not an object")
        for key in REQUIRED_FIELDS:
            if key not in item:
                raise ValueError(f"{path}: record {i} (QuestionID {item.get('QuestionID')!r}) lacks field {key!r}")
        qid = str(item["QuestionID"])
        if qid in seen:
            raise ValueError(f"{path}: record {i}: duplicate QuestionID {qid!r}")
        seen.add(qid)
        answer, passages = item["Answer"], item["RetrievedPassages"]
        if answer is not None and not isinstance(answer, str):
            raise ValueError(f"{path}: record {i} (QuestionID {qid!r}): field 'Answer' must be a string or null")
        if not isinstance(passages, (str, list)) or (isinstance(passages, list)
                                                     and not all(isinstance(p, str) for p in passages)):
            raise ValueError(
                f"{path}: record {i} (QuestionID {qid!r}): field 'RetrievedPassages' must be a string or a list "
                "of strings"
            )
    return data


__all__ = ["CITATION_PATTERN", "NO_ANSWER", "REQUIRED_FIELDS", "Citation", "ParsedAnswer", "citation_records",
           "numbers_in", "parse_citations", "read_answers", "strip_citations"]
