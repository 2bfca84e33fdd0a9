"""Gradio widget for the RePASs metric (Hugging Face Spaces entry point). Needs ``gradio`` installed."""

import os

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(os.path.dirname(os.path.abspath(__file__)))
launch_gradio_widget(module)
