"""RePASs scoring: pure functions (:mod:`.core`), the batched scorer (:mod:`.repass`) and its sequence classifiers
(:mod:`.classifier`), model loading (:mod:`.models`), the worker processes (:mod:`.workers`), the scorer's signature
(:mod:`.signature`), a reference-structured re-implementation (:mod:`.reference_impl`), the answer-file evaluation
behind ``rirag evaluate answers`` (:mod:`.answers`), the model-free answer metrics (:mod:`.answer_quality`), citation
attribution (:mod:`.attribution`) and the NLI judge's data and probes (:mod:`.nli_data`, :mod:`.nli_probe`); the
constants in :mod:`.constants`. Sentences are split by :mod:`rirag.text.sentences`. Nothing is loaded at import
time."""
