"""The RePASs metric's Space (its entry point, ``app_file`` of the card): one answer and its passages in, the scores
out, as a Gradio app (and its HTTP API, ``/score``).

The metric is loaded by its script's own name, never by this folder's: on a Space the folder is ``app``, and
``evaluate.load(folder)`` would take ``app.py`` (this file) for the metric script. The app is built with today's
Gradio API (``gr.Interface``, no ``gr.inputs``): ``evaluate.utils.launch_gradio_widget`` needs Gradio 3, which no
longer starts on current Python (it imports ``pkg_resources``). Default models as ``evaluate.load`` gives them; the
Space's variables ``REPASS_NLI_MODEL``, ``REPASS_COVERAGE_MODEL`` and ``REPASS_OBLIGATION_MODEL`` replace them.
"""

import json
import os

import evaluate

HERE = os.path.dirname(os.path.abspath(__file__))
#: Space variables -> the ``evaluate.load`` option each sets (unset: the metric's default model).
MODEL_VARIABLES = {"REPASS_NLI_MODEL": "nli_model", "REPASS_COVERAGE_MODEL": "coverage_model",
                   "REPASS_OBLIGATION_MODEL": "obligation_model"}
#: The keys of the metric's result the app shows.
SHOWN = ("repass", "entailment", "contradiction", "obligation_coverage", "n_scored", "signature")


def load_metric():
    options = {option: os.environ[name] for name, option in MODEL_VARIABLES.items() if os.environ.get(name)}
    return evaluate.load(os.path.join(HERE, "repass.py"), show_progress=False, **options)


def passage_items(passages: str) -> list:
    """The passages of the Passages box: a JSON list of strings, or texts separated by a blank line (a passage's
    own line breaks, a rule's list items, keep it whole)."""
    text = (passages or "").strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(item, str) for item in items):
            return [item for item in items if item.strip()]
    blocks, block = [], []
    for line in text.splitlines():
        if line.strip():
            block.append(line.rstrip())
        elif block:
            blocks.append("\n".join(block))
            block = []
    return blocks + (["\n".join(block)] if block else [])


def score(metric, answer: str, passages: str) -> dict:
    """RePASs of one answer against its passages (:func:`passage_items`)."""
    results = metric.compute(predictions=[answer], passages=[passage_items(passages)])
    return {key: results[key] for key in SHOWN}


def build_app(metric):
    import gradio as gr

    return gr.Interface(
        fn=lambda answer, passages: json.dumps(score(metric, answer, passages), indent=2),
        inputs=[gr.Textbox(label="Answer", lines=3),
                gr.Textbox(label="Passages (separated by a blank line, or a JSON list)", lines=6)],
        outputs=gr.Code(label="RePASs", language="json"),
        title="RePASs", description=metric.info.description, api_name="score",
        examples=[["Firms must keep records for six years.",
                   "An Authorised Person must maintain records for at least six years."]],
        cache_examples=False)


if __name__ == "__main__":
    build_app(load_metric()).launch()
