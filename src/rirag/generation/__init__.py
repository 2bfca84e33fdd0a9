"""Grounded, cited answer generation: the answerer interface, its names and defaults (:mod:`.base`), the registry that
builds an answerer by name (:mod:`.registry`), prompts (:mod:`.prompts`), the backends (the :mod:`.focused` package with
its frozen scorer, :mod:`.extractive`, :mod:`.hf` transformers, :mod:`.endpoint`
OpenAI-compatible), the RAFT training instances (:mod:`.raft`), writing an answer out of its draft (:mod:`.render`), the
question -> cited answer pipeline (:mod:`.pipeline`) and the answers file's manifest and lock (:mod:`.runfiles`).
Citation markers are read and written by :mod:`rirag.text.citations`. Nothing is loaded at import time."""
