"""The demo Space: its engine on a tiny corpus, and the page driven in headless Chromium as a person would use it.

The browser tests need Debian's ``chromium`` and ``chromedriver`` (installed by .ci/run) plus selenium and gradio;
without them they are skipped and say which is missing. ``RIRAG_DEMO_SCREENSHOT=docs/demo.png`` makes the
real-data test save its screenshot there (the committed one was made so).
"""

from __future__ import annotations

import html.parser
import http.server
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spaces" / "demo"))

from backend import MAX_QUESTION_CHARS, Backend, DemoSettings, QuestionError, check_question  # noqa: E402

from _scoring_fixtures import bag_of_words  # noqa: E402
from rirag.data.obliqa import Passage  # noqa: E402
from rirag.retrieval.defaults import FALLBACK_RETRIEVER  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1200,1300")

TITLES = {1: "Anti Money Laundering Rulebook (AML)", 2: "Fund Rules (FUNDS)"}
PASSAGES = [
    (1, "3.1.1", "A Relevant Person must keep records of customer due diligence for at least six years. Records must "
                 "be available to the Regulator on request."),
    (1, "3.1.2", "An Authorised Person must appoint a Money Laundering Reporting Officer."),
    (2, "5.2", "A Fund Manager must ensure that the Fund's assets are held by an Eligible Custodian."),
    (2, "5.3", "The Eligible Custodian must keep the Fund Property separate from its own assets."),
]


def must_or_shall(sentences):
    """A tiny stand-in obligation classifier for the extractive composer."""
    return [(" must " in s or " shall " in s) for s in sentences]


def tiny_backend(generator=None) -> Backend:
    from rirag.generation.extractive import ExtractiveComposer
    from rirag.retrieval.bm25 import passage_index

    generator = generator or ExtractiveComposer(is_obligation=must_or_shall)
    corpus = {f"p{i}": Passage(f"p{i}", d, pid, t) for i, (d, pid, t) in enumerate(PASSAGES)}
    return Backend(DemoSettings(top_k=3, generator="extractive", generator_model="must/shall rule"), corpus=corpus,
                   title=TITLES.__getitem__, examples=["Who must keep records of customer due diligence?"],
                   retriever=passage_index(corpus), generator=generator)


# -- the engine ------------------------------------------------------------------------------------


def test_answer_cites_retrieved_passages_with_title_id_and_score():
    result = tiny_backend().answer("  How long must customer due diligence records be kept?  ")
    top = result["passages"][0]
    assert (top["title"], top["passage_id"], top["number"]) == (TITLES[1], "3.1.1", 1)
    assert [p["score"] for p in result["passages"]] == sorted((p["score"] for p in result["passages"]), reverse=True)
    assert "[1]" in result["answer"] and result["citations"][0]["passage_id"] == "3.1.1"
    assert result["answer"].startswith("A Relevant Person must keep records")  # an obligation sentence, cited
    assert all(f"[{c['number']}]" in result["answer"] for c in result["citations"])
    assert result["retriever"] == "bm25" and result["generator"] == "extractive (must/shall rule)"


def test_an_injected_generator_writes_the_answer_and_its_citations_are_checked():
    from rirag.generation.base import PromptedAnswerer

    class Echo(PromptedAnswerer):  # a language model: its replies are parsed once into drafts
        def generate(self, batch):
            return ["Records are kept six years [1]. See also [9]."]  # [9] names no passage

    out = tiny_backend(Echo()).answer("customer due diligence records")
    assert out["answer"].startswith("Records are kept") and [c["number"] for c in out["citations"]] == [1]
    assert any("outside the passage list" in w for w in out["warnings"])


def test_the_answer_and_its_sources_are_numbered_as_shown_without_gaps():
    """An answer citing the 3rd and the 1st passage given is shown citing [1] and [2], its sources listed as [1] and
    [2] (not [3] and [1], which skipped [2])."""
    from app import render

    from rirag.generation.base import PromptedAnswerer

    class Echo(PromptedAnswerer):
        def generate(self, batch):
            return ["Custody is separate [3]. Records are kept [1]."]

    out = tiny_backend(Echo()).answer("customer due diligence records Eligible Custodian")
    assert out["answer"] == "Custody is separate [1]. Records are kept [2]."
    assert [c["number"] for c in out["citations"]] == [1, 2]
    assert sorted(p["number"] for p in out["passages"]) == [1, 2, 3]
    _, cited, _ = render(out)
    assert cited.index("<b>[1] ") < cited.index("<b>[2] ") and "<b>[3] " not in cited


@pytest.mark.parametrize("question, message", [("", "question box is empty"), ("   \n", "question box is empty"),
                                               ("x" * 20_000, "20,000 characters long")])
def test_bad_questions_get_a_readable_message(question, message):
    with pytest.raises(QuestionError, match=message):
        check_question(question)
    assert check_question("q" * MAX_QUESTION_CHARS) == "q" * MAX_QUESTION_CHARS


def test_a_question_with_no_indexed_word_says_so():
    result = tiny_backend().answer("the of and")
    assert result["passages"] == [] and "No passage matches" in result["message"]


def test_settings_come_from_the_environment():
    s = DemoSettings.from_env({"RIRAG_DEMO_RETRIEVER": "hybrid", "RIRAG_DEMO_MODEL": "org/enc",
                               "RIRAG_DEMO_RETRIEVER_OPTIONS": "alpha=0.2, depth=50", "RIRAG_DEMO_TOP_K": "7"})
    assert (s.retriever, s.model, s.options, s.top_k) == ("hybrid", "org/enc", {"alpha": "0.2", "depth": "50"}, 7)
    assert s.retriever_label() == "hybrid (org/enc) [alpha=0.2, depth=50]"
    assert DemoSettings.from_env({}).retriever == FALLBACK_RETRIEVER  # no CV table here (conftest)
    with pytest.raises(ValueError, match="RIRAG_DEMO_TOP_K"):
        DemoSettings.from_env({"RIRAG_DEMO_TOP_K": "many"})
    with pytest.raises(ValueError, match="key=value"):
        DemoSettings.from_env({"RIRAG_DEMO_RETRIEVER_OPTIONS": "alpha"})


class _OneRule:
    """A stand-in retriever that finds one passage, whatever is asked."""

    def __init__(self, pid: str):
        self.pid = pid

    def search(self, queries, k=10, show_progress=False):
        return {qid: {self.pid: 1.0} for qid in queries}


def following_backend() -> Backend:
    """The demo over the rules of tests/test_follow.py: the retrieved rule refers to Rule 9.5.2, which answers the
    question too; a focused answerer following references (the stand-in encoder), the graph given to the backend."""
    from rirag.generation.focused import FocusedAnswerer, FocusedConfig
    from test_follow import PASSAGES as RULES
    from test_follow import graph

    corpus = {pid: Passage(pid, 1, number, text) for pid, (number, text) in RULES.items()}
    generator = FocusedAnswerer(encode=bag_of_words, is_obligation=lambda texts: [True] * len(texts),
                                config=FocusedConfig(follow_references=True, follow_ratio=0.3,
                                                     follow_scope="corpus"))
    return Backend(DemoSettings(top_k=1, generator="focused", follow_references=True), corpus=corpus,
                   title={1: "General Rulebook (GEN)"}.__getitem__, examples=["q"], retriever=_OneRule("p-951"),
                   generator=generator, references=graph())


def test_a_followed_reference_is_cited_inline_and_listed():
    from app import render

    from rirag.text.citations import CITATION_PATTERN

    result = following_backend().answer("Within how many business days must an Authorised Person notify the "
                                        "Regulator in writing of a breach of its capital requirements?")
    assert result["followed"] == [{"source": 1, "reference": "Rule 9.5.2", "target": 2, "target_id": "p-952"}]
    assert "subject to Rule 9.5.2 [2]" in result["answer"]  # the followed rule's marker right after the reference
    assert [(c["number"], c["id"], c["passage_id"]) for c in result["citations"]] == [(1, "p-951", "9.5.1"),
                                                                                       (2, "p-952", "9.5.2")]
    assert all(1 <= int(m) <= len(result["passages"]) for m in CITATION_PATTERN.findall(result["answer"]))
    assert result["generator"] == "focused, following cross-references"
    answer, cited, _ = render(result)
    assert "References followed" in answer and "Rule 9.5.2 → [2] (referred to by [1])" in html.unescape(answer)
    assert "[2] General Rulebook (GEN)" in cited
    plain, _, _ = render(tiny_backend().answer("customer due diligence records"))
    assert "References followed" not in plain


def test_following_references_is_a_setting_on_by_default_as_in_the_command(tmp_path):
    from conftest import write_tiny_obliqa

    assert DemoSettings.from_env({}).follow_references is True  # as `rirag ask`
    assert DemoSettings().follow_references is True
    assert DemoSettings.from_env({}).answer_options().generator.options["follow_references"] is True
    off = DemoSettings.from_env({"RIRAG_DEMO_FOLLOW_REFERENCES": "false"})
    assert "follow_references" not in off.answer_options().generator.options  # off: as a spec without it
    on = DemoSettings.from_env({"RIRAG_DEMO_FOLLOW_REFERENCES": "True"})
    assert on.answer_options().generator.options["follow_references"] is True
    extractive = DemoSettings.from_env({"RIRAG_DEMO_FOLLOW_REFERENCES": "1", "RIRAG_DEMO_GENERATOR": "extractive"})
    assert "follow_references" not in extractive.answer_options().generator.options  # the focused generator's only
    with pytest.raises(ValueError, match="RIRAG_DEMO_FOLLOW_REFERENCES"):
        DemoSettings.from_env({"RIRAG_DEMO_FOLLOW_REFERENCES": "sometimes"})
    root = write_tiny_obliqa(tmp_path / "obliqa")  # the data loaded: the graph is the corpus's, as `rirag ask` reads it
    backend = Backend(DemoSettings(retriever="bm25", data=str(root), follow_references=True))
    generator = backend.session.open().generator  # builds the generator (rirag's session); no model loads
    assert generator.config.follow_references and generator.references.root == root
    off = Backend(DemoSettings(retriever="bm25", data=str(root), follow_references=False))
    generator = off.session.open().generator
    assert generator.config.follow_references is False and generator.references is None


def _hostile_answer(base: str) -> str:
    """What a prompt-injected passage or a hostile endpoint could make a generator write."""
    return (f"Records are kept six years [1]. ![tracker]({base}/image.png) See [the rules]({base}/link) "
            f"<img src=\"{base}/raw.png\"> <a href=\"{base}/raw-link\">raw</a> {base}/bare and [9]\n"
            f"**bold** <script>alert(1)</script>")


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_generated_text_is_rendered_as_text_not_markup():
    from app import render

    base = "http://tracker.invalid"
    result = tiny_backend().answer("customer due diligence records")
    result["answer"] = _hostile_answer(base)
    result["warnings"] = ["a warning quoting ![w](http://tracker.invalid/w.png)"]
    result["followed"] = [{"source": 1, "reference": f"<img src=\"{base}/ref.png\">", "target": 2, "target_id": "x"}]
    for part in render(result):
        parser = _Tags()
        parser.feed(part)
        assert {tag for tag, _ in parser.tags} <= {"div", "b", "code", "br", "em", "p"}, part
        assert all(not str(v).startswith("http") for _, attrs in parser.tags for v in attrs.values()), part
    answer = html.unescape(render(result)[0])
    assert "![tracker](http://tracker.invalid/image.png)" in answer and "<script>alert(1)</script>" in answer
    assert f'<img src="{base}/ref.png"> → [2]' in answer  # a followed reference's text, shown as text


# -- the page in a real browser ----------------------------------------------------------------------


def _browser_missing() -> str | None:
    import importlib.util

    for module in ("selenium", "gradio"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[dev]')"
    if not CHROMIUM or not CHROMEDRIVER:
        return ("no headless browser: Debian's chromium and chromium-driver are not installed "
                "(apt-get install chromium chromium-driver; .ci/run does this where apt is available)")
    return None


needs_browser = pytest.mark.skipif(_browser_missing() is not None, reason=_browser_missing() or "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DemoPage:
    """The app served on a free localhost port and one headless Chromium on it."""

    def __init__(self, backend: Backend):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
        from app import build_app

        self.backend = backend
        self.app = build_app(backend)
        self.port = _free_port()
        self.app.launch(server_name="127.0.0.1", server_port=self.port, prevent_thread_lock=True, quiet=True)
        self.profile = tempfile.mkdtemp(prefix="rirag-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS + (f"--user-data-dir={self.profile}",):
            options.add_argument(flag)
        try:
            self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        except Exception:
            self.app.close()
            raise
        self.driver.get(f"http://127.0.0.1:{self.port}/")
        self.wait_for(lambda d: d.find_elements("css selector", "#question textarea"))

    def wait_for(self, condition, timeout=180):  # generous: the shared 2-core machine can be very slow
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(condition)

    def ask(self, question: str, type_it: bool = True) -> None:
        from selenium.webdriver.common.keys import Keys

        box = self.driver.find_element("css selector", "#question textarea")
        box.send_keys(Keys.CONTROL, "a")  # empty the box as a person does (clear() fires no input event)
        box.send_keys(Keys.BACKSPACE)
        if type_it:
            box.send_keys(question)
        else:  # a long paste: set the value and fire the input event the page listens to
            self.driver.execute_script("arguments[0].value = arguments[1];"
                                       "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
                                       box, question)
        self.driver.find_element("css selector", "#ask").click()

    def text(self, elem_id: str) -> str:
        return self.driver.find_element("css selector", f"#{elem_id}").text

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            self.app.close()
            shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def page():
    page = DemoPage(tiny_backend())
    yield page
    page.close()


@needs_browser
def test_a_person_asks_and_gets_a_cited_answer(page, tmp_path):
    page.ask("Who must keep records of customer due diligence?")
    page.wait_for(lambda d: "[1]" in page.text("answer"))
    assert "A Relevant Person must keep records of customer due diligence" in page.text("answer")
    passages = page.driver.find_elements("css selector", "#citations .rirag-passage")
    assert passages, "at least one cited passage is shown"
    first = " ".join(passages[0].text.split())
    assert first.startswith(f"[1] {TITLES[1]}") and "passage 3.1.1" in first and "score " in first
    assert "Retriever: bm25" in page.text("used") and "Generator: extractive (must/shall rule)" in page.text("used")
    assert page.driver.save_screenshot(str(tmp_path / "demo.png"))


@needs_browser
@pytest.mark.parametrize("question, message, type_it", [
    ("", "question box is empty", True),
    ("What must a firm keep? " * 870, "characters long; the demo accepts at most 2,000", False),
])
def test_bad_input_gives_a_readable_message_in_the_page(page, question, message, type_it):
    page.ask(question, type_it=type_it)
    page.wait_for(lambda d: message in page.text("answer"))
    assert "Traceback" not in page.driver.page_source and page.text("citations") == ""
    assert page.driver.find_elements("css selector", "#answer .rirag-message")


@needs_browser
@pytest.mark.slow
def test_the_demo_on_real_obliqa_with_its_offline_defaults(real_data_dir):
    """The whole corpus, BM25 and the focused answer, as `python spaces/demo/app.py` runs it (with the trained
    obligation classifier when artifacts/ has it, else the tiny must/shall rule in the extractive composer)."""
    from rirag.generation.extractive import ExtractiveComposer

    trained = REPO / "artifacts" / "obligation_classifier"
    if (trained / "config.json").exists():
        backend = Backend(DemoSettings(data=str(real_data_dir), generator_model=os.path.relpath(trained)))
    else:
        backend = Backend(DemoSettings(data=str(real_data_dir), generator_model="must/shall rule"),
                          generator=ExtractiveComposer(is_obligation=must_or_shall))
    backend.warm()  # corpus, BM25 index, classifier: minutes on a loaded 2-core machine, before the page
    page = DemoPage(backend)
    try:
        example = backend.examples()[0][:40]  # the examples are ObliQA questions
        page.wait_for(lambda d: example in d.find_element("css selector", "body").text)
        question = "What records must a Relevant Person keep about its customer due diligence?"
        page.ask(question)
        page.wait_for(lambda d: d.find_elements("css selector", "#citations .rirag-passage"))
        shown = page.driver.find_elements("css selector", "#citations .rirag-passage")
        first = " ".join(shown[0].text.split())
        assert "[1]" in page.text("answer") and " · passage " in first and " · score " in first
        target = os.environ.get("RIRAG_DEMO_SCREENSHOT")
        if target:
            page.driver.set_window_size(1200, 1500)  # the whole answer, its passages and the models used
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            assert page.driver.save_screenshot(str(target))
    finally:
        page.close()


class _RecordingServer:
    """A local web server that records every request made to it (the host a hostile answer points at)."""

    def __init__(self):
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                requests.append(self.path)
                body = b"<html><body>tracked</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@needs_browser
def test_a_hostile_answer_makes_the_browser_fetch_nothing(page):
    server = _RecordingServer()

    from rirag.generation.base import PromptedAnswerer

    class Hostile(PromptedAnswerer):
        def generate(self, batch):
            return [_hostile_answer(server.base)]

    saved = page.backend.session.generator
    page.backend.session.generator = Hostile()
    try:
        urllib_check = __import__("urllib.request").request.urlopen(server.base + "/probe", timeout=10).read()
        assert urllib_check and server.requests == ["/probe"]  # the server records what reaches it
        server.requests.clear()
        page.ask("Who must keep records of customer due diligence?")
        page.wait_for(lambda d: "Records are kept six years" in page.text("answer"))
        deadline = time.monotonic() + 3  # an image or a prefetch would be requested as soon as it is in the page
        while time.monotonic() < deadline and not server.requests:
            time.sleep(0.2)
        assert server.requests == [], f"the page fetched {server.requests} from the hostile host"
        shown = page.text("answer")
        assert f"![tracker]({server.base}/image.png)" in shown  # shown as the text it is
        assert not page.driver.find_elements("css selector", "#answer img, #answer a, #answer script")
        links = [a.get_attribute("href") or "" for a in page.driver.find_elements("css selector", "a")]
        assert not [h for h in links if h.startswith(server.base)]
        fetched = page.driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.startsWith(arguments[0]))",
            server.base)
        assert fetched == []
    finally:
        page.backend.session.generator = saved
        server.close()


def test_the_api_exposes_the_one_function_once():
    """Issue 68, item 7: the button and the Enter key are one event, one endpoint (were /ask and /ask_1)."""
    pytest.importorskip("gradio")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from app import build_app

    info = build_app(tiny_backend()).get_api_info()
    assert list(info["named_endpoints"]) == ["/ask"] and not info.get("unnamed_endpoints"), info
