"""Score a shared-task answer file with RePASs into a per-question CSV, resumably.

Input: the RIRAG shared-task JSON, a list of records with ``QuestionID``, ``Question``, ``RetrievedPassages``
(list of strings or one string), ``Answer`` and ``RetrievedIDs``. Output: a CSV with the reference's columns
(``QuestionID, entailment_score, contradiction_score, obligation_coverage_score, composite_score``), one row per
scored question, flushed and fsync'ed as written; a rerun skips the ids already in the CSV (and drops a torn last
line), so an interruption loses nothing. Empty answers are skipped, as the reference does. Averages are computed
from the CSV (as the reference does) and written next to it as ``<csv>.averages.json`` (atomically).

Citation markers (``[n]``, rirag's cited answers) are removed from each answer before RePASs by default: they are
references, not claims, and an NLI judge reads "[3]" as text (on the 150 benchmark answers of the extractive
composer, the local judge's mean per-sentence contradiction was 0.25 with the markers and 0.17 without). The
citations themselves are judged by the attribution metrics. Answers without markers (the shared task's) are scored
unchanged; ``strip_citation_markers=False`` (``--keep-citation-markers``) scores the text as written.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

from rirag.io import atomic_write_json
from rirag.scoring.constants import (
    CSV_COLUMNS,
    LOCAL_JUDGE_LABEL,
    DEFAULT_BATCH_SIZE,
    MODES,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    OFFICIAL_OBLIGATION_MODEL,
)

logger = logging.getLogger(__name__)

REQUIRED_FIELDS = ("QuestionID", "RetrievedPassages", "Answer")


def read_answers(path: str) -> list[dict[str, Any]]:
    """Load and validate the answer JSON (``.json``, or gzipped ``.json.gz`` as the benchmarks commit them); errors
    name the file, the record and the field."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        try:
            data = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as err:
            raise ValueError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of answer records, got {type(data).__name__}")
    seen = set()
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"{path}: record {i} is not an object")
        for key in REQUIRED_FIELDS:
            if key not in item:
                raise ValueError(f"{path}: record {i} (QuestionID {item.get('QuestionID')!r}) lacks field {key!r}")
        qid = str(item["QuestionID"])
        if qid in seen:
            raise ValueError(f"{path}: record {i}: duplicate QuestionID {qid!r}")
        seen.add(qid)
        answer, passages = item["Answer"], item["RetrievedPassages"]
        if answer is not None and not isinstance(answer, str):
            raise ValueError(f"{path}: record {i} (QuestionID {qid!r}): field 'Answer' must be a string or null")
        if not isinstance(passages, (str, list)) or (isinstance(passages, list) and not all(isinstance(p, str) for p in passages)):
            raise ValueError(
                f"{path}: record {i} (QuestionID {qid!r}): field 'RetrievedPassages' must be a string or a list of strings"
            )
    return data


def _repair_and_read_ids(csv_path: str) -> set[str]:
    """Ids already written; a torn last line (no newline: interrupted mid-write) is cut off first."""
    if not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0:
        return set()
    with open(csv_path, "rb+") as f:
        content = f.read()
        if not content.endswith(b"\n"):
            cut = content.rfind(b"\n") + 1
            logger.warning("%s: dropping a torn last line (%d bytes)", csv_path, len(content) - cut)
            f.truncate(cut)
    with open(csv_path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames and tuple(reader.fieldnames) != CSV_COLUMNS:
            raise ValueError(f"{csv_path}: unexpected header {reader.fieldnames}; expected {list(CSV_COLUMNS)}")
        return {row["QuestionID"] for row in reader}


def averages_from_csv(csv_path: str) -> dict[str, Any]:
    """Mean of each score column over the CSV rows (0.0 when empty, as the reference's notebook)."""
    sums = dict.fromkeys(CSV_COLUMNS[1:], 0.0)
    n = 0
    with open(csv_path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            for k in sums:
                sums[k] += float(row[k])
            n += 1
    return {**{k: (v / n if n else 0.0) for k, v in sums.items()}, "n_scored": n}


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def repass_text(answer: str | None, strip_citation_markers: bool = True) -> str | None:
    """The text RePASs scores for ``answer``: without its citation markers unless ``strip_citation_markers`` is
    false (``None`` stays ``None``)."""
    if answer is None or not strip_citation_markers:
        return answer
    from rirag.generation.citations import CITATION_PATTERN, strip_citations

    return strip_citations(answer) if CITATION_PATTERN.search(answer) else answer  # no marker: the text as written


def score_answers_file(answers_path: str, csv_path: str, scorer: Any, chunk_size: int = 32,
                       strip_citation_markers: bool = True) -> dict[str, Any]:
    """Score every not-yet-written question of ``answers_path`` into ``csv_path``; return the averages.

    ``strip_citation_markers``: score each answer without its ``[n]`` markers (:func:`repass_text`)."""
    from tqdm.auto import tqdm

    data = read_answers(answers_path)
    done = _repair_and_read_ids(csv_path)
    pending, skipped = [], 0
    for item in data:
        qid = str(item["QuestionID"])
        if qid in done:
            continue
        if not (repass_text(item["Answer"], strip_citation_markers) or "").strip():
            logger.info("skipping QuestionID %s: no answer", qid)
            skipped += 1
            continue
        pending.append(item)
    logger.info("%d already scored, %d to score, %d empty answers skipped", len(done), len(pending), skipped)
    os.makedirs(os.path.dirname(os.path.abspath(csv_path)), exist_ok=True)
    new_file = not done and (not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0)
    with open(csv_path, "a", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        if new_file:
            writer.writerow(CSV_COLUMNS)
            f.flush()
        with tqdm(total=len(pending), desc="RePASs", unit="answer") as bar:
            for chunk in _chunks(pending, chunk_size):
                result = scorer.score([repass_text(x["Answer"], strip_citation_markers) for x in chunk],
                                      [x["RetrievedPassages"] for x in chunk])
                per = result["per_item"]
                for j, item in enumerate(chunk):
                    writer.writerow([item["QuestionID"], per["entailment"][j], per["contradiction"][j],
                                     per["obligation_coverage"][j], per["repass"][j]])
                    f.flush()
                    os.fsync(f.fileno())
                bar.update(len(chunk))
    averages = averages_from_csv(csv_path)
    averages["skipped_empty_answers"] = skipped
    averages["citation_markers"] = "removed before scoring" if strip_citation_markers else "kept"
    atomic_write_json(csv_path + ".averages.json", averages)
    return averages


def is_official(args_or_config: Any) -> bool:
    """Whether the official NLI and coverage models are in use (otherwise numbers are 'RePASs (local judge)')."""
    return (getattr(args_or_config, "nli_model") == OFFICIAL_NLI_MODEL
            and getattr(args_or_config, "coverage_model") == OFFICIAL_COVERAGE_MODEL)


def format_summary(averages: dict[str, Any], official: bool) -> str:
    """A small text table of the averages."""
    name = "RePASs" if official else LOCAL_JUDGE_LABEL
    rows = [("Entailment", "entailment_score"), ("Contradiction", "contradiction_score"),
            ("Obligation coverage", "obligation_coverage_score"), (name, "composite_score")]
    width = max(len(r[0]) for r in rows)
    lines = [f"{label:<{width}}  {averages[key]:.5f}" for label, key in rows]
    lines.append(f"{'answers scored':<{width}}  {averages['n_scored']}")
    return "\n".join(lines)


def _workers(value: str) -> int | str:
    """argparse type of ``--workers``: a positive integer or ``auto``."""
    import argparse

    from rirag.scoring.workers import AUTO_WORKERS

    if value == AUTO_WORKERS:
        return value
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer or {AUTO_WORKERS!r}, got {value!r}")
    return int(value)


def add_answers_parser(subparsers: Any) -> Any:
    """Register ``answers`` (``rirag evaluate answers``) on an argparse subparsers object."""
    p = subparsers.add_parser("answers", help="RePASs for a shared-task answer JSON → per-question CSV (resumable)")
    p.add_argument("--answers", required=True, help="answer JSON (QuestionID, RetrievedPassages, Answer, ...)")
    p.add_argument("--out", default=None, help="CSV to write/resume (default: <answers>.repass.csv)")
    p.add_argument("--mode", choices=MODES, default="reference")
    p.add_argument("--nli-model", default=OFFICIAL_NLI_MODEL)
    p.add_argument("--coverage-model", default=OFFICIAL_COVERAGE_MODEL)
    p.add_argument("--obligation-model", default=OFFICIAL_OBLIGATION_MODEL)
    p.add_argument("--batch-size", default=DEFAULT_BATCH_SIZE,
                   help="inputs per forward pass, or 'auto' (a token budget per pass; the default)")
    p.add_argument("--chunk-size", type=int, default=32, help="answers scored (and flushed) together")
    p.add_argument("--workers", type=_workers, default="auto",
                   help="CPU processes for the forward passes (1 torch thread each); 'auto' (the default): one per "
                        "core (measured 1.6x faster than one process on 2 cores, same scores)")
    p.add_argument("--device", default=None)
    p.add_argument("--keep-citation-markers", action="store_true",
                   help="score answers with their [n] citation markers (default: removed before RePASs, since they "
                        "are references, not claims; answers without markers are unaffected)")
    p.add_argument("--attribution", action="store_true",
                   help="also citation precision/recall, uncited share, invalid citations and copy ratio "
                        "(judged by --nli-model), written to <csv>.attribution.json")
    p.set_defaults(func=run_answers)
    return p


def run_answers(args: Any) -> dict[str, Any] | int:
    """Entry point of ``rirag evaluate answers``: score, write the CSV, print the averages table.

    A model that is missing (an untrained local folder, or a Hub id offline) ends the command with one line saying
    how to get it, and exit status 2, before anything is written.
    """
    from rirag.scoring.models import MissingModelError
    from rirag.scoring.repass import RePASsConfig, RePASsScorer

    out = args.out or os.path.splitext(args.answers)[0] + ".repass.csv"
    scorer = RePASsScorer(RePASsConfig(nli_model=args.nli_model, coverage_model=args.coverage_model,
                                       obligation_model=args.obligation_model, batch_size=args.batch_size,
                                       device=args.device, mode=args.mode,
                                       workers=getattr(args, "workers", 1)))
    read_answers(args.answers)  # bad input is reported before models load
    try:
        scorer.load_models()
    except MissingModelError as err:
        logger.error("%s", err)
        return 2
    averages = score_answers_file(args.answers, out, scorer, chunk_size=args.chunk_size,
                                  strip_citation_markers=not getattr(args, "keep_citation_markers", False))
    sys.stdout.write(format_summary(averages, is_official(args)) + f"\nper-question scores: {out}\n")
    if getattr(args, "attribution", False):
        from rirag.scoring.attribution import AttributionConfig, AttributionScorer, format_attribution
        from rirag.scoring.attribution import score_answers_file as attribution_of_file

        config = AttributionConfig(nli_model=args.nli_model, batch_size=args.batch_size, device=args.device,
                                   workers=getattr(args, "workers", 1))
        attribution = attribution_of_file(args.answers, AttributionScorer(config))
        atomic_write_json(out + ".attribution.json", attribution)
        sys.stdout.write(format_attribution(attribution) + f"\nper-question attribution: {out}.attribution.json\n")
        averages["attribution"] = {k: v for k, v in attribution.items() if k != "per_question"}
    return averages
