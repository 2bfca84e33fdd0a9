"""A question's parts, read from its own structure: "how must it ..., and what ...?", "(i) ... (ii) ...".

A compliance question often asks two things at once: the notice step and what follows it, the rule and the date it
starts, who appoints and what they report. Each part is answered by its own rule, so the answerer checks each part
against the rules it quotes (:mod:`rirag.generation.focused.parts`). The split is read from the wording alone, with
no model: a question breaks before ``and`` when a question word follows it ("and what", "and how", "and which"), before
``, and`` when an auxiliary does (", and does it"), and before a later enumeration mark ("(ii)", "(b)", "(2)") of a
list the question opened ("(i)", "(a)", "(1)"). A piece shorter than :data:`MIN_PART_WORDS` words joins the one
before it; a question that does not break is one part.
"""

from __future__ import annotations

#: The words that open a new part after "and": question words ("and what ...", "and how ...").
QUESTION_WORDS = frozenset({"what", "how", "when", "which", "who", "whom", "whose", "whether", "where", "why"})
#: After ", and" also the auxiliaries a second question opens with (", and does it ...", ", and must the firm ...").
AUXILIARIES = frozenset({"does", "do", "is", "are", "can", "must", "should", "may", "will", "would", "could"})
#: Enumeration marks that open a later part, each with the mark that must open the list before it ("(ii)" only in a
#: question that has an "(i)" before it: "sections 20(1), (2) or (3)" is no list of parts).
LATER_MARKS = {"(ii)": "(i)", "(iii)": "(i)", "(iv)": "(i)", "(b)": "(a)", "(c)": "(a)", "(d)": "(a)",
               "(2)": "(1)", "(3)": "(1)", "(4)": "(1)"}
#: A piece shorter than this many words is no part of its own.
MIN_PART_WORDS = 4


def _word(token: str) -> str:
    return token.strip(",;:?!.()\"'’‘“”").lower()


def question_parts(question: str) -> list[str]:
    """The parts of ``question`` (see the module), each as written (without the joining "and"), in order."""
    words = question.split()
    cuts = []
    for i, token in enumerate(words):
        if token in LATER_MARKS and LATER_MARKS[token] in words[:i]:
            cuts.append((i, i))
        elif _word(token) == "and" and 0 < i and i + 1 < len(words) and words[i + 1][:1].islower():
            follower = _word(words[i + 1])
            if follower in QUESTION_WORDS or (follower in AUXILIARIES and words[i - 1].endswith(",")):
                cuts.append((i, i + 1))
    parts, start = [], 0
    for at, resume in cuts:
        piece = words[start:at]
        if len(piece) >= MIN_PART_WORDS:
            parts.append(piece)
            start = resume
    tail = words[start:]
    if parts and len(tail) < MIN_PART_WORDS:
        parts[-1] += words[start - (1 if start else 0):]
    elif tail:
        parts.append(tail)
    return [_trimmed(p) for p in parts if p]


def _trimmed(words: list[str]) -> str:
    """A part's words as text, without the "and" / "or" that joined it to the next one."""
    while words and _word(words[-1]) in ("and", "or"):
        words = words[:-1]
    return " ".join(words).strip(" ,;")
