"""rirag demo (Gradio): ask a question about the ADGM rulebooks, get an answer citing ObliQA passages.

Usage:
    python spaces/demo/app.py                 # http://127.0.0.1:7860, offline defaults (BM25 + extractive answer)
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
         "retrieval score (normalised per question, as the RIRAG score filter that picks the passages uses it).")


def _warning(message: str) -> str:
    return f'<div class="rirag-message" role="alert">⚠️ {html.escape(message)}</div>'


def render(result: dict) -> tuple[str, str, str]:
    """(answer, cited passages, what was used) as Markdown/HTML for the page."""
    used = f"Retriever: **{result['retriever']}** · Generator: **{result['generator']}**"
    if result.get("warnings"):
        used += "  \n_Notes: " + html.escape("; ".join(result["warnings"])) + "_"
    if result.get("message"):
        return _warning(result["message"]), "", used
    answer = html.escape(result["answer"]) or "_The generator returned an empty answer._"
    blocks = []
    for p in result["citations"]:
        snippet = " ".join(p["text"].split())
        blocks.append(
            f'<div class="rirag-passage" data-passage-id="{html.escape(p["id"])}">'
            f'<b>[{p["number"]}] {html.escape(p["title"])}</b> · passage <code>{html.escape(p["passage_id"])}</code>'
            f' · score {p["score"]:.3f}<br>{html.escape(snippet)}</div>')
    uncited = len(result["passages"]) - len(result["citations"])
    cited = "\n".join(blocks) or "_No passage is cited in this answer._"
    if uncited:
        cited += f"\n\n_{uncited} more retrieved passage(s) not cited._"
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
        gr.Markdown("### Answer")
        answer = gr.Markdown(elem_id="answer")
        gr.Markdown("### Cited passages")
        citations = gr.Markdown(elem_id="citations")
        used = gr.Markdown(elem_id="used")
        button.click(ask, inputs=[question], outputs=[answer, citations, used])
        question.submit(ask, inputs=[question], outputs=[answer, citations, used])
    return app


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    build_app(Backend().warm()).launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
