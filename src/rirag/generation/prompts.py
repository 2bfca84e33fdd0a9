"""Every prompt text of rirag, in one place: the RIRAG system prompt, the four prompting strategies and the
worked examples. Generators, the RAFT builder and the benchmarks import from here; nothing else spells a prompt.

Strategies (:data:`STRATEGIES`):

* ``zero-shot``: system prompt + one user turn with the numbered passages and the question;
* ``few-shot``: the same, preceded by three worked examples (user/assistant turns) from *training* questions
  (ObliQA dev questions whose documents are in the leakage-free train split, so they are training questions under
  both protocols); the third shows the right reply when the passages do not answer the question;
* ``few-shot-cot``: the worked examples reason first with short quotes from the passages, then give a final line
  ``Answer: ...`` (:func:`final_answer` keeps what follows the last such line);
* ``closed-book``: the question alone, no passages (the control of the second seed paper).

Passages are numbered from 1 in retrieval order (``[1] text``, whitespace collapsed so that each passage is one
line) and answers cite them as ``[n]`` (:mod:`rirag.text.citations` parses the citations back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

# NO_ANSWER, the reply when the passages do not settle the question, is part of the answer record; re-exported here
from rirag.text.citations import NO_ANSWER

Messages = list[dict[str, str]]

ZERO_SHOT = "zero-shot"
FEW_SHOT = "few-shot"
FEW_SHOT_COT = "few-shot-cot"
CLOSED_BOOK = "closed-book"
#: The prompt a RAFT-tuned model was trained on (:func:`raft_messages`); its replies end in an ``Answer:`` line.
RAFT = "raft"
STRATEGIES = (ZERO_SHOT, FEW_SHOT, FEW_SHOT_COT, CLOSED_BOOK, RAFT)
#: Strategies whose prompt carries passages (the closed-book control carries none).
GROUNDED_STRATEGIES = (ZERO_SHOT, FEW_SHOT, FEW_SHOT_COT, RAFT)
#: Strategies whose reply reasons first and ends in an ``Answer:`` line (read back by :func:`final_answer`).
ANSWER_LINE_STRATEGIES = (FEW_SHOT_COT, RAFT)

#: The line that introduces the final answer in chain-of-thought replies.
ANSWER_PREFIX = "Answer:"

SYSTEM_PROMPT = (
    "You are a regulatory compliance assistant for the Abu Dhabi Global Market (ADGM) financial regulations. "
    "Answer the question using only the numbered passages you are given. State every obligation that the "
    "passages impose on the subject of the question (who must do what, and when), in the passages' own terms, "
    "and do not add requirements that the passages do not state. After each sentence, cite the passages that "
    "support it by number in square brackets, for example [1] or [2][3]. If the passages do not answer the "
    f'question, reply exactly: "{NO_ANSWER}"'
)

COT_INSTRUCTION = (
    "First reason briefly: quote the short phrases of the passages that matter, each with its citation. Then "
    f'write a last line that starts with "{ANSWER_PREFIX}" and gives the final answer only, with its citations.'
)

CLOSED_BOOK_SYSTEM_PROMPT = (
    "You are a regulatory compliance assistant for the Abu Dhabi Global Market (ADGM) financial regulations. "
    "Answer the question from your own knowledge: state the obligations that apply (who must do what, and when), "
    "concisely."
)

PASSAGES_HEADER = "Passages:"
QUESTION_HEADER = "Question:"
NO_PASSAGES = "(none)"

_PASSAGE_LINE = re.compile(r"^\[(\d+)\] (.*)$")


def normalise_whitespace(text: str) -> str:
    """One line: runs of whitespace (newlines, tabs) become one space."""
    return " ".join(text.split())


def format_passages(passages: Sequence[str]) -> str:
    """``[1] text`` lines, one per passage, numbered in the given (retrieval) order."""
    if not passages:
        return NO_PASSAGES
    return "\n".join(f"[{i}] {normalise_whitespace(p)}" for i, p in enumerate(passages, start=1))


def user_message(question: str, passages: Sequence[str]) -> str:
    """The grounded user turn: the numbered passages, then the question."""
    return f"{PASSAGES_HEADER}\n{format_passages(passages)}\n\n{QUESTION_HEADER} {normalise_whitespace(question)}"


def closed_book_message(question: str) -> str:
    return f"{QUESTION_HEADER} {normalise_whitespace(question)}"


@dataclass(frozen=True)
class WorkedExample:
    """A worked example from a training question: its passages (corpus ids and text), the reply, and the reply
    with reasoning (chain of thought) ending in an ``Answer:`` line."""

    question_id: str
    question: str
    passage_ids: tuple[str, ...]
    passages: tuple[str, ...]
    answer: str
    reasoning: str

    @property
    def cot_answer(self) -> str:
        return f"{self.reasoning}\n{ANSWER_PREFIX} {self.answer}"


#: Three worked examples. Questions and passages are verbatim ObliQA records (ObliQA_dev.json; their documents
#: are in the leakage-free train split); the replies were written for this prompt. The second passage list puts
#: the relevant passage second so that the example cites [2], not always [1]; the third has no relevant passage.
WORKED_EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        question_id="587ae582-17db-47b0-bb36-2d0d74af446d",
        question="What are the two options available for a PFP Operator to ensure the proper handling of Client "
                 "Assets according to the regulatory requirements?",
        passage_ids=("c7b94d0a-6bba-4233-9ffc-1dea6781ff47", "1f9be623-beeb-47b9-a34c-f30cd89860cc"),
        passages=(
            "The review and assessment undertaken for the purposes of Rule \u200e10.4.1 may be undertaken:\n"
            "(a)\tinternally by the Authorised Person or Recognised Body's internal audit function; or\n"
            "(b)\tby a competent firm of independent, external auditors or compliance professionals.",
            "A PFP Operator that holds Client Assets must:\n(a)\tengage the services of an Eligible Custodian; or\n"
            "(b)\tcomply with the Client Money Rules and Safe Custody Rules.",
        ),
        answer="A PFP Operator that holds Client Assets must either engage the services of an Eligible Custodian "
               "or comply with the Client Money Rules and Safe Custody Rules [2].",
        reasoning='Passage [2] says that "A PFP Operator that holds Client Assets must" either "engage the '
                  'services of an Eligible Custodian" or "comply with the Client Money Rules and Safe Custody '
                  'Rules" [2]. Passage [1] is about reviews under Rule 10.4.1, not Client Assets.',
    ),
    WorkedExample(
        question_id="93941067-9afa-44ea-95d8-22dcbb24285f",
        question="In the event of a discrepancy or dispute regarding title of securities, what procedures should "
                 "a CSD have in place to resolve such issues in compliance with regulatory standards?",
        passage_ids=("3f736b94-3c09-4810-9aa0-686ef4df6bf3",),
        passages=(
            "A CSD must have rules and procedures, including robust accounting practices and controls that:\n"
            "(a)\tensure the integrity of the securities issues;\n(b)\tensure it has a definitive record of title "
            "to relevant securities at all times; and\n(c)\tminimise and manage risks associated with the "
            "safekeeping and transfer of securities.",
        ),
        answer="A CSD must have rules and procedures, including robust accounting practices and controls, that "
               "ensure the integrity of the securities issues [1]. They must ensure that the CSD has a definitive "
               "record of title to relevant securities at all times [1]. They must also minimise and manage the "
               "risks associated with the safekeeping and transfer of securities [1].",
        reasoning='Passage [1] requires "rules and procedures, including robust accounting practices and '
                  'controls" that "ensure the integrity of the securities issues", "ensure it has a definitive '
                  'record of title to relevant securities at all times" and "minimise and manage risks" of '
                  'safekeeping and transfer [1].',
    ),
    WorkedExample(
        question_id="9385222d-f12b-45eb-adfa-a9ba2e6a4eb5",
        question="Are there any circumstances under which a Stabilisation Manager could transact in Relevant "
                 "Securities with a Stabilisation Agent while Price Stabilisation is being carried out?",
        passage_ids=("875f9ec4-26d0-4140-86b9-c642c46f8c18", "ff014b0f-8c97-46dd-86c1-11c1d8f578b4"),
        passages=(
            "An MTF shall report details of orders and transactions in Accepted Virtual Assets traded on its "
            "platform which are inputted, executed, or reported, through its systems.",
            "A Person making an Offer of Securities in relation to Units of a Fund is exempt from the requirements "
            "in Part 12 of the FSMR and the Rules made for the purposes of that Part which deal with Prospectuses.",
        ),
        answer=NO_ANSWER,
        reasoning="Passage [1] is about an MTF's reporting of orders and transactions in virtual assets, and passage "
                  "[2] about the prospectus exemption for Offers of Securities in Units of a Fund. Neither mentions "
                  "a Stabilisation Manager, a Stabilisation Agent or Price Stabilisation.",
    ),
)


def _example_turns(cot: bool) -> Messages:
    turns: Messages = []
    for ex in WORKED_EXAMPLES:
        turns.append({"role": "user", "content": user_message(ex.question, ex.passages)})
        turns.append({"role": "assistant", "content": ex.cot_answer if cot else ex.answer})
    return turns


def build_messages(question: str, passages: Sequence[str], strategy: str = ZERO_SHOT) -> Messages:
    """The chat messages of one question under ``strategy`` (passages in retrieval order; ignored closed-book)."""
    if strategy == CLOSED_BOOK:
        return [{"role": "system", "content": CLOSED_BOOK_SYSTEM_PROMPT},
                {"role": "user", "content": closed_book_message(question)}]
    if strategy == ZERO_SHOT:
        return [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_message(question, passages)}]
    if strategy == FEW_SHOT:
        return [{"role": "system", "content": SYSTEM_PROMPT}, *_example_turns(cot=False),
                {"role": "user", "content": user_message(question, passages)}]
    if strategy == FEW_SHOT_COT:
        return [{"role": "system", "content": f"{SYSTEM_PROMPT} {COT_INSTRUCTION}"}, *_example_turns(cot=True),
                {"role": "user", "content": user_message(question, passages)}]
    if strategy == RAFT:
        return raft_messages(question, passages)
    raise ValueError(f"unknown prompting strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def final_answer(text: str, strategy: str = ZERO_SHOT) -> tuple[str, bool]:
    """The answer part of a generated reply, and whether it was found as the strategy expects.

    For ``few-shot-cot`` and ``raft`` this is what follows the last line starting with ``Answer:``; a reply without such
    a line is returned whole (stripped) with ``False`` so the caller can record the fallback. Other strategies return
    the stripped text and ``True``.
    """
    text = (text or "").strip()
    if strategy not in ANSWER_LINE_STRATEGIES:
        return text, True
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if line.lower().startswith(ANSWER_PREFIX.lower()):
            rest = "\n".join([line[len(ANSWER_PREFIX):].strip(), *lines[i + 1:]]).strip()
            return rest, True
    return text, False


def passages_from_messages(messages: Messages) -> list[str]:
    """The numbered passages of the last user turn, in order (the inverse of :func:`user_message`).

    Raises ``ValueError`` when the last user turn carries no passage block (e.g. a closed-book prompt).
    """
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        raise ValueError("the messages have no user turn")
    content = users[-1].get("content") or ""
    head, sep, rest = content.partition(f"{PASSAGES_HEADER}\n")
    if not sep:
        raise ValueError("the last user turn has no passages (closed-book prompt?)")
    block = rest.split(f"\n\n{QUESTION_HEADER}", 1)[0]
    if block.strip() == NO_PASSAGES:
        return []
    passages = []
    for line in block.split("\n"):
        match = _PASSAGE_LINE.match(line)
        if not match or int(match.group(1)) != len(passages) + 1:
            raise ValueError(f"malformed passage line {line[:60]!r} in the user turn")
        passages.append(match.group(2))
    return passages


# --------------------------------------------------------------------------------------------------
# RAFT (retrieval-aware fine-tuning, rirag.generation.raft): the prompt is the zero-shot one with the
# chain-of-thought instruction; the target quotes its evidence, then gives the final line "Answer: ..." (the
# few-shot-cot reply format, so final_answer(text, FEW_SHOT_COT) reads it back).
# --------------------------------------------------------------------------------------------------

#: One line of a RAFT target's evidence: a short quote of a passage.
RAFT_QUOTE = 'Passage [{number}] says: "{quote}"'
#: The evidence part of a RAFT target whose context lacks the oracle passages (its answer is NO_ANSWER).
RAFT_NO_ORACLE_REASONING = "None of the passages states what the question asks about, so they do not settle it."
#: Added to the system prompt of an endpoint teacher: which passages answer (the oracle), which are distractors.
RAFT_TEACHER_HINT = ("For this reply you are told that passage(s) {numbers} answer the question; the other passages "
                     "are distractors and must not be cited. Quote the oracle passages' obligations exhaustively.")


def cot_reply(reasoning: str, answer: str) -> str:
    """A chain-of-thought reply: the reasoning, then the final ``Answer:`` line."""
    return f"{reasoning}\n{ANSWER_PREFIX} {answer}"


def raft_messages(question: str, passages: Sequence[str]) -> Messages:
    """The RAFT prompt (training and inference): the system prompt with the chain-of-thought instruction, then the
    numbered passages and the question; no worked examples."""
    return [{"role": "system", "content": f"{SYSTEM_PROMPT} {COT_INSTRUCTION}"},
            {"role": "user", "content": user_message(question, passages)}]


def raft_teacher_messages(question: str, passages: Sequence[str], oracle_numbers: Sequence[int]) -> Messages:
    """The RAFT prompt for a teacher model, told which passages are the oracle."""
    messages = raft_messages(question, passages)
    hint = RAFT_TEACHER_HINT.format(numbers=", ".join(f"[{n}]" for n in oracle_numbers))
    messages[0] = {"role": "system", "content": f"{messages[0]['content']} {hint}"}
    return messages


def raft_no_oracle_reply() -> str:
    """The RAFT target when the oracle is withheld: the passages do not settle the question."""
    return cot_reply(RAFT_NO_ORACLE_REASONING, NO_ANSWER)
