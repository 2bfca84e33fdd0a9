"""The focused answerer's passes after the selection, as one declared pipeline (issue 64, build point 4).

The selection (:meth:`~rirag.generation.focused.answerer.FocusedAnswerer.answer_many`) decides the cited rules and
the units that answer; each row of :data:`PASSES` then reshapes the answer, in order: follow the cited rules'
references (:mod:`~rirag.generation.focused.follow`), cite the retrieved rule that refers to a cited one
(:mod:`~rirag.generation.focused.referring`), quote each cited rule whole
(:mod:`~rirag.generation.focused.whole_rules`), quote a rule with its footnotes
(:mod:`~rirag.generation.focused.footnotes`), open each rule reached by a link with a line saying so
(:mod:`~rirag.generation.focused.connect`). A row names the
:class:`~rirag.generation.focused.config.FocusedConfig` switch that turns it on and whether it needs the corpus's
reference graph (and the passages' ids); a new pass is one module and one row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rirag.generation.base import AnswerRequest
from rirag.generation.focused.answer import FocusedAnswer, unsaid_where_cited
from rirag.generation.focused.connect import connected
from rirag.generation.focused.footnotes import with_footnotes
from rirag.generation.focused.paired import linked_set
from rirag.generation.focused.parts import answer_parts
from rirag.generation.focused.referring import add_referring
from rirag.generation.focused.whole_rules import whole_rules

#: What a pass reads of the answerer (:class:`~rirag.generation.focused.answerer.FocusedAnswerer`: its config, its
#: reference graph and corpus, its splitter, its following); typed loosely so that this table needs nothing above it.
FocusedAnswerer = Any


@dataclass(frozen=True)
class Pass:
    """One pass: its name, the config switch that turns it on, whether it needs the reference graph and the
    passages' ids, and what it does to one answer."""

    name: str
    switch: str
    needs_graph: bool
    run: Callable[[FocusedAnswerer, FocusedAnswer, AnswerRequest], FocusedAnswer]

    def applies(self, answerer: FocusedAnswerer, request: AnswerRequest) -> bool:
        """Whether the pass runs for ``request``: its switch is on, and the graph and ids are there if it needs them."""
        return bool(getattr(answerer.config, self.switch)) and (
            not self.needs_graph or (answerer.references is not None and request.ids is not None))


def _follow(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    return unsaid_where_cited(answerer.followed_notes(answer, answerer.follow(answer, request), request.passages))


def _referring(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    cfg = answerer.config
    return add_referring(answer, request.passages, request.ids, answerer.context_links(request.ids),
                         cfg.referring_min_score, cfg.referring_max_added)


def _whole(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    cfg = answerer.config
    return whole_rules(answer, request.passages, cfg.whole_rule_max_words, cfg.whole_answer_max_words,
                       answerer._split)


def _footnotes(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    cfg = answerer.config
    return with_footnotes(answer, request.passages, request.ids, answerer.references, answerer.corpus_texts or {},
                          cfg.whole_rule_max_words, cfg.whole_answer_max_words, answerer._split)


def _connect(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    return connected(answer)


def _parts(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    cfg = answerer.config
    return answer_parts(answer, answerer.encode, cfg.parts_margin, cfg.parts_max_added)


def _paired(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    return linked_set(answer)


#: The passes after the selection, in the order they run.
PASSES: tuple[Pass, ...] = (
    Pass("follow the cited rules' references", "follow_references", True, _follow),
    Pass("cite the retrieved rule referring to a cited one", "cite_referring", True, _referring),
    Pass("keep the lead's linked rules alone when it has one", "linked_only", False, _paired),
    Pass("quote the rule that answers each part of the question", "answer_parts", False, _parts),
    Pass("quote each cited rule whole", "whole_rules", False, _whole),
    Pass("quote a rule with its footnotes, a footnote with its rule", "footnotes", True, _footnotes),
    Pass("say in one line how a quoted rule connects to one quoted before it", "connect", False, _connect),
)


def run_passes(answerer: FocusedAnswerer, answer: FocusedAnswer, request: AnswerRequest) -> FocusedAnswer:
    """``answer`` through every pass of :data:`PASSES` that applies to ``request``, in order."""
    for step in PASSES:
        if step.applies(answerer, request):
            answer = step.run(answerer, answer, request)
    return answer
