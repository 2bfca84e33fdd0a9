"""Question → declarative claim, by rules over six question types (when, why, who, where, does, how) and a fallback.

Entailment tuning (second seed paper, section 3.3) trains on ``<gold passage> entails that <claim>``: the claim is
the hypothesis the passage must support. The rules only need to turn the question into a statement that keeps its
content words; they do not need to be grammatical in every case, because most hypothesis tokens are masked anyway.

>>> question_to_claim("Who is responsible for filing the annual report?")
'The responsible party is responsible for filing the annual report.'
>>> question_to_claim("When must an Authorised Person notify the Regulator?")
'An Authorised Person must notify the Regulator at the specified time.'
"""

from __future__ import annotations

import re

QUESTION_TYPES = ("when", "why", "who", "where", "does", "how", "generic")

#: Auxiliaries that invert with the subject in a question ("must X do", "does X do").
AUXILIARIES = (
    "is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "must", "may", "might", "will",
    "would", "shall", "has", "have", "had",
)
_DO = {"do", "does", "did"}
#: Words that end a subject noun phrase in "AUX SUBJECT VERB ..." questions (a crude but predictable guess: the
#: subject runs up to the first word that is a common verb of the corpus or, failing that, is taken as 1-4 words).
_VERBS = {
    "be", "apply", "applies", "require", "requires", "required", "ensure", "notify", "provide", "submit", "report",
    "maintain", "comply", "include", "consider", "obtain", "take", "make", "use", "have", "keep", "do", "conduct",
    "establish", "assess", "determine", "disclose", "file", "seek", "demonstrate", "meet", "pay", "hold", "treat",
    "calculate", "prepare", "follow", "handle", "address", "manage", "approve", "exercise", "issue",
    "identify", "implement", "inform", "appoint", "deal", "document", "record", "retain", "allow", "permit",
    "need", "needs", "expect", "mean", "define", "refer", "affect", "impose", "exempt", "rely", "carry", "act",
    "become", "cease", "continue", "give", "grant", "register", "review", "verify", "monitor",
}
_PRONOUNS = {"it", "they", "this", "there", "he", "she", "we", "you", "i", "one", "someone", "anyone"}
_DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "its", "their", "any", "each", "every", "all",
                "such", "his", "her", "our", "your", "some", "no"}
_STOP = {"to", "for", "of", "in", "on", "at", "by", "with", "from", "under", "if", "when", "that", "and", "or"}
_CIRCUMSTANCES = re.compile(r"^(?:under|in) (?:what|which) (?:circumstances|cases|conditions|situations)\s+(.*)$", re.I)
_HOW_QUANTITY = re.compile(r"^how (many|much|long|often|soon|frequently)\b\s*(.*)$", re.I)


def _clean(question: str) -> str:
    q = re.sub(r"\s+", " ", question.strip())
    return q.rstrip(" ?.!").strip()


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;")
    if not text:
        return text
    return text[0].upper() + text[1:] + "."


def question_type(question: str) -> str:
    """One of :data:`QUESTION_TYPES`: the wh-word / auxiliary that opens the question (or its main clause)."""
    q = _clean(question).lower()
    _, head = _split_context(q)
    first = head.split(" ", 1)[0] if head else ""
    if first in ("when", "why", "who", "whom", "whose", "where", "how"):
        return {"whom": "who", "whose": "who"}.get(first, first)
    if first in AUXILIARIES:
        return "does"
    if _CIRCUMSTANCES.match(head):
        return "when"
    return "generic"


def _split_context(q: str) -> tuple[str, str]:
    """Split "In the context of X, how should ..." into ("In the context of X", "how should ...")."""
    m = re.search(r",\s*((?:when|why|who|whom|whose|where|how|" + "|".join(AUXILIARIES) + r")\b.*)$", q, re.I)
    if m and not re.match(r"^(when|why|who|whom|whose|where|how|what|which)\b", q, re.I):
        return q[: m.start()].strip(), m.group(1)
    return "", q


def _subject_length(body: list[str]) -> int:
    """Guess how many words of ``body`` form the subject noun phrase (pronoun, determiner + Capitalised run, ...)."""
    if not body:
        return 0
    if body[0].lower() in _PRONOUNS:
        return 1
    i = 1 if body[0].lower() in _DETERMINERS else 0
    if i < len(body) and body[i][:1].isupper():
        while i < len(body) and body[i][:1].isupper():
            i += 1
        return i
    j = i
    while j < len(body) and j < i + 3 and body[j].lower() not in _VERBS and body[j].lower() not in _STOP:
        j += 1
    return min(len(body), max(j, i + 1))


def _invert(rest: str) -> tuple[str, str]:
    """Undo subject-auxiliary inversion: "must a firm notify X" -> ("a firm", "must notify X") (best effort)."""
    words = rest.split(" ")
    if not words or words[0].lower() not in AUXILIARIES:
        return "", rest
    aux, body = words[0].lower(), words[1:]
    cut = _subject_length(body)
    subject, predicate = " ".join(body[:cut]), " ".join(body[cut:])
    return subject, f"{aux} {predicate}".strip()


def question_to_claim(question: str) -> str:
    """Rewrite a question into a declarative claim (see the module docstring)."""
    q = _clean(question)
    if not q:
        raise ValueError("cannot rewrite an empty question into a claim")
    context, head = _split_context(q)
    kind = question_type(q)
    words = head.split(" ", 1)
    rest = words[1] if len(words) > 1 else ""
    prefix = f"{context}, " if context else ""

    if kind == "who":
        # the wh-word is the subject: "who must approve X" -> "the responsible party must approve X"
        claim = f"the responsible party {rest}"
    elif kind == "when":
        m = _CIRCUMSTANCES.match(head)
        if m:
            subject, predicate = _invert(m.group(1))
            body = f"{subject} {predicate}" if subject else m.group(1)
            return _sentence(f"{prefix}{body} under the specified circumstances")
        subject, predicate = _invert(rest)
        claim = f"{subject} {predicate} at the specified time" if subject else f"{rest} at the specified time"
    elif kind == "where":
        subject, predicate = _invert(rest)
        claim = f"{subject} {predicate} in the specified place" if subject else f"{rest} in the specified place"
    elif kind == "why":
        subject, predicate = _invert(rest)
        claim = f"{subject} {predicate} for a stated reason" if subject else f"{rest} for a stated reason"
    elif kind == "how":
        m = _HOW_QUANTITY.match(head)
        if m:
            what, tail = m.group(1).lower(), m.group(2)
            subject, predicate = _invert(tail)
            body = f"{subject} {predicate}" if subject else tail
            claim = {"many": f"a specified number of {body}", "much": f"a specified amount of {body}",
                     "long": f"{body} for a specified period", "often": f"{body} at a specified frequency",
                     "frequently": f"{body} at a specified frequency", "soon": f"{body} within a specified time",
                     }[what]
        else:
            subject, predicate = _invert(rest)
            claim = f"{subject} {predicate} in the specified manner" if subject else f"{rest} in the specified manner"
    elif kind == "does":
        subject, predicate = _invert(head)
        claim = f"it is the case that {subject} {predicate}"
    else:
        claim = f"the rules state {_generic(head)}"
    return _sentence(prefix + claim)


def _generic(head: str) -> str:
    """Fallback: "what are the requirements for X" -> "the requirements for X"; otherwise the question as a clause."""
    m = re.match(r"^(what|which)\s+(is|are|was|were)\s+(.*)$", head, re.I)
    if m:
        return m.group(3)
    m = re.match(r"^(what|which)\s+(.*)$", head, re.I)
    if m:
        return f"which {m.group(2)}"
    return f"that {head[0].lower() + head[1:]}" if head else head
