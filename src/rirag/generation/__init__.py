"""Grounded, cited answer generation: prompts (:mod:`.prompts`), citation parsing (:mod:`.citations`), the generator
interface and registry (:mod:`.base`), backends (:mod:`.hf` transformers, :mod:`.endpoint` OpenAI-compatible,
:mod:`.extractive`) and the question → cited answer pipeline (:mod:`.pipeline`). Nothing is loaded at import time."""
