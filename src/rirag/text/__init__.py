"""Text: sentences, answer units, the answer record and its citations, missing parts, claims, cross-references."""
