"""What a question asks for that its passages do not state: the focused answerer's "say what is missing".

A question's *parts* are found from its wording (:data:`PARTS`: examples, consequences, circumstances or criteria,
contents, timing, a threshold, who): each part has a cue in the question and a cue of evidence that a provision
states it. For each part the question asks and no unit of the given passages states, the answer can say so in one
plain sentence after its cited content, :func:`statement` ("The retrieved provisions do not state examples.").
The sentence is off by default (``FocusedConfig.say_missing``, ``--say-missing``): on the labelled set's held-out
block it is right 10 times in 14 (precision 0.714, recall 0.169), short of the 0.80 a default needs, and the
model-based decision tried in its place did no better (``benchmarks/missing_parts_eval.py``, docs/research.md
"The missing-part line, off by default"). The whole-answer flag (:data:`rirag.text.units.NOT_ADDRESSED`) is kept for
passages that do not match the question at all.

Deterministic and model-free: rules, not a learned model. The cues were written by reading draw ranks 100-249 of
the labelled set ``benchmarks/missing_parts/labels.jsonl`` and the unlabelled questions of its pool; its ranks 0-99
are the held-out report. The focused answerer checks its kept units, every given passage and every passage it cites,
so a sentence never denies what a retrieved or cited provision states, as far as the evidence cues read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

#: The opening of every missing-part sentence.
MISSING_PREFIX = "The retrieved provisions do not state"


@dataclass(frozen=True)
class Part:
    """One kind of thing a question may ask for: ``kind`` (the labelled set's kinds), ``name`` (how the sentence
    names it), ``cue`` (the question asks for it), ``evidence`` (a provision states it)."""

    kind: str
    name: str
    cue: re.Pattern
    evidence: re.Pattern


def _re(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


#: A count written in words, as periods are ("within twelve hours", "twenty-one days", "ninety days").
_COUNT = (r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ](?:one|two|three|four|five|six|seven|"
          r"eight|nine))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
          r"sixteen|seventeen|eighteen|nineteen|(?:a|one) hundred)")


#: The parts, in the order their sentences are written.
PARTS: tuple[Part, ...] = (
    Part("examples", "examples",
         _re(r"\b(?:examples?|case stud(?:y|ies)|illustrat\w*|templates?|checklists?|best practices|"
             r"scenarios?|types of|pitfalls|common (?:challenges|issues|mistakes|errors))\b"),
         _re(r"\b(?:for example|for instance|e\.g\.|such as|examples? (?:of|include)|illustrat\w*|"
             r"by way of example|include[sd]?:|including,? (?:but not limited to|without limitation))\b")),
    Part("consequences", "the consequences",
         _re(r"\b(?:consequences?|repercussions?|implications? (?:for|of)|penalt(?:y|ies)|sanctions?|"
             r"what (?:happens|would happen) (?:if|when|to)|outcomes? (?:of|for)|what (?:might|could|would|can) "
             r"(?:be )?the (?:outcome|result|impact)|what (?:enforcement )?actions? (?:can|could|may|might|will) the "
             r"(?:regulator|fsra|ADGM) take)\b"),
         _re(r"\b(?:penalt(?:y|ies)|sanction\w*|fines?|liable|liability|offence|disciplinary|enforcement action|"
             r"withdraw\w*|suspen\w*|revok\w*|cancel\w*|censure|contravention (?:of|will|may)|"
             r"(?:shall|must|will) (?:cease|no longer)|may challenge)\b")),
    Part("circumstances", "the criteria or circumstances",
         _re(r"\b(?:criteri(?:a|on)|under what (?:circumstances|conditions)|in what (?:circumstances|situations)|"
             r"what (?:circumstances|conditions|factors)|what (?:are the )?(?:standards|benchmarks) (?:used|for)|"
             r"under what condition|under which (?:circumstances|conditions)|(?:are there|is there) any "
             r"(?:circumstances|conditions|exceptions)|in which (?:circumstances|cases|situations))\b"),
         _re(r"\b(?:criteri(?:a|on)|factors?|(?:in|under) (?:the following|such|those|these|any of the) "
             r"(?:circumstances|cases|conditions)|circumstances (?:in which|where|include)|conditions? (?:are|include)|"
             r"in determining whether|when (?:assessing|determining|considering) whether|only (?:if|where|when)|unless|"
             r"will (?:consider|take into account)|takes? into account|if it (?:considers|is satisfied|appears))\b")),
    Part("contents", "what it must contain",
         _re(r"\b(?:what (?:information|details|particulars|specific information|elements|items)|"
             r"what (?:must|should|does|do|is) .{0,80}\b(?:include|contain|cover)|minimum (?:content|information)|"
             r"level of detail|what constitutes an? adequate|framework or toolkit|contents? of|"
             r"(?:key |specific |required )?elements (?:that )?(?:must|should|need to|are to) be included|"
             r"what (?:specific |additional )?(?:documentation|documents|records|disclosures?) (?:must|should|is|are|"
             r"would|does|do)|which (?:specific )?documents|key elements|what (?:are )?(?:these|the specific|the) "
             r"requirements|what (?:specific )?(?:\w+ ){0,2}controls)\b"),
         _re(r"\b(?:must (?:include|contain|set out|specify|state)|shall (?:include|contain|set out|specify)|"
             r"should (?:include|contain|set out|specify)|includes?:|the following (?:information|details|matters)|"
             r"details of|particulars of|information (?:on|about|regarding|relating to)|must be (?:given|provided|"
             r"disclosed|included)|disclose\w* (?:to (?:its |the )?\w+ )?that|contains? an? (?:prominent )?"
             r"(?:warning|statement)|an? statement (?:of|by|that)|the following:?\s*\(?a\)|including (?:where|how|"
             r"whether|the))\b")),
    Part("when", "when or how often",
         _re(r"\b(?:how (?:often|frequently|soon|quickly|long)|what (?:is the )?(?:expected )?(?:time ?frames?|"
             r"timelines?|deadlines?|frequency|time limits?|period)|within what (?:time ?frame|time|period)|by when|"
             r"at what (?:intervals?|point|stage)|(?:and|the|specific) (?:time ?frames?|timelines?|deadlines?|"
             r"frequency)|when (?:must|should|does|do|is) .{0,60}\b(?:commence|begin|start|expire|end|submitted|"
             r"notif\w*|report\w*))\b"),
         # a time relative to an event states when too ("before entering into the arrangement")
         _re(rf"\b(?:within (?:\d+|{_COUNT}|a reasonable)|before|prior to|in advance of|at the time|"
             r"no later than|annual\w*|quarterl\w*|monthly|weekly|daily|immediately|promptly|without delay|"
             r"at least (?:once|every)|each (?:year|quarter|month)|"
             rf"(?:\d+|{_COUNT}) (?:business |calendar |working |clear )?(?:hours?|days?|weeks?|months?|"
             r"years?)|as soon as)\b")),
    Part("threshold", "the threshold or amount",
         _re(r"\b(?:(?:what|which) (?:is (?:the )?)?thresholds?|thresholds? (?:for|of|at|above|below|that|which)|"
             r"how much|how many|what (?:level|amount|percentage|limit|minimum|maximum|size))\b"),
         _re(r"\d+(?:\.\d+)?\s*(?:%|per cent|percent|(?:business |calendar |working )?(?:days?|months?|years?|"
             r"hours?|weeks?)|times)|(?:USD|US\$|\$|AED)\s?\d|\d[\d,.]*\s*(?:USD|AED|million|billion)|"
             r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen|thirty|half|a third|a quarter)\b "
             r"(?:per cent|percent|(?:business |calendar |working )?(?:days?|months?|years?|hours?|weeks?)|times)")),
    Part("who", "who is responsible",
         _re(r"^\s*who\b|\bwho (?:is|are|must|should|may|can|will)\b|\bwhich (?:person|persons|body|bodies|"
             r"entity|entities|party|parties|individuals?)\b"),
         _re(r"\b(?:[A-Z][a-z]+ )?(?:Person|Officer|Manager|Board|Regulator|FSRA|Committee|Auditor|Director|"
             r"Trustee|Issuer|Institution|Entity|firm|governing body|senior management)s?\b")),
)


def asked_parts(question: str) -> list[Part]:
    """The parts the question asks for (by their cues), in :data:`PARTS` order."""
    return [p for p in PARTS if p.cue.search(question or "")]


def is_stated(part: Part, texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` (answer units) states ``part`` (has its evidence cue)."""
    return any(part.evidence.search(t) for t in texts)


def missing_parts(question: str, texts: Sequence[str]) -> list[Part]:
    """The parts the question asks for that none of ``texts`` states."""
    return [p for p in asked_parts(question) if not is_stated(p, texts)]


def statement(part: Part) -> str:
    """The sentence that says a part is missing."""
    return f"{MISSING_PREFIX} {part.name}."


def stated_kinds(answer: str | None) -> list[str]:
    """The kinds an answer's missing-part sentences name, in order."""
    return [p.kind for p in PARTS if statement(p) in (answer or "")]


def has_missing_statement(answer: str | None) -> bool:
    """Whether an answer says some part of the question is missing."""
    return MISSING_PREFIX + " " in (answer or "") and bool(stated_kinds(answer))
