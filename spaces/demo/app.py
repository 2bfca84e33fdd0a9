"""rirag demo (Gradio): ask a question about the ADGM rulebooks, get an answer citing ObliQA passages.

Usage:
    python spaces/demo/app.py                 # http://127.0.0.1:7860, offline defaults (BM25 + focused answer)
    RIRAG_DEMO_RETRIEVER=hybrid RIRAG_DEMO_MODEL=<namespace>/minilm-et-ct-obliqa python spaces/demo/app.py

Configuration: the environment variables in ``backend.ENV_VARIABLES`` (on a Space: its variables).
"""

from __future__ import annotations

import html
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # backend.py (and a vendored rirag/ on a Space)

from backend import Backend, QuestionError  # noqa: E402

logger = logging.getLogger(__name__)

TITLE = "rirag: ask the ADGM rulebooks"
INTRO = ("Type a compliance question about the Abu Dhabi Global Market rulebooks (ObliQA corpus). The answer cites "
         "the retrieved passages as [1], [2], …; each cited passage is listed with its document, passage id and "
         "retrieval score.")


def _text(text: str) -> str:
    """Any text that is not ours (generated answers, warnings, passages, error messages) as inert HTML text."""
    return html.escape(text, quote=True)


def _warning(message: str) -> str:
    return f'<div class="rirag-message" role="alert">⚠️ {_text(message)}</div>'


def followed(rows: list[dict]) -> str:
    """The "References followed" block: each cross-reference the answer followed, as ``rirag ask`` prints it
    ("Rule 9.5.2 -> [3] (referred to by [1])"); empty when none was."""
    if not rows:
        return ""
    lines = "<br>".join(f"{_text(str(r['reference']))} → [{int(r['target'])}] (referred to by [{int(r['source'])}])"
                        for r in rows)
    return f'<div class="rirag-followed"><b>References followed</b><br>{lines}</div>'


def render(result: dict) -> tuple[str, str, str]:
    """(answer, cited passages, what was used) as HTML for the page's HTML components.

    Generated text is shown as the text it is, never rendered as Markdown or HTML: an answer that contains
    ``![x](http://host/x.png)``, a link or a tag (from a prompt-injected passage or a hostile endpoint) is displayed
    literally, so the visitor's browser fetches nothing and follows nothing the generator wrote. The only markup
    is this function's own, around escaped text.
    """
    used = f"Retriever: <b>{_text(result['retriever'])}</b> · Generator: <b>{_text(result['generator'])}</b>"
    if result.get("warnings"):
        used += "<br><em>Notes: " + _text("; ".join(result["warnings"])) + "</em>"
    if result.get("message"):
        return _warning(result["message"]), "", used
    if result["answer"].strip():
        answer = f'<div class="rirag-answer" style="white-space: pre-wrap">{_text(result["answer"])}</div>'
    else:
        answer = "<p><em>The generator returned an empty answer.</em></p>"
    answer += followed(result.get("followed") or [])
    blocks = []
    for p in result["citations"]:
        snippet = " ".join(p["text"].split())
        blocks.append(
            f'<div class="rirag-passage" data-passage-id="{_text(p["id"])}">'
            f'<b>[{int(p["number"])}] {_text(p["title"])}</b> · passage <code>{_text(p["passage_id"])}</code>'
            f' · score {float(p["score"]):.3f}<br>{_text(snippet)}</div>')
    uncited = len(result["passages"]) - len(result["citations"])
    cited = "\n".join(blocks) or "<p><em>No passage is cited in this answer.</em></p>"
    if uncited:
        cited += f"\n<p><em>{uncited} more retrieved passage(s) not cited.</em></p>"
    return answer, cited, used


def build_app(backend: Backend | None = None):
    import gradio as gr

    backend = backend or Backend()

    def ask(question: str):
        try:
            return render(backend.answer(question))
        except QuestionError as err:
            return _warning(str(err)), "", ""
        except Exception as err:  # a model or data problem: say so in the page, keep the trace in the log
            logger.exception("answering failed")
            return _warning(f"The demo could not answer ({type(err).__name__}: {err})."), "", ""

    with gr.Blocks(title=TITLE) as app:
        gr.Markdown(f"# {TITLE}\n\n{INTRO}")
        question = gr.Textbox(label="Question", lines=3, elem_id="question",
                              placeholder="e.g. What records must a Relevant Person keep about customer due diligence?")
        button = gr.Button("Ask", variant="primary", elem_id="ask")
        gr.Examples(examples=[[q] for q in backend.examples()], inputs=[question], label="Questions from ObliQA")
        # HTML components fed only by render(): generated text arrives escaped and is never parsed as Markdown
        gr.Markdown("### Answer")
        answer = gr.HTML(elem_id="answer")
        gr.Markdown("### Cited passages")
        citations = gr.HTML(elem_id="citations")
        used = gr.HTML(elem_id="used")
        # one event for the button and the Enter key: one API endpoint, /ask (two listeners made /ask and /ask_1)
        gr.on(triggers=[button.click, question.submit], fn=ask, inputs=[question], outputs=[answer, citations, used],
              api_name="ask")
    return app


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    build_app(Backend().warm()).launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
