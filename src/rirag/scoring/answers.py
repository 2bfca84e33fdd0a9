"""Score a shared-task answer file with RePASs into a per-question CSV, resumably.

Input: the RIRAG shared-task JSON, a list of records with ``QuestionID``, ``Question``, ``RetrievedPassages``
(list of strings or one string), ``Answer`` and ``RetrievedIDs``. Output: a CSV with the reference's columns
(``QuestionID, entailment_score, contradiction_score, obligation_coverage_score, composite_score``), one row per
scored question, flushed and fsync'ed as written; a rerun skips the ids already in the CSV (and drops a torn last
line), so an interruption loses nothing. Empty answers are skipped, as the reference does. Averages are computed
from the CSV (as the reference does) and written next to it as ``<csv>.averages.json`` (atomically), with the
``signature`` of the RePASs scorer that made the rows (:mod:`rirag.scoring.signature`; kept across resumed runs in
``<csv>.signatures.json``; ``None`` when the rows were not all made by one known scorer).

Citation markers (``[n]``, rirag's cited answers) are removed from each answer before RePASs by default: they are
references, not claims, and an NLI judge reads "[3]" as text (on the 150 benchmark answers of the extractive
composer, the local judge's mean per-sentence contradiction was 0.25 with the markers and 0.17 without). The
citations themselves are judged by the attribution metrics. Answers without markers (the shared task's) are scored
unchanged; ``strip_citation_markers=False`` (``--keep-citation-markers``) scores the text as written.

One bad answer never sinks a run: an answer longer than :data:`~rirag.scoring.constants.MAX_ANSWER_CHARS`
characters is not scored, and an answer whose scoring raises (a chunk that fails is retried one answer at a time) is
recorded too; each becomes a failure (``QuestionID`` and the reason) in ``<csv>.failures.json`` and the summary, and
every other answer is scored. A rerun retries them (they are not in the CSV). Only when no answer at all could be
scored does the command fail (one line, exit status 2). The CSV is created with its first row, so a run that scores
nothing leaves no header-only file.

The command, ``rirag evaluate answers``, is :mod:`rirag.cli.evaluate`; this module parses no arguments and prints
nothing.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable
from typing import Any

from rirag.data.answers import read_answers
from rirag.data.obliqa import load_obliqa
from rirag.io import atomic_write_json
from rirag.scoring.answer_quality import answer_quality
from rirag.scoring.constants import (
    CSV_COLUMNS,
    LOCAL_JUDGE_LABEL,
    MAX_ANSWER_CHARS,
)
from rirag.scoring.signature import OFFICIAL_LABEL, is_official_judge, judge_label
from rirag.text.citations import CITATION_PATTERN, numbers_in, strip_citations

logger = logging.getLogger(__name__)


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
    """Mean of each score column over the CSV rows (0.0 when empty or absent, as the reference's notebook)."""
    sums = dict.fromkeys(CSV_COLUMNS[1:], 0.0)
    n = 0
    if not os.path.exists(csv_path):
        return {**sums, "n_scored": 0}
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
    return strip_citations(answer) if CITATION_PATTERN.search(answer) else answer  # no marker: the text as written


def metrics_path(csv_path: str, kind: str) -> str:
    """Where a scoring run's ``kind`` metrics (``quality``, ``attribution``) are written: beside its RePASs CSV,
    named without it (``a.repass.csv`` -> ``a.quality.json``): a run whose RePASs is skipped writes no CSV, and leaves
    no file named after one."""
    stem = csv_path[:-len(".csv")] if csv_path.endswith(".csv") else csv_path
    stem = stem[:-len(".repass")] if stem.endswith(".repass") else stem
    return f"{stem}.{kind}.json"


def failures_path(csv_path: str) -> str:
    """Where the answers that could not be scored are listed (QuestionID and reason)."""
    return csv_path + ".failures.json"


def _reason(err: Exception) -> str:
    text = " ".join(str(err).split())
    text = text if len(text) <= 300 else text[:299] + "…"
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class NothingScored(ValueError):
    """No answer of the file could be scored; the failures file says why, answer by answer."""


def score_answers_file(answers_path: str, csv_path: str, scorer: Any, chunk_size: int = 32,
                       strip_citation_markers: bool = True,
                       max_answer_chars: int | None = MAX_ANSWER_CHARS) -> dict[str, Any]:
    """Score every not-yet-written question of ``answers_path`` into ``csv_path``; return the averages.

    ``strip_citation_markers``: score each answer without its ``[n]`` markers (:func:`repass_text`).
    ``max_answer_chars``: longer answers are not scored but recorded as failures (``None``: no limit). An answer
    whose scoring raises is recorded too; the others are scored (see the module docstring). The averages carry
    ``failed`` (the failures, also in :func:`failures_path`); :class:`NothingScored` when none could be scored."""
    from tqdm.auto import tqdm

    data = read_answers(answers_path)
    done = _repair_and_read_ids(csv_path)
    # the signatures of the scorers that made the CSV's rows (None: a row made by a scorer that records none)
    signatures = _read_signatures(csv_path) if done else set()
    recorded = set(signatures)
    if not done and os.path.exists(signatures_path(csv_path)):  # an earlier CSV's
        os.unlink(signatures_path(csv_path))
    pending, skipped, failures = _select(data, done, strip_citation_markers, max_answer_chars)
    logger.info("%d already scored, %d to score, %d empty answers skipped", len(done), len(pending), skipped)
    os.makedirs(os.path.dirname(os.path.abspath(csv_path)), exist_ok=True)
    out = _RowWriter(csv_path, new_file=not done and (not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0))

    def score(chunk: list) -> list[list]:
        result = scorer.score([repass_text(x["Answer"], strip_citation_markers) for x in chunk],
                              [x["RetrievedPassages"] for x in chunk])
        per = result["per_item"]
        signatures.add(result.get("signature"))
        return [[item["QuestionID"], per["entailment"][j], per["contradiction"][j], per["obligation_coverage"][j],
                 per["repass"][j]] for j, item in enumerate(chunk)]

    def fail(item: dict, err: Exception) -> None:
        failures.append({"QuestionID": str(item["QuestionID"]), "reason": _reason(err)})
        logger.warning("QuestionID %s: not scored: %s", item["QuestionID"], failures[-1]["reason"])

    try:
        with tqdm(total=len(pending), desc="RePASs", unit="answer") as bar:
            for chunk in _chunks(pending, chunk_size):
                rows = _score_or_one_by_one(chunk, score, fail)
                for row in rows:
                    out.write(row)
                if rows and signatures != recorded:
                    atomic_write_json(signatures_path(csv_path), sorted(signatures, key=str))
                    recorded = set(signatures)
                bar.update(len(chunk))
    finally:
        out.close()
    return _finish(answers_path, csv_path, failures, skipped, strip_citation_markers, signatures)


def _select(data: list[dict], done: set, strip_citation_markers: bool,
            max_answer_chars: int | None) -> tuple[list[dict], int, list[dict]]:
    """The answers to score now (not in the CSV yet), the number of empty ones skipped, and the failures: the answers
    over ``max_answer_chars``, which are not scored."""
    pending, skipped, failures = [], 0, []
    for item in data:
        qid = str(item["QuestionID"])
        if qid in done:
            continue
        text = repass_text(item["Answer"], strip_citation_markers) or ""
        if not text.strip():
            logger.info("skipping QuestionID %s: no answer", qid)
            skipped += 1
            continue
        if max_answer_chars is not None and len(text) > max_answer_chars:
            failures.append({"QuestionID": qid, "reason": f"the answer has {len(text):,} characters, more than the "
                             f"{max_answer_chars:,} scored (--max-answer-chars)"})
            logger.warning("QuestionID %s: not scored: %s", qid, failures[-1]["reason"])
            continue
        pending.append(item)
    return pending, skipped, failures


class _RowWriter:
    """Appends rows to the CSV, each flushed and synced; the file is created with its first row (a run that scores
    nothing leaves no header-only file), with the header when ``new_file``."""

    def __init__(self, csv_path: str, new_file: bool):
        self.csv_path, self.new_file = csv_path, new_file
        self.f = self.writer = None

    def write(self, row: list) -> None:
        if self.f is None:
            self.f = open(self.csv_path, "a", encoding="utf-8", newline="")
            self.writer = csv.writer(self.f, lineterminator="\n")
            if self.new_file:
                self.writer.writerow(CSV_COLUMNS)
                self.new_file = False
        self.writer.writerow(row)
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        if self.f is not None:
            self.f.close()


def _score_or_one_by_one(chunk: list[dict], score: Any, fail: Any) -> list[list]:
    """The chunk's rows, scored together; when that raises, each answer alone (``fail`` records the ones that still
    raise), so that one bad answer does not sink the run."""
    try:
        return score(chunk)
    except Exception as err:  # noqa: BLE001 - one bad answer must not sink the run: find it
        rows: list[list] = []
        if len(chunk) == 1:
            fail(chunk[0], err)
        else:
            logger.warning("scoring %d answers together failed (%s): scoring them one at a time",
                           len(chunk), _reason(err))
            for item in chunk:
                try:
                    rows.extend(score([item]))
                except Exception as one:  # noqa: BLE001
                    fail(item, one)
        return rows


def _finish(answers_path: str, csv_path: str, failures: list[dict], skipped: int, strip_citation_markers: bool,
            signatures: set) -> dict[str, Any]:
    """Write the failures (or remove an earlier run's) and the averages of the whole CSV; return the averages."""
    failed_file = failures_path(csv_path)
    if failures:
        atomic_write_json(failed_file, failures)
    elif os.path.exists(failed_file):  # an earlier run's failures, scored now
        os.unlink(failed_file)
    averages = averages_from_csv(csv_path)
    averages["skipped_empty_answers"] = skipped
    averages["citation_markers"] = "removed before scoring" if strip_citation_markers else "kept"
    averages["failed"] = failures
    averages["signature"] = _one_signature(csv_path, signatures)
    if not averages["n_scored"]:
        if failures:
            raise NothingScored(f"{answers_path}: none of its answers could be scored ({len(failures)} failed, e.g. "
                                f"QuestionID {failures[0]['QuestionID']}: {failures[0]['reason']}); every failure is "
                                f"in {failed_file}")
    if os.path.exists(csv_path) or averages["n_scored"]:
        atomic_write_json(csv_path + ".averages.json", averages)
    return averages


def signatures_path(csv_path: str) -> str:
    """Where the RePASs signatures of the scorers that wrote the CSV's rows are kept (across resumed runs)."""
    return csv_path + ".signatures.json"


def _read_signatures(csv_path: str) -> set[str | None]:
    """The signatures recorded for the CSV's rows; ``{None}`` (not known) when none were recorded."""
    try:
        with open(signatures_path(csv_path), encoding="utf-8") as f:
            return set(json.load(f)) or {None}
    except (OSError, ValueError, TypeError):
        return {None}


def _one_signature(csv_path: str, signatures: set[str | None]) -> str | None:
    """The one signature every row of the CSV was made with, else ``None`` (a warning when they differ)."""
    if len(signatures) == 1 and None not in signatures:
        return next(iter(signatures))
    if len(signatures) > 1:
        logger.warning("%s: its rows were not all scored by one known RePASs scorer (%s): no signature recorded",
                       csv_path, ", ".join(sorted(map(str, signatures))))
    return None


def is_official(args_or_config: Any) -> bool:
    """Whether the official NLI and coverage models are in use (otherwise numbers are 'RePASs (local judge)')."""
    return is_official_judge(args_or_config.nli_model, args_or_config.coverage_model)


def format_summary(averages: dict[str, Any], official: bool) -> str:
    """A small text table of the averages; the RePASs label comes from their ``signature`` when they record one
    (else from ``official``)."""
    name = judge_label(averages["signature"]) if averages.get("signature") else (
        OFFICIAL_LABEL if official else LOCAL_JUDGE_LABEL)
    rows = [("Entailment", "entailment_score"), ("Contradiction", "contradiction_score"),
            ("Obligation coverage", "obligation_coverage_score"), (name, "composite_score")]
    width = max(len(r[0]) for r in rows)
    lines = [f"{label:<{width}}  {averages[key]:.5f}" for label, key in rows]
    lines.append(f"{'answers scored':<{width}}  {averages['n_scored']}")
    failed = averages.get("failed") or []
    if failed:
        lines.append(f"{'not scored':<{width}}  {len(failed)} (e.g. QuestionID {failed[0]['QuestionID']}: "
                     f"{failed[0]['reason']})")
    return "\n".join(lines)


@contextlib.contextmanager
def within_length(answers_path: str, max_chars: int | None):
    """``answers_path``, or a temporary copy without the answers longer than ``max_chars`` when it has any."""
    data = read_answers(answers_path)
    kept = [r for r in data if max_chars is None or len(r.get("Answer") or "") <= max_chars]
    if len(kept) == len(data):
        yield answers_path
        return
    logger.warning("attribution: %d answers longer than %d characters are left out", len(data) - len(kept),
                   max_chars)
    with tempfile.TemporaryDirectory(prefix="rirag-attribution-") as folder:
        path = os.path.join(folder, "answers.json")
        atomic_write_json(path, kept)
        yield path


def answer_quality_of(records: list[dict[str, Any]], data: str | None = None, questions: str | None = None,
                      index: Any = None) -> dict[str, Any]:
    """The answer metrics that copying cannot game (:mod:`rirag.scoring.answer_quality`) of answer records; the
    gold-citation and passage-set metrics and shared answers over the questions that have gold passages: those of the
    corpus's splits (when the data is at hand: ``data`` or ``$RIRAG_DATA_DIR``), or, with ``questions``, those of a
    questions file whose gold (by id or by text) is mapped to that corpus (:func:`rirag.data.questions.load_questions`;
    a PRA questions file over ``rirag data ingest`` output; its gold texts found through ``index``, a
    :data:`rirag.data.questions.CandidateIndex`). Per question under ``per_question``."""
    gold: dict[str, list[str]] = {}
    corpus_ids = None
    if data or questions or os.environ.get("RIRAG_DATA_DIR"):
        obliqa = load_obliqa(data)
        corpus_ids = obliqa.corpus
        if questions:
            from rirag.data.questions import load_questions

            gold = {q.id: list(q.gold) for q in load_questions(questions, obliqa, index).questions if q.gold}
        else:
            gold = {q.id: list(q.gold) for split in obliqa.splits.values() for q in split if q.gold}
    qids = [str(r["QuestionID"]) for r in records]
    # without RetrievedIDs no citation can be mapped to a passage: the gold metrics are n/a for that answer
    golds = [gold.get(q, []) if r.get("RetrievedIDs") else [] for q, r in zip(qids, records)]
    texts = {g: corpus_ids[g].text for gs in golds for g in gs if corpus_ids is not None and g in corpus_ids}
    result = answer_quality([r.get("Answer") or "" for r in records], [r.get("RetrievedIDs") or [] for r in records],
                            golds if any(golds) else None, texts or None)
    per = result.pop("per_item")
    result["questions_with_gold"] = sum(bool(g) for g in golds)
    result["per_question"] = {q: {k: v[i] for k, v in per.items()} for i, q in enumerate(qids)}
    result["input_checks"] = input_checks(records, corpus_ids)
    return result


#: A marker with a negative number (``[-1]``): no citation pattern reads it, so it would pass as text.
_NEGATIVE_MARKER = re.compile(r"\[\s*-\s*\d+\s*\]")


def input_checks(records: list[dict[str, Any]], corpus_ids: Any = None) -> dict[str, Any]:
    """What an answer file holds that no score shows, counted (no model needed): citation markers that point at no
    passage of the record (``[0]``, ``[-1]``, ``[99]`` with 3 passages), and, with the corpus at hand
    (``corpus_ids``), RetrievedIDs that are not passages of it (they score as non-relevant, silently). ``None`` for
    the latter without a corpus."""
    markers = answers_markers = 0
    example_marker = None
    unknown: list[str] = []
    answers_unknown = 0
    for r in records:
        answer = r.get("Answer") or ""
        ids = r.get("RetrievedIDs")
        passages = r.get("RetrievedPassages")
        n = len(ids) if isinstance(ids, list) and ids else (len(passages) if isinstance(passages, list) else 1)
        bad = [m for m in numbers_in(answer) if not 1 <= m <= n] + _NEGATIVE_MARKER.findall(answer)
        if bad:
            markers += len(bad)
            answers_markers += 1
            example_marker = example_marker or (str(r.get("QuestionID")), str(bad[0]), n)
        if corpus_ids is not None and isinstance(ids, list):
            missing = [str(i) for i in ids if str(i) not in corpus_ids]
            unknown += missing
            answers_unknown += bool(missing)
    return {"markers_out_of_range": markers, "answers_with_markers_out_of_range": answers_markers,
            "marker_example": example_marker,
            "unknown_retrieved_ids": None if corpus_ids is None else len(unknown),
            "answers_with_unknown_retrieved_ids": None if corpus_ids is None else answers_unknown,
            "unknown_retrieved_id_example": unknown[0] if unknown else None}


def input_warnings(checks: dict[str, Any], source: str) -> list[str]:
    """The lines :func:`input_checks` gives rise to (empty when the file is clean)."""
    lines = []
    if checks.get("markers_out_of_range"):
        qid, marker, n = checks["marker_example"]
        lines.append(f"{source}: {checks['markers_out_of_range']} citation markers in "
                     f"{checks['answers_with_markers_out_of_range']} answers point at no passage (e.g. QuestionID "
                     f"{qid!r}: [{marker.strip('[]')}] with {n} passages); they cite nothing")
    if checks.get("unknown_retrieved_ids"):
        lines.append(f"{source}: {checks['unknown_retrieved_ids']} RetrievedIDs in "
                     f"{checks['answers_with_unknown_retrieved_ids']} answers are not passages of the corpus (e.g. "
                     f"{checks['unknown_retrieved_id_example']!r}); they count as non-relevant")
    return lines
