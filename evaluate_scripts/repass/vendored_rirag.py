# Vendored for the RePASs evaluate metric from rirag by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""rirag: Regulatory Information Retrieval and Answer Generation.

Importing the package has no side effects: models and data load lazily where they are used.
"""

__version__ = "0.1.0"
