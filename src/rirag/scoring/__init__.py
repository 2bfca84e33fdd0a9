"""RePASs scoring: pure functions (:mod:`.core`), sentence splitting (:mod:`.sentences`), the batched scorer
(:mod:`.repass`), a reference-structured re-implementation (:mod:`.reference_impl`) and the answer-file
evaluation behind ``rirag evaluate answers`` (:mod:`.answers`). Nothing is loaded at import time."""
