"""Build ObliQA as ``datasets`` objects in the BEIR/MTEB shape, with a dataset card and a build report.

One folder per split scheme::

    OUT/original/      corpus/ (Dataset)  queries/ (DatasetDict)  qrels/ (DatasetDict)  README.md  build_report.json
    OUT/leakage-free/  the same, plus audit.json (the train/eval overlap audit)

Each scheme is written to a temporary folder and moved into place only when complete.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from rirag.constants import OFFLINE_ENCODER, SEED, SPLIT_FRACTIONS, VERSION
from rirag.data.obliqa import ObliQA, Passage, Question, load_obliqa
from rirag.data.splits import leakage_free_split, overlap_audit
from rirag.errors import DataError
from rirag.hub.cards import render_card
from rirag.hub.push import push_folder
from rirag.io import atomic_dir, atomic_write_json, atomic_write_text

logger = logging.getLogger(__name__)

SCHEMES = ("original", "leakage-free")


@dataclass
class BuildConfig:
    data: str | None = None
    out: str = "artifacts/datasets/obliqa"
    scheme: str = "all"  # original | leakage-free | all
    seed: int = SEED
    audit_embedder: str | None = "offline"  # a sentence-transformers name or path; "offline"; "none"
    push_to_hub: str | None = None


def corpus_dataset(obliqa: ObliQA):
    from datasets import Dataset

    corpus = obliqa.corpus
    return Dataset.from_dict({
        "_id": list(corpus),
        "title": [obliqa.title(p.document_id) for p in corpus.values()],
        "text": [p.text for p in corpus.values()],
        "document_id": [p.document_id for p in corpus.values()],
        "passage_id": [p.passage_id for p in corpus.values()],
    })


def queries_and_qrels(splits: dict[str, list[Question]]):
    from datasets import Dataset, DatasetDict, Features, Value

    query_features = Features({"_id": Value("string"), "text": Value("string"), "group": Value("int64")})
    qrel_features = Features({"query-id": Value("string"), "corpus-id": Value("string"), "score": Value("int64")})
    queries, qrels = DatasetDict(), DatasetDict()
    for name, questions in splits.items():
        queries[name] = Dataset.from_dict({
            "_id": [q.id for q in questions],
            "text": [q.text for q in questions],
            "group": [q.group for q in questions],
        }, features=query_features)
        rows = [(q.id, cid) for q in questions for cid in q.gold]
        qrels[name] = Dataset.from_dict({
            "query-id": [r[0] for r in rows], "corpus-id": [r[1] for r in rows], "score": [1] * len(rows),
        }, features=qrel_features)
    return queries, qrels


def save_beir(folder: Path, corpus, queries, qrels) -> None:
    """save_to_disk with one shard per split (an empty split then still loads) and no progress bars."""
    import datasets

    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        corpus.save_to_disk(str(folder / "corpus"), num_shards=1)
        queries.save_to_disk(str(folder / "queries"), num_shards={k: 1 for k in queries})
        qrels.save_to_disk(str(folder / "qrels"), num_shards={k: 1 for k in qrels})
    finally:
        if shown:
            datasets.enable_progress_bars()


def make_embedder(name: str | None):
    """A callable texts -> normalised embeddings, or None when no embedder is available (audit says so)."""
    if name in (None, "", "none"):
        return None, None
    from rirag.retrieval.encoder import load_encoder

    model_name = OFFLINE_ENCODER if name == "offline" else name
    try:
        model = load_encoder(model_name, max_seq_length=None)  # the model as saved, its own length
    except Exception as err:  # missing wheel, no network for a Hub id, bad path
        logger.warning("overlap audit: embedder %s unavailable (%s); the semantic check is skipped", model_name, err)
        return None, None

    def embed(texts):
        import numpy as np
        from tqdm.auto import tqdm

        texts = list(texts)
        step = 512  # one labelled bar per call instead of sentence-transformers' unlabelled 'Batches'
        parts = []
        with tqdm(total=len(texts), desc="overlap audit: embedding questions", unit="question") as bar:
            for start in range(0, len(texts), step):
                chunk = texts[start:start + step]
                parts.append(model.encode(chunk, batch_size=64, normalize_embeddings=True, show_progress_bar=False,
                                          convert_to_numpy=True))
                bar.update(len(chunk))
        return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    return embed, model_name


def _save(folder: Path, corpus, queries, qrels, card: str, report: dict) -> None:
    save_beir(folder, corpus, queries, qrels)
    atomic_write_text(folder / "README.md", card)
    atomic_write_json(folder / "build_report.json", report)


def build(config: BuildConfig, obliqa: ObliQA | None = None) -> dict:
    """Build the requested schemes; returns {scheme: {path, statistics, [audit]}}.

    ``obliqa`` (already loaded from ``config.data``) saves reading the files again.
    """
    schemes = SCHEMES if config.scheme == "all" else (config.scheme,)
    unknown = set(schemes) - set(SCHEMES)
    if unknown:
        raise ValueError(f"unknown scheme(s) {sorted(unknown)}; choose from {SCHEMES} or 'all'")
    obliqa = obliqa or load_obliqa(config.data)
    report = obliqa.report()
    corpus = corpus_dataset(obliqa)
    n_corpus = len(corpus)
    summary: dict = {}

    for scheme in schemes:
        target = Path(config.out) / scheme
        context = {"scheme": scheme, "source": config.data or "RegNLP/ObliQA", "version": VERSION,
                   "report": report, "seed": None, "audit": None}
        if scheme == "original":
            splits = dict(obliqa.splits)
            statistics = [{"split": name, "documents": len({d for q in qs for d in q.gold_documents}),
                           "questions": len(qs), "corpus_passages": n_corpus, "discarded": 0}
                          for name, qs in splits.items()]
            extra = {}
            context["description"] = ("The published ObliQA splits. Dev and test share gold passages (see "
                                      "DATA.md), so numbers on them are not leakage-free.")
        else:
            split = leakage_free_split(obliqa, config.seed)
            splits = split.questions
            discarded = split.discarded_multi_document + split.discarded_no_gold
            statistics = [row | {"discarded": ""} for row in split.statistics(n_corpus)]
            statistics.append({"split": "discarded", "documents": "", "questions": "", "corpus_passages": "",
                               "discarded": discarded})
            embed, model_name = make_embedder(config.audit_embedder)
            audit = overlap_audit(splits["train"], splits["validation"] + splits["test"], embedder=embed)
            if model_name:
                audit["semantic"]["model"] = model_name
            extra = {"audit": audit, "fingerprint": split.fingerprint(), "seed": config.seed,
                     "documents": split.documents, "discarded_multi_document": split.discarded_multi_document,
                     "discarded_no_gold": split.discarded_no_gold, "pooled_questions": split.pooled_questions}
            context.update(seed=config.seed, fractions="/".join(f"{f:.2f}" for f in SPLIT_FRACTIONS),
                           fingerprint=split.fingerprint(), audit=audit,
                           description=("The second seed paper's document-level re-split: all published "
                                        f"questions ({split.pooled_questions}) pooled, the "
                                        f"{sum(len(d) for d in split.documents.values())} documents shuffled "
                                        "under the seed and assigned 80/15/5 % to "
                                        "train/validation/test; a question is kept only when all its gold "
                                        "passages lie in one split's documents. The corpus is the whole corpus "
                                        f"for every split. Discarded: {split.discarded_multi_document} "
                                        "questions whose gold passages span several splits, "
                                        f"{split.discarded_no_gold} whose gold passages map to nothing."))
        queries, qrels = queries_and_qrels(splits)
        card = render_card("obliqa_dataset.md.j2", statistics=statistics, splits=list(splits), **context)
        with atomic_dir(target) as tmp:
            _save(tmp, corpus, queries, qrels, card, report | extra | {"statistics": statistics})
            if "audit" in extra:
                atomic_write_json(tmp / "audit.json", extra["audit"])
        logger.info("wrote %s", target)
        summary[scheme] = {"path": str(target), "statistics": statistics,
                           **({"audit": extra["audit"]} if extra else {})}
        if config.push_to_hub:
            push_to_hub(target, f"{config.push_to_hub}", scheme)
    return summary


def push_to_hub(folder: Path, repo_id: str, scheme: str) -> None:
    """Upload a built folder (arrow files + card) to a Hub dataset repo, one subfolder per scheme."""
    push_folder(folder, repo_id, "dataset", path_in_repo=scheme, commit_message=f"rirag data build: {scheme}")


# --------------------------------------------------------------------------------------------------
# Open Australian LegalQA (isaacus/open-australian-legal-qa): the out-of-domain transfer set
# --------------------------------------------------------------------------------------------------

AULQA_HUB_ID = "isaacus/open-australian-legal-qa"
AULQA_FILE = "qa.jsonl"
AULQA_FIELDS = ("question", "answer", "text", "source")
AULQA_TRAIN_FRACTION = 0.8


@dataclass
class AustralianBuildConfig:
    data: str | None = None  # a qa.jsonl, a folder holding one, or a Hub id (default: the isaacus dataset)
    out: str = "artifacts/datasets/open-australian-legal-qa"
    seed: int = SEED
    audit_embedder: str | None = "offline"
    push_to_hub: str | None = None


def read_australian_legalqa(data: str | None = None) -> list[dict]:
    """Records of qa.jsonl: {question, answer, text, prompt, source: {citation, ...}}, validated."""
    import json

    path = Path(data) if data else None
    if path is None or (not path.exists() and "/" in str(data) and not str(data).startswith((".", "/"))):
        from huggingface_hub import hf_hub_download

        try:
            path = Path(hf_hub_download(data or AULQA_HUB_ID, AULQA_FILE, repo_type="dataset"))
        except Exception as err:
            raise DataError(f"could not fetch {data or AULQA_HUB_ID} from the Hub ({err}); "
                            "pass a local qa.jsonl") from err
    if path.is_dir():
        path = path / AULQA_FILE
    if not path.exists():
        raise DataError(f"{path}: file not found")
    records = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: line {lineno}: malformed JSON ({err.msg}, column {err.colno})") from err
            for name in AULQA_FIELDS:
                if name not in rec:
                    raise DataError(f"{path}: line {lineno}: missing field {name!r}")
            if not isinstance(rec["source"], dict) or not rec["source"].get("citation"):
                raise DataError(f"{path}: line {lineno}: field 'source' must hold a 'citation'")
            records.append(rec)
    return records


def australian_splits(records: list[dict], seed: int = SEED, train_fraction: float = AULQA_TRAIN_FRACTION):
    """Drop duplicate questions, make one passage per distinct text, split 80/20 by citation group.

    Returns (corpus {id: Passage}, {"train": [Question], "test": [Question]}, stats).
    """
    import hashlib
    import random

    seen, kept = set(), []
    for rec in records:
        key = " ".join(rec["question"].split()).lower()
        if key not in seen:
            seen.add(key)
            kept.append(rec)
    citations = sorted({rec["source"]["citation"] for rec in kept})
    doc_index = {c: i for i, c in enumerate(citations)}
    corpus: dict[str, Passage] = {}
    for rec in kept:
        pid = hashlib.sha1(rec["text"].encode("utf-8")).hexdigest()[:16]
        corpus.setdefault(pid, Passage(pid, doc_index[rec["source"]["citation"]], rec["source"]["citation"],
                                       rec["text"]))
    shuffled = list(citations)
    random.Random(seed).shuffle(shuffled)
    train_groups = set(shuffled[: round(train_fraction * len(shuffled))])
    splits: dict[str, list[Question]] = {"train": [], "test": []}
    for rec in kept:
        pid = hashlib.sha1(rec["text"].encode("utf-8")).hexdigest()[:16]
        q = Question(f"aulqa-{hashlib.sha1(rec['question'].encode('utf-8')).hexdigest()[:12]}", rec["question"],
                     (pid,), None, (doc_index[rec["source"]["citation"]],))
        splits["train" if rec["source"]["citation"] in train_groups else "test"].append(q)
    stats = {"records": len(records), "duplicate_questions": len(records) - len(kept), "documents": len(citations),
             "corpus_passages": len(corpus), "train_groups": len(train_groups),
             "test_groups": len(citations) - len(train_groups)}
    return corpus, splits, stats


def build_australian(config: AustralianBuildConfig) -> dict:
    from datasets import Dataset

    corpus, splits, stats = australian_splits(read_australian_legalqa(config.data), config.seed)
    corpus_ds = Dataset.from_dict({
        "_id": list(corpus), "title": [p.passage_id for p in corpus.values()],
        "text": [p.text for p in corpus.values()], "citation": [p.passage_id for p in corpus.values()],
    })
    queries, qrels = queries_and_qrels(splits)
    embed, model_name = make_embedder(config.audit_embedder)
    audit = overlap_audit(splits["train"], splits["test"], embedder=embed)
    if model_name:
        audit["semantic"]["model"] = model_name
    statistics = [{"split": s, "documents": len({d for q in qs for d in q.gold_documents}), "questions": len(qs),
                   "corpus_passages": len(corpus), "discarded": stats["duplicate_questions"] if s == "train" else ""}
                  for s, qs in splits.items()]
    card = render_card("australian_legalqa_dataset.md.j2", statistics=statistics, splits=list(splits), stats=stats,
                       audit=audit, seed=config.seed, source=config.data or AULQA_HUB_ID, version=VERSION)
    target = Path(config.out)
    with atomic_dir(target) as tmp:
        _save(tmp, corpus_ds, queries, qrels, card, stats | {"statistics": statistics, "seed": config.seed})
        atomic_write_json(tmp / "audit.json", audit)
    if config.push_to_hub:
        push_to_hub(target, config.push_to_hub, "open-australian-legal-qa")
    return {"path": str(target), "statistics": statistics, "stats": stats, "audit": audit}


def save_raft_dataset(dataset, report: dict, folder: str, command: str = "") -> None:
    """Save a RAFT DatasetDict (:func:`rirag.generation.raft.build_raft_dataset`), its card (README.md) and
    ``raft_report.json`` into ``folder`` (atomically)."""
    import json

    example = next((r for r in dataset["train"] if r["has_oracle"]), None) if len(dataset["train"]) else None
    card = render_card("raft_dataset.md.j2", report=report, splits={k: len(v) for k, v in dataset.items()},
                       example=example, command=command)
    with atomic_dir(folder) as tmp:
        dataset.save_to_disk(str(tmp))
        (tmp / "README.md").write_text(card, encoding="utf-8")
        (tmp / "raft_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o755)

