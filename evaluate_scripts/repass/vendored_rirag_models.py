# Vendored for the RePASs evaluate metric from a shim of rirag.models by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""Stand-in for ``rirag.models`` in the vendored metric: no artifact table and no build commands (the
metric's own messages name its ``evaluate.load`` options and Hub ids)."""


def build_hint(path):
    return None
