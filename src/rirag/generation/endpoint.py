"""The OpenAI-compatible chat endpoint backend (vLLM, TGI, llama.cpp server, ``transformers serve``, hosted APIs).

Requests go through the ``openai`` client, which retries connection errors, timeouts, 429 and 5xx replies with
exponential backoff (honouring ``Retry-After``) up to ``max_retries`` times. A batch runs ``concurrency`` requests
at a time (a thread pool over one client). Before the first request the served models are listed once: a model
the server does not serve, or an address where no server answers, is a :class:`GenerationError` that says which
one. A reply that is not valid JSON, or not a chat completion, is a :class:`GenerationError` too; a completion
with no content is the empty string (the pipeline records it).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from rirag.generation.base import (
    ENDPOINT_API_KEY_ENV,
    ENDPOINT_CONCURRENCY,
    ENDPOINT_MAX_RETRIES,
    ENDPOINT_TIMEOUT_S,
    MAX_NEW_TOKENS,
    GenerationError,
    PromptedAnswerer,
)
from rirag.generation.prompts import Messages

logger = logging.getLogger(__name__)

#: Environment variable read for the base URL when none is passed.
ENDPOINT_URL_ENV = "OPENAI_BASE_URL"
#: API key sent when the environment has none (local servers accept any key).
NO_KEY = "EMPTY"


class EndpointGenerator(PromptedAnswerer):
    """Chat completions from ``model`` served at ``base_url`` (e.g. ``http://localhost:8000/v1``)."""

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = ENDPOINT_API_KEY_ENV,
                 concurrency: int = ENDPOINT_CONCURRENCY, timeout: float = ENDPOINT_TIMEOUT_S,
                 max_retries: int = ENDPOINT_MAX_RETRIES, max_new_tokens: int = MAX_NEW_TOKENS,
                 temperature: float = 0.0, check_model: bool = True):
        base_url = base_url or os.environ.get(ENDPOINT_URL_ENV)
        if not base_url:
            raise ValueError(f"generator 'endpoint' needs a base URL (--base-url or ${ENDPOINT_URL_ENV}), "
                             "e.g. http://localhost:8000/v1")
        if int(concurrency) < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.check_model = check_model
        self._client = None
        self._checked = False
        #: Completion tokens reported by the server so far (for tokens/s reports).
        self.generated_tokens = 0

    @property
    def name(self) -> str:
        return f"{self.model}@{self.base_url}"

    @property
    def client(self):
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.api_key_env)
            if not key:
                logger.debug("$%s is not set: sending a placeholder API key", self.api_key_env)
            self._client = OpenAI(base_url=self.base_url, api_key=key or NO_KEY, timeout=self.timeout,
                                  max_retries=self.max_retries)
        return self._client

    def _explain(self, err: Exception) -> GenerationError:
        import openai

        where = f"endpoint {self.base_url}"
        if isinstance(err, openai.APITimeoutError):
            return GenerationError(f"{where}: no reply within {self.timeout:g} s after {self.max_retries} retries")
        if isinstance(err, openai.APIConnectionError):
            return GenerationError(f"{where}: cannot connect ({err.__cause__ or err}); is the server running and "
                                   "the URL right (OpenAI-compatible servers usually end in /v1)?")
        if isinstance(err, openai.NotFoundError):
            return GenerationError(f"{where}: 404 Not Found for model {self.model!r}; check the URL (…/v1) and "
                                   f"the model name ({err})")
        if isinstance(err, openai.APIStatusError):
            return GenerationError(f"{where}: HTTP {err.status_code} for model {self.model!r}: {err.message}")
        if isinstance(err, (openai.APIResponseValidationError, ValueError)):
            return GenerationError(f"{where}: malformed reply (not an OpenAI chat completion): {err}")
        return GenerationError(f"{where}: {err.__class__.__name__}: {err}")

    def check(self) -> None:
        """List the served models once; raise if the server is unreachable or does not serve ``self.model``."""
        import openai

        if self._checked:
            return
        try:
            served = [m.id for m in self.client.models.list()]
        except openai.NotFoundError:  # some servers have no /models route: nothing to check
            logger.info("%s has no /models route; the model name is checked on the first request", self.base_url)
            served = None
        except Exception as err:  # noqa: BLE001 - every failure becomes one clear error
            raise self._explain(err) from err
        if served is not None and self.model not in served:
            raise GenerationError(f"endpoint {self.base_url} does not serve model {self.model!r}; it serves: "
                                  f"{', '.join(served) or '(none)'}")
        self._checked = True

    def _one(self, messages: Messages) -> str:
        try:
            reply = self.client.chat.completions.create(model=self.model, messages=messages,
                                                        max_tokens=self.max_new_tokens, temperature=self.temperature)
        except Exception as err:  # noqa: BLE001
            raise self._explain(err) from err
        choices = getattr(reply, "choices", None)
        if not isinstance(choices, list):
            raise GenerationError(f"endpoint {self.base_url}: malformed reply without 'choices': {str(reply)[:200]}")
        usage = getattr(reply, "usage", None)
        if usage is not None and getattr(usage, "completion_tokens", None):
            self.generated_tokens += int(usage.completion_tokens)
        if not choices or choices[0].message is None:
            return ""
        return (choices[0].message.content or "").strip()

    def generate(self, batch: Sequence[Messages]) -> list[str]:
        """One completion per conversation, ``concurrency`` requests in flight, results in input order."""
        if self.check_model:
            self.check()
        if len(batch) <= 1 or self.concurrency == 1:
            return [self._one(m) for m in batch]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batch))) as pool:
            return list(pool.map(self._one, batch))
