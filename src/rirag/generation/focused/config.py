"""The focused answerer's options (:class:`FocusedConfig`) and its user switches.

A field of :class:`FocusedConfig` whose metadata holds a :class:`Switch` under :data:`SWITCH` is a switch of the
command (``rirag ask`` / ``answer`` / ``submit``) and of the generator spec: its flag is generated from the field
(``rirag.cli.options.add_switches`` over :func:`switch_fields`), and the spec and the run manifest carry it only
when it is on (:func:`switches_on`), so answers written before a switch existed keep their spec and manifest. A
switch may be on by default in the commands and the demo (:attr:`Switch.default`, :func:`command_defaults`); the
field's default stays off, so a spec without it still means off. Adding a switch is adding one field.

This module imports nothing heavy: the command builds its flags from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

#: The metadata key of a field that is a user switch.
SWITCH = "switch"


@dataclass(frozen=True)
class Switch:
    """A boolean :class:`FocusedConfig` field that the user turns on or off: its command-line ``flag``, the flag's
    ``help`` (prefixed with the generator's name), whether the generator spec and the run manifest record it
    (``recorded``: when it is on; it changes what the answers say) and whether the commands and the demo start with
    it on (``default``; then ``--no-<flag>`` turns it off). The field's own default stays False: a spec or manifest
    without the switch (written before it existed, or with it off) means off, whatever the commands' default."""

    flag: str
    help: str
    recorded: bool = True
    default: bool = False

    @property
    def off_flag(self) -> str:
        """The flag that turns a switch that is on by default off (``--no-follow-references``)."""
        return "--no-" + self.flag.removeprefix("--")


@dataclass
class FocusedConfig:
    """Selection options (defaults: the frozen scorer's, chosen on validation questions outside the benchmark
    sample; never on a test split)."""

    max_words: int | None = field(default=None, metadata={
        "help": "Word budget of an answer (the first unit always fits unless longer than max_unit_words; default: "
                "the scorer's)."})
    max_unit_words: int = field(default=300, metadata={"help": "A unit longer than this is never used (a list "
                                                               "that long is not an answer; its passage is cited "
                                                               "through a shorter unit or not at all)."})
    keep_ratio: float | None = field(default=None, metadata={
        "help": "Keep a unit while its score is at least this share of the best unit's (default: the scorer's)."})
    min_score: float | None = field(default=None, metadata={
        "help": "Never keep a unit scoring below this (default: the scorer's)."})
    answerable_threshold: float | None = field(default=None, metadata={
        "help": "Below this answerability the answer opens with NOT_ADDRESSED (default: the scorer's)."})
    passage_gate: bool | None = field(default=None, metadata={
        "help": "Decide the cited passages first (see the module); default: when the scorer or passage_margin sets "
                "a gate. False: units of any passage compete on score alone."})
    passage_weight: float | None = field(default=None, metadata={
        "help": "Weight of a passage's best unit score in its passage score (added to its normalised retrieval "
                "score; default: the scorer's)."})
    passage_margin: float | None = field(default=None, metadata={
        "help": "Cite every passage whose passage score is within this of the best passage's (default: the "
                "scorer's; unset in both: no passage gate)."})
    max_passages: int | None = field(default=None, metadata={
        "help": "With the passage gate: cite at most this many passages (default: the scorer's)."})
    dedup_min_ratio: float = field(default=90.0, metadata={"help": "rapidfuzz ratio of near-duplicate units."})
    extra_unit_words: int | None = field(default=None, metadata={
        "help": "With the passage gate: a passage other than the best one is cited through its best unit of at "
                "most this many words (default: the scorer's; unset in both: no cap)."})
    passage_min_score: float | None = field(default=None, metadata={
        "help": "With the passage gate: a passage other than the best one is cited only when its best unit scores "
                "at least this (it bears on the question; default: the scorer's; unset in both: 0)."})
    fallback_units: bool = field(default=True, metadata={
        "help": "With the passage gate: cite a passage other than the best one through a lower-scoring unit when its "
                "best unit does not fit the budget or the cap. Off, such sentences (chosen for their length) and "
                "their passages are left out; measured both ways in docs/research.md, on by default."})
    say_missing: bool = field(default=False, metadata={
        "help": "After the cited content, one sentence for each part of the question that no given or cited "
                "passage states (rirag.text.missing_parts).",
        SWITCH: Switch("--say-missing", "after the cited content, say which part the question asks for (when, "
                       "examples, consequences, criteria, contents, an amount, who) no retrieved provision states; off "
                       "by default: right 10 times in 14 on held-out labelled questions, short of 0.80 "
                       "(benchmarks/results/missing_parts.json)")})
    cite_duplicates: bool = field(default=True, metadata={
        "help": "Cite every passage holding a near-duplicate of a kept unit (the same rule in two rulebooks) "
                "together with it, in one sentence: '... [2][4].'"})
    note_rules: bool = field(default=True, metadata={
        "help": "A kept unit that is only a source note ('[Note: Art. 109 of the CRD]') is quoted through its "
                "passage's rule instead, cut to the words the bound leaves "
                "(rirag.generation.focused.selection.rules_for_notes); the passages cited are unchanged."})
    antecedents: bool = field(default=True, metadata={
        "help": "A kept unit that opens by pointing back ('This includes ...', 'However, ...') is quoted with the "
                "sentence before it in its passage when both fit the bound "
                "(rirag.generation.focused.selection.with_antecedents); the passages cited are unchanged."})
    # -- citing the given rule that refers to a cited one (rirag.generation.focused.referring) --
    cite_referring: bool = field(default=False, metadata={
        "help": "Cite, before a cited rule, a retrieved rule that refers to it and bears on the question "
                "(referring_min_score; at most referring_max_added) (rirag.generation.focused.referring).",
        SWITCH: Switch("--cite-referring", "when a retrieved rule refers to a cited one and bears on the question, "
                       "cite it too, before the rule it refers to (the graph of `rirag data xref`); on by default "
                       "(docs/research.md, issue 64)", default=True)})
    referring_min_score: float = field(default=0.01, metadata={
        "help": "With cite_referring: the referring rule's best unit must score at least this (chosen on the PRA "
                "development questions and the ObliQA validation sample: every gold rule added scored 0.014 or more, "
                "13 of the 16 non-gold rules added on ObliQA scored below 0.01; docs/research.md)."})
    referring_max_added: int = field(default=2, metadata={
        "help": "With cite_referring: at most this many referring rules are added to an answer."})
    # -- a rule with its footnotes, a footnote with its rule (rirag.generation.focused.footnotes) --
    footnotes: bool = field(default=False, metadata={
        "help": "Quote each cited rule's footnotes after it and each cited footnote's rule before it, from the "
                "corpus when not retrieved (rirag.generation.focused.footnotes; an ingested page's footnote marks "
                "and the graph of `rirag data xref`).",
        SWITCH: Switch("--footnotes", "quote a cited rule's footnotes with it and a cited footnote's rule with it, "
                       "from the whole rulebook (footnote marks kept by `rirag data ingest`, resolved by `rirag data "
                       "xref`); on by default (docs/research.md, issue 64)", default=True)})
    # -- quoting each cited rule whole (rirag.generation.focused.whole_rules) --
    whole_rules: bool = field(default=False, metadata={
        "help": "Quote each cited rule whole (every unit, in the rule's order) when it has at most "
                "whole_rule_max_words words and the answer stays within whole_answer_max_words; a longer rule keeps "
                "the units the selection chose, in the rule's order (rirag.generation.focused.whole_rules).",
        SWITCH: Switch("--whole-rules", "quote each cited rule whole (its conditions, items and exceptions) where it "
                       "is short enough to read as one, a longer one through the parts that answer; on by default "
                       "(docs/research.md, issue 64)", default=True)})
    whole_rule_max_words: int = field(default=250, metadata={
        "help": "With whole_rules: a cited rule of at most this many words is quoted whole."})
    linked_only: bool = field(default=False, metadata={
        "help": "An answer whose lead rule is quoted with a rule it is linked to (followed, referring) keeps that "
                "linked set alone (rirag.generation.focused.paired).",
        SWITCH: Switch("--linked-only", "when the lead rule is quoted with a rule it refers to or that refers to "
                       "it, leave out the other cited rules, linked to neither (graders marked such rules down as "
                       "padding); on by default (docs/research.md, issue 64)", default=True)})
    answer_parts: bool = field(default=False, metadata={
        "help": "For a question of several parts (\"..., and what ...\"), quote the context's unit closest to each "
                "part that no cited rule answers within parts_margin (rirag.generation.focused.parts).",
        SWITCH: Switch("--answer-parts", "read the question's parts from its wording and quote, for a part no cited "
                       "rule answers, the rule of the context that does")})
    parts_margin: float = field(default=0.05, metadata={
        "help": "With answer_parts: a part counts as answered when a cited rule's unit is within this cosine of the "
                "context's closest unit to it."})
    parts_max_added: int = field(default=1, metadata={
        "help": "With answer_parts: at most this many units added to an answer."})
    connect: bool = field(default=False, metadata={
        "help": "Open the quote of each rule that a followed link joins to a rule quoted before it with one line "
                "saying how, from the reference as written (rirag.generation.focused.connect).",
        SWITCH: Switch("--connect", "open a quoted rule that a quoted rule refers to (or that refers to one, or a "
                       "footnote) with one line saying so, in the reference's own words; on by default "
                       "(docs/research.md, issue 64)", default=True)})
    whole_max_passages: int = field(default=3, metadata={
        "help": "With whole_rules: the passage gate cites at most this many passages, each now quoted whole "
                "(unless max_passages is given); a rule a cited one refers to, or that refers to one, may add to "
                "them."})
    whole_answer_max_words: int = field(default=400, metadata={
        "help": "With whole_rules: rules are quoted whole, the lead first, while the answer stays within this many "
                "words."})
    # -- following cross-references (rirag.generation.focused.follow; needs the passages' ids and a reference graph) --
    follow_references: bool = field(default=False, metadata={
        "help": "Cite, after a kept unit, the best unit of a rule its passage refers to, when that rule is among "
                "the passages retrieved for the question (follow_scope), its best unit clears the answerer's floor "
                "(min_score, and follow_ratio of the lead unit) and fits the budget "
                "(rirag.generation.focused.follow).",
        SWITCH: Switch("--follow-references", "when a cited passage refers to another rule of the corpus whose "
                       "best unit answers the question too, cite that unit as well (the graph of `rirag data xref` "
                       "when written, else resolved on the fly); on by default since it measured better on the PRA "
                       "development questions (both rules cited 0.4125 -> 0.5625) at a small cost in precision "
                       "(benchmarks/results/passage_set_answers.json)", default=True)})
    follow_ratio: float = field(default=0.0, metadata={
        "help": "A followed rule's best unit must score at least this share of the lead unit's score (0: the "
                "answerer's min_score alone; on the top-10 context any ratio from 0.25 up followed nothing on PRA "
                "or ObliQA-MP, benchmarks/follow_references.py)."})
    follow_scope: str = field(default="retrieved", metadata={
        "help": "Which rules a reference may lead to: 'retrieved' (the passages given for the question: the link "
                "and the retrieval both say it bears on it) or 'corpus' (any passage of the corpus, added after "
                "the given ones)."})
    follow_max_targets: int = field(default=5, metadata={
        "help": "A reference resolving to more passages than this (a whole chapter) is not followed."})
    # -- the passage-set decision (rirag.generation.focused.passage_set) --
    passage_set: bool = field(default=False, metadata={
        "help": "Decide the cited passages as a set (rirag.generation.focused.passage_set): the lead passage, then "
                "every passage the learned decision says the question needs (it adds a part of the question the "
                "lead does not state, sits beside it in the rulebook, or is linked to it by a cross-reference), "
                "instead of the gate's margin. Each decided passage is quoted through a unit of at most "
                "extra_unit_words (cut to it when longer), and adds that many words to the answer's bound.",
        SWITCH: Switch("--passage-set", "cite every passage the question needs, decided as a set by a model "
                       "learned on questions with several gold passages (rirag.generation.focused.passage_set)")})
    passage_set_threshold: float | None = field(default=None, metadata={
        "help": "With passage_set: cite a passage other than the lead when its probability reaches this (default: "
                "the decision file's)."})
    passage_set_file: str | None = field(default=None, metadata={
        "help": "With passage_set: the decision file (default: rirag/generation/focused/passage_set.json)."})
    # -- focusing long lists on the items the question asks about (focus_lists) --
    focus_lists: bool = field(default=False, metadata={
        "help": "Quote a kept list unit longer than focus_list_min_words with at least 3 top-level items as its "
                "lead-in and only the items that bear on the question, an elision mark where items are left out "
                "(focus_lists).",
        SWITCH: Switch("--focus-lists", "quote a long list as its lead-in and only the items that bear on the "
                       "question, '[…]' where items are left out (off by default until its RePASs is measured; "
                       "docs/cli.md)")})
    focus_list_min_words: int = field(default=60, metadata={
        "help": "With focus_lists: a list unit of at most this many words is quoted whole."})
    focus_list_margin: float = field(default=0.1, metadata={
        "help": "With focus_lists: keep the items whose cosine with the question is within this of the best "
                "item's; keeping all items, or all but one, quotes the whole list."})
    follow_in_unit: bool = field(default=False, metadata={
        "help": "Follow only references written inside the kept unit's quoted text (else any of its passage's). "
                "Ratio 0, any reference of the passage, retrieved targets: the setting chosen on PRA development "
                "questions and ObliQA-MP validation together (benchmarks/follow_references.py)."})


#: The switch fields of :class:`FocusedConfig`, in field order (the order of their flags, spec and manifest entries).
SWITCHES: tuple[str, ...] = tuple(f.name for f in fields(FocusedConfig) if SWITCH in f.metadata)


def switch_fields(config: type = FocusedConfig) -> list[tuple[str, Switch]]:
    """Each switch of ``config``'s fields, ``(field name, Switch)``, in field order: what the command turns into
    flags (``rirag.cli.options.add_switches``)."""
    return [(f.name, f.metadata[SWITCH]) for f in fields(config) if SWITCH in f.metadata]


def command_defaults(config: type = FocusedConfig) -> dict[str, bool]:
    """Each switch of ``config`` as the commands and the demo start: on where :attr:`Switch.default` says so."""
    return {name: switch.default for name, switch in switch_fields(config)}


def switches_on(options: Any, config: type = FocusedConfig) -> dict[str, bool]:
    """The recorded switches of ``config`` that ``options`` (an object holding them as attributes: the parsed
    arguments; or a dict) turns on, as the spec and the manifest carry them: only those that are on."""
    get = options.get if isinstance(options, dict) else (lambda name, default: getattr(options, name, default))
    return {f.name: True for f in fields(config)
            if SWITCH in f.metadata and f.metadata[SWITCH].recorded and get(f.name, False)}
