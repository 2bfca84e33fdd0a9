"""An in-domain NLI probe from regulatory sentences: seeded (premise, hypothesis, label) triples of four types.

For a sentence ``s`` of an ObliQA passage that carries a deontic modal (*must*, *may*, *shall*):

* ``identity``: ``s`` vs. ``s`` -> entailment;
* ``paraphrase``: ``s`` vs. a light paraphrase (a leading or trailing condition clause moved to the other end, words
  from :data:`SYNONYMS` swapped) -> entailment;
* ``negation``: ``s`` vs. ``s`` with its first modal flipped (must <-> must not, may <-> may not,
  shall <-> shall not) -> contradiction;
* ``unrelated``: ``s`` vs. a sentence from another document -> neutral.

The probe is drawn only from documents of the leakage-free ``validation`` and ``test`` splits; in-domain training
triples (same rules) only from the ``train`` split's documents, so the probe measures generalisation to unseen
documents (:func:`build_probe_splits`).
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Mapping

logger = logging.getLogger(__name__)

PROBE_TYPES = ("identity", "paraphrase", "negation", "unrelated")
PROBE_LABELS = {"identity": "entailment", "paraphrase": "entailment", "negation": "contradiction",
                "unrelated": "neutral"}
#: Candidate sentence length in words (shorter ones are headings, longer ones run-on lists).
MIN_WORDS, MAX_WORDS = 8, 60
_MODAL = re.compile(r"\b(must|may|shall)\b(\s+not\b)?")
#: Words before the modal that make a plain flip ambiguous ("No person may ..." -> "No person may not ...").
_NEGATORS = re.compile(r"\b(no|not|never|neither|nor|none|nothing|cannot|nobody)\b", re.IGNORECASE)
_SKIP = re.compile(r"as the case may be|\bmay\b\s+(?:be|have)\s+(?:been\s+)?(?:possible|likely)", re.IGNORECASE)
#: Meaning-preserving substitutions (regulatory register -> plain); keys are matched as whole words, lower case.
SYNONYMS: dict[str, str] = {
    "ensure": "make sure",
    "ensures": "makes sure",
    "promptly": "without delay",
    "in accordance with": "in line with",
    "establish": "set up",
    "appropriate": "suitable",
    "sufficient": "adequate",
    "prior to": "before",
    "commence": "begin",
    "obtain": "get",
    "in respect of": "regarding",
    "comply with": "adhere to",
    "notify": "inform",
    "immediately": "at once",
    "additional": "further",
    "assist": "help",
    "adequate": "sufficient",
    "demonstrate": "show",
    "pursuant to": "under",
    "whether": "if",
}
_SYN_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(SYNONYMS, key=len, reverse=True)) + r")\b",
                     re.IGNORECASE)
_LEADS = ("if", "where", "when", "unless", "subject to", "in addition to", "without limiting", "for the purposes of",
          "notwithstanding", "in the case of")
_LEAD_RE = re.compile(r"^(" + "|".join(re.escape(w) for w in _LEADS)
                      + r")\b(?P<lead>[^,;:]*),\s+(?P<main>.+?)(?P<end>[.;:]?)$", re.IGNORECASE)
_TRAIL_RE = re.compile(r"^(?P<main>.+?),\s+(?P<kw>if|where|when|unless)\b(?P<trail>[^,;:]+?)(?P<end>[.;:]?)$")


def first_modal(sentence: str) -> re.Match | None:
    return _MODAL.search(sentence)


def is_candidate(sentence: str, min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> bool:
    """A single-line sentence of ``min_words``..``max_words`` words whose first modal can be flipped unambiguously."""
    text = sentence.strip()
    if not text or "\n" in text or "\t" in text or not (min_words <= len(text.split()) <= max_words):
        return False
    match = first_modal(text)
    if match is None or _SKIP.search(text):
        return False
    return _NEGATORS.search(text[: match.start()]) is None


def negate(sentence: str) -> str:
    """Flip the first modal: ``must`` -> ``must not``, ``must not`` -> ``must`` (likewise ``may``, ``shall``)."""
    match = first_modal(sentence)
    if match is None:
        raise ValueError(f"no modal (must/may/shall) to negate in: {sentence[:80]!r}")
    flipped = match.group(1) if match.group(2) else match.group(1) + " not"
    return sentence[: match.start()] + flipped + sentence[match.end():]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    # Keep capitalised defined terms and acronyms ("Where FSRA ...", "If Rule ..."): lower only a plain first word.
    word = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if word.istitle() and word.lower() in _LEADS_FIRST_WORDS else text


_LEADS_FIRST_WORDS = {w.split()[0] for w in _LEADS} | {"a", "an", "the", "each", "every", "any", "it", "its", "this",
                                                     "that", "such", "all", "where", "if"}


def reorder_clauses(sentence: str) -> str | None:
    """Move a leading condition clause to the end ("Where X, A must B." -> "A must B where X."), or a trailing one
    to the front; ``None`` when the sentence has no such clause or the move would take the modal with it."""
    text = sentence.strip()
    m = _LEAD_RE.match(text)
    if m and first_modal(m.group("main")) and not first_modal(m.group(1) + m.group("lead")):
        lead = m.group(1) + m.group("lead")
        return f"{_upper_first(m.group('main').rstrip())} {_lower_first(lead.strip())}{m.group('end') or '.'}"
    m = _TRAIL_RE.match(text)
    if m and first_modal(m.group("main")) and not first_modal(m.group("trail")):
        main = m.group("main").strip()
        return f"{_upper_first(m.group('kw'))}{m.group('trail').rstrip()}, {_lower_first(main)}{m.group('end') or '.'}"
    return None


def swap_synonyms(sentence: str) -> str:
    def repl(match: re.Match) -> str:
        word = match.group(0)
        new = SYNONYMS[word.lower()]
        return _upper_first(new) if word[:1].isupper() else new

    return _SYN_RE.sub(repl, sentence)


def paraphrase(sentence: str) -> str | None:
    """Clause reordering (when possible) then synonym swaps; ``None`` when neither changes the sentence."""
    text = reorder_clauses(sentence) or sentence.strip()
    text = swap_synonyms(text)
    return text if text != sentence.strip() else None


def candidate_sentences(passages: Iterable, split_sentences, documents: set[int] | None = None) -> list[dict]:
    """Candidate sentences ``{"sentence", "document_id", "passage_id"}`` of the passages in ``documents``
    (deduplicated on the text, first occurrence kept, in passage order)."""
    seen, out = set(), []
    for passage in passages:
        if documents is not None and passage.document_id not in documents:
            continue
        for sentence in split_sentences(passage.text):
            text = sentence.strip()
            if is_candidate(text) and text not in seen:
                seen.add(text)
                out.append({"sentence": text, "document_id": int(passage.document_id), "passage_id": passage.id})
    return out


def make_triples(candidates: list[dict], per_type: int, seed: int) -> list[dict]:
    """``per_type`` triples of each :data:`PROBE_TYPES` from ``candidates`` (seeded; each type draws its own
    sentences, without repeats inside a type). Unrelated hypotheses come from a different document."""
    if len({c["document_id"] for c in candidates}) < 2:
        raise ValueError("the probe needs candidate sentences from at least two documents")
    rng = random.Random(seed)
    triples = []
    for kind in PROBE_TYPES:
        order = list(range(len(candidates)))
        rng.shuffle(order)
        made = 0
        for i in order:
            if made == per_type:
                break
            c = candidates[i]
            premise = c["sentence"]
            if kind == "identity":
                hypothesis = premise
            elif kind == "paraphrase":
                hypothesis = paraphrase(premise)
            elif kind == "negation":
                hypothesis = negate(premise)
            else:
                other = candidates[rng.randrange(len(candidates))]
                while other["document_id"] == c["document_id"]:
                    other = candidates[rng.randrange(len(candidates))]
                hypothesis = other["sentence"]
            if hypothesis is None:
                continue
            triples.append({"premise": premise, "hypothesis": hypothesis, "label": PROBE_LABELS[kind], "type": kind,
                            "document_id": c["document_id"], "passage_id": c["passage_id"]})
            made += 1
        if made < per_type:
            logger.warning("probe type %s: only %d of %d triples (too few candidate sentences)", kind, made, per_type)
    return triples


def build_probe_splits(passages: Iterable, split_documents: Mapping[str, Iterable[int]], split_sentences,
                       probe_per_type: int = 300, train_per_type: int = 600, seed: int = 42) -> dict[str, list[dict]]:
    """``{"train": triples from the train split's documents, "test": the probe, from validation + test documents}``.

    ``split_documents`` maps the leakage-free split names to their DocumentIDs (``LeakageFreeSplit.documents``).
    """
    passages = list(passages)
    missing = {"train", "validation", "test"} - set(split_documents)
    if missing:
        raise ValueError(f"split_documents lacks {sorted(missing)}")
    train_docs = set(split_documents["train"])
    held_docs = set(split_documents["validation"]) | set(split_documents["test"])
    if train_docs & held_docs:
        raise ValueError(f"documents in both train and validation/test: {sorted(train_docs & held_docs)[:5]}")
    out = {
        "train": make_triples(candidate_sentences(passages, split_sentences, train_docs), train_per_type, seed),
        "test": make_triples(candidate_sentences(passages, split_sentences, held_docs), probe_per_type, seed + 1),
    }
    logger.info("probe triples: %s", {k: len(v) for k, v in out.items()})
    return out


def accuracy_per_type(rows: list[dict], predicted: list[str]) -> dict:
    """``{"accuracy": overall, "per_type": {type: {"accuracy", "n"}}}``."""
    if len(rows) != len(predicted):
        raise ValueError(f"{len(rows)} probe rows but {len(predicted)} predictions")
    hits: dict[str, int] = {}
    totals: dict[str, int] = {}
    for row, pred in zip(rows, predicted):
        totals[row["type"]] = totals.get(row["type"], 0) + 1
        hits[row["type"]] = hits.get(row["type"], 0) + int(pred == row["label"])
    return {"accuracy": sum(hits.values()) / max(1, len(rows)),
            "per_type": {t: {"accuracy": hits[t] / totals[t], "n": totals[t]} for t in totals},
            "n": len(rows)}
