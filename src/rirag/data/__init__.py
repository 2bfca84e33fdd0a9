"""Data: the ObliQA loader, splits, the run format, corpus ingestion."""
