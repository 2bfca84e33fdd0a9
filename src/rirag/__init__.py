"""rirag: Regulatory Information Retrieval and Answer Generation.

Importing the package has no side effects: models and data load lazily where they are used.
"""

__version__ = "0.1.0"
