"""Citations ``[n]`` in answers (parse them, attach them to sentences, map them back to passage ids) and the
no-answer reply. Below the generation and scoring layers, which both write and read them; the answers file itself
is :mod:`rirag.data.answers`.


Accepted forms: ``[1]``, ``[1, 2]`` (also ``;`` as separator) and adjacent markers ``[1][3]``. Numbers are
1-based positions in the prompt's passage list. A number outside the list is kept as an *invalid* citation
(``passage_id`` is ``None``), never dropped. A marker at the very start of a sentence (``... rule. [2] Next``)
belongs to the previous sentence, as writers put it after the full stop. A marker inside a sentence, such as the
focused answerer's inline marker of a followed cross-reference (``... subject to Rule 9.5.2 [3], a firm must ...
[1].``), is a citation of the sentence holding it like any other: that sentence cites the followed passage and its
own, in the order written. Scorers that judge a sentence against each passage it cites (the NLI citation precision
of :mod:`rirag.scoring.attribution`) therefore judge the followed passage against the citing sentence too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from rirag.text.sentences import punkt_split

#: The reply when the passages do not settle the question (worked example 3; RAFT targets without the oracle);
#: re-exported by :mod:`rirag.generation.prompts`.
NO_ANSWER = "The provided passages do not answer this question."

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
    return placed_citation(sentence, number)[0]


def placed_citation(sentence: str, number: int | Sequence[int]) -> tuple[str, int]:
    """:func:`with_citation`'s text and the offset in it where the marker starts."""
    sentence = " ".join(sentence.split())
    marker = f"[{number}]" if isinstance(number, int) else "".join(f"[{n}]" for n in number)
    match = re.search(r"([.!?])[\"')\]]*$", sentence)
    if match:
        head = sentence[:match.start()].rstrip()
        return f"{head} {marker}{sentence[match.start():]}", len(head) + 1
    return f"{sentence} {marker}", len(sentence) + 1


def renumbered(text: str, numbers: Mapping[int, int], markers: Sequence[tuple[int, int]] | None = None) -> str:
    """``text`` with each cited number ``n`` written as ``numbers[n]`` (one not in ``numbers``, such as an invalid
    citation, as it was): how an answer is shown to a reader whose sources are numbered otherwise than the passages
    it was given. ``markers``: where the text's writer put its markers (offset, number), as
    :func:`placed_citations` reads them, so that a bracketed number quoted from a passage is left alone; without
    them, every marker :data:`CITATION_PATTERN` finds (a group ``[1; 3]`` is written ``[1, 3]``)."""
    if markers is None:
        return CITATION_PATTERN.sub(
            lambda m: "[" + ", ".join(str(numbers.get(n, n)) for n in numbers_in(m.group(0))) + "]", text)
    out, last = [], 0
    for at, n in sorted(markers):
        marker = f"[{n}]"
        if at >= last and text.startswith(marker, at):
            out += [text[last:at], f"[{numbers.get(n, n)}]"]
            last = at + len(marker)
    return "".join(out) + text[last:]


def _default_splitter() -> Callable[[str], Sequence[str]]:
    return punkt_split


def parse_citations(answer: str, passage_ids: Sequence[str],
                    split: Callable[[str], Sequence[str]] | None = None) -> ParsedAnswer:
    """Split ``answer`` into sentences and map each ``[n]`` to ``passage_ids[n - 1]``.

    A citation repeated in one sentence counts once for that sentence; the same number in two sentences is two
    citations. ``split`` defaults to the Punkt splitter RePASs uses.
    """
    sentences, _ = _sentences(answer, split)
    return _parsed(sentences, [numbers_in(s) for s in sentences], passage_ids)


def placed_citations(answer: str, markers: Sequence[tuple[int, int]], passage_ids: Sequence[str],
                     split: Callable[[str], Sequence[str]] | None = None) -> ParsedAnswer:
    """:func:`parse_citations` for a text whose markers the caller placed itself (``markers``: each cited number
    with the offset of its marker in ``answer``, in order): the sentences are split as :func:`parse_citations`
    splits them, and each number is attached to the sentence holding its marker (an inline marker: the sentence it
    sits in, as :func:`parse_citations` reads it); no marker is read from the text."""
    sentences, starts = _sentences(answer, split)
    numbers: list[list[int]] = [[] for _ in sentences]
    for offset, number in markers:
        held = [i for i, start in enumerate(starts) if start <= offset]
        if held:
            numbers[held[-1]].append(number)
    return _parsed(sentences, numbers, passage_ids)


def _sentences(answer: str, split: Callable[[str], Sequence[str]] | None) -> tuple[list[str], list[int]]:
    """The answer's sentences (a marker opening a sentence moved to the previous one, see the module) and the offset
    in ``answer`` where each starts (where the splitter's sentence is found, from the previous one on)."""
    split = split or _default_splitter()
    answer = answer or ""
    sentences: list[str] = []
    starts: list[int] = []
    cursor = 0
    for s in (s.strip() for s in split(answer)):
        if not s:
            continue
        found = answer.find(s, cursor)
        start = found if found >= 0 else cursor
        cursor = start + len(s) if found >= 0 else cursor
        lead = _LEADING_MARKERS.match(s)
        if lead and sentences:  # "... rule. [2] Next sentence": the marker closes the previous sentence
            sentences[-1] = f"{sentences[-1]} {lead.group(0).strip()}"
            rest = s[lead.end():]
            start += len(rest) - len(rest.lstrip()) + lead.end()
            s = rest.strip()
            if not s:
                continue
        sentences.append(s)
        starts.append(start)
    return sentences, starts


def _parsed(sentences: list[str], numbers: list[list[int]], passage_ids: Sequence[str]) -> ParsedAnswer:
    """The parsed answer of ``sentences`` whose i-th sentence cites ``numbers[i]`` (in order, repeats counted once
    per sentence)."""
    citations: list[Citation] = []
    for i, cited in enumerate(numbers):
        for n in dict.fromkeys(cited):
            pid = passage_ids[n - 1] if 1 <= n <= len(passage_ids) else None
            citations.append(Citation(n, i, pid))
    claims = [strip_citations(s) for s in sentences]
    return ParsedAnswer(sentences, claims, citations)


def citation_records(parsed: ParsedAnswer) -> list[dict]:
    """The ``Citations`` field of an answer record: one object per citation (``n``, ``sentence``, ``ID``,
    ``valid``)."""
    return [c.as_dict() for c in parsed.citations]


__all__ = ["CITATION_PATTERN", "NO_ANSWER", "Citation", "ParsedAnswer", "citation_records",
           "numbers_in", "parse_citations", "renumbered", "strip_citations"]
