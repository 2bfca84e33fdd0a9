"""Render model, dataset and Space cards from the Jinja templates in ``model_cards/`` (YAML front matter + Markdown).

Cards carry metadata that ``huggingface_hub`` parses (``ModelCard.load(path).data``): licence, base model, data sets,
tags, library and pipeline tag, and for models a ``model-index`` whose numbers are read from
``benchmarks/results/*.json`` by :func:`collect_results`, never typed into a template.

Every template can use the global ``SEED_PAPERS_BIBTEX`` (the two seed papers) and the filters ``to_yaml`` and
``shell_quote`` (a word of a shell command line).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from rirag.io import WEIGHTS_FINGERPRINT
from rirag.scoring.constants import LOCAL_JUDGE_LABEL, OFFICIAL_COVERAGE_MODEL, OFFICIAL_NLI_MODEL, REGNLP_BIBTEX

#: The templates live at the repository root (recipes run from a checkout with an editable install).
TEMPLATES_DIR = Path(__file__).resolve().parents[3] / "model_cards"

#: Where rirag's source is: it is on no package index, so every card that runs rirag installs it from here
#: (:func:`install_command`), and so do the users of the Spaces it vendors into.
SOURCE_REPOSITORY = "https://github.com/rirag/rirag"
#: What a card's snippet uses -> the distributions that install it: a Python snippet's top-level imports, a shell
#: snippet's commands (``rirag data`` needs the base package; other ``rirag`` commands its models, the ``train``
#: extra). Models of transformers, peft and the RePASs metric run on torch, which none of them requires.
INSTALLS = {
    "datasets": ("datasets",),
    "sentence_transformers": ("sentence-transformers",),
    "transformers": ("transformers", "torch"),
    "peft": ("peft", "transformers", "torch"),
    "evaluate": ("evaluate", "transformers", "torch"),
    "huggingface_hub": ("huggingface_hub",),
    "hf": ("huggingface_hub",),
    "rirag data": (f"rirag @ git+{SOURCE_REPOSITORY}",),
    "rirag": (f"rirag[train] @ git+{SOURCE_REPOSITORY}",),
}


def snippet_needs(language: str, code: str) -> list[str]:
    """The :data:`INSTALLS` keys a card's code block uses: its top-level imports (Python), or the commands it runs
    (shell); a doctest block is read as the Python it holds."""
    import ast

    found: list[str] = []
    if language == "python":
        lines = [line[4:] if line.startswith((">>> ", "... ")) else line for line in code.splitlines()
                 if not code.lstrip().startswith(">>>") or line.startswith((">>> ", "... "))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            return found
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [n.split(".")[0] for n in names if n.split(".")[0] in INSTALLS]
    elif language in ("bash", "sh", "shell"):
        for line in code.replace("\\\n", " ").splitlines():
            for command in line.split("&&"):
                words = command.split("#", 1)[0].split()
                if words[:2] == ["rirag", "data"]:
                    found.append("rirag data")
                elif words[:1] in (["rirag"], ["hf"]):
                    found.append(words[0])
    return list(dict.fromkeys(found))


def install_command(needs: Iterable[str]) -> str:
    """One ``pip install`` line for what :func:`snippet_needs` found (empty when nothing): each distribution once,
    a requirement with a URL quoted."""
    distributions = list(dict.fromkeys(d for need in needs for d in INSTALLS[need]))
    if any(d.startswith("rirag[") for d in distributions):  # the extra holds the base package
        distributions = [d for d in distributions if not d.startswith("rirag @")]
    return "pip install " + " ".join(f'"{d}"' if " " in d else d for d in distributions) if distributions else ""


def missing_installs(text: str) -> list[str]:
    """The distributions a card's snippets use (:func:`rirag.hub.cards.snippet_needs`) that no ``pip install`` line
    of the card names."""
    needs = [need for lang, code in code_blocks(text) for need in snippet_needs(lang, code)]
    wanted = install_command(needs).removeprefix("pip install ")
    named = " ".join(line for line in text.splitlines() if "pip install" in line)
    return [d.strip('"') for d in re.findall(r'"[^"]+"|\S+', wanted) if d.strip('"') not in named]


def with_install(text: str) -> str:
    """A card that says how to install what its snippets use: a ``pip install`` block before the first snippet that
    needs something no install line of the card names (rirag itself from its source repository)."""
    if not missing_installs(text):
        return text
    needs = [need for lang, code in code_blocks(text) for need in snippet_needs(lang, code)]
    first = next(m for m in _FENCE.finditer(text)
                 if snippet_needs(m.group(1).lower(), m.group(2)))
    block = f"Install what the snippets below use:\n\n```bash\n{install_command(needs)}\n```\n\n"
    return text[:first.start()] + block + text[first.start():]


_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.S | re.M)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block of a Markdown text, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


#: BibTeX of the two seed papers; every card ends with it.
SEED_PAPERS_BIBTEX = REGNLP_BIBTEX + """
@misc{deusser-etal-regulatory-rag,
    title = "Automated Regulatory Compliance Question Answering in Financial Services with Domain-Adapted
             Retrieval-Augmented Generation",
    author = "Deu{\\ss}er, Tobias and Pillai, Abhishek and Bariviera, Aurelio F. and Bhardwaj, Dhananjay and
              Sparrenberg, Lorenz and Berghaus, David and Bauckhage, Christian and Sifa, Rafet",
    note = "Preprint",
}"""

#: How a split name maps to its evaluation protocol (the published splits leak passages between dev and test).
PROTOCOL_LEAKAGE_FREE = "leakage-free"
PROTOCOL_ORIGINAL = "original"
PROTOCOL_TITLES = {PROTOCOL_LEAKAGE_FREE: "ObliQA (leakage-free document-level re-split)",
                   PROTOCOL_ORIGINAL: "ObliQA (published splits)"}
OBLIQA_HUB_ID = "RegNLP/ObliQA"

#: Metric keys of a results row, with their display names.
RETRIEVAL_METRICS = {"recall@10": "Recall@10", "map@10": "MAP@10", "mrr@10": "MRR@10", "ndcg@10": "nDCG@10"}
ANSWER_METRICS = {"repass": "RePASs", "entailment": "entailment", "contradiction": "contradiction",
                  "obligation_coverage": "obligation coverage", "citation_precision": "citation precision",
                  "citation_recall": "citation recall"}
CLASSIFICATION_METRICS = {"accuracy": "accuracy", "f1": "F1", "precision": "precision", "recall": "recall"}
#: Answer metrics that need no judge (against the questions' gold passages), with their display names.
GOLD_CITATION_METRICS = {"gold_citation_precision": "gold-citation precision",
                         "gold_citation_recall": "gold-citation recall"}


class CardError(ValueError):
    """A card that cannot be rendered or does not parse."""


def render_card(template: str, templates_dir: str | Path | None = None, **context) -> str:
    import jinja2

    folder = Path(templates_dir) if templates_dir else TEMPLATES_DIR
    if not (folder / template).exists():
        raise FileNotFoundError(f"card template not found: {folder / template}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.globals["SEED_PAPERS_BIBTEX"] = SEED_PAPERS_BIBTEX
    env.filters["to_yaml"] = to_yaml
    env.filters["shell_quote"] = shlex.quote
    return env.get_template(template).render(**context)


def to_yaml(value: Any, indent: int = 0) -> str:
    """YAML block for a template's front matter (``{{ x | to_yaml }}``), without a trailing newline."""
    import yaml

    text = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=1000, default_flow_style=False).rstrip("\n")
    if indent:
        text = "\n".join((" " * indent + line) if line else line for line in text.split("\n"))
    return text


def protocol_of(split: str) -> str:
    """``original-*`` splits belong to the published-splits protocol; the rest to the leakage-free re-split."""
    return PROTOCOL_ORIGINAL if str(split).startswith("original-") else PROTOCOL_LEAKAGE_FREE


# --------------------------------------------------------------------------------------------------
# Results: benchmarks/results/*.json -> flat result records -> model-index
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One measured number with everything a ``model-index`` entry needs."""

    task_type: str
    task_name: str
    dataset_name: str
    dataset_type: str
    dataset_config: str | None
    dataset_split: str
    metric_type: str
    metric_name: str
    value: float
    source: str  # the results file (relative path) the number was read from


def read_results(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError as err:
        raise CardError(f"results file not found: {path}") from err
    except json.JSONDecodeError as err:
        raise CardError(f"{path}: malformed JSON ({err.msg}, line {err.lineno})") from err


def _same_artifact(a: str | None, b: str) -> bool:
    """``a`` names artifact ``b``: the same path, or one part of a stack such as ``base + adapter``."""
    if not a or not isinstance(a, str):
        return False
    want = Path(b).as_posix().rstrip("/")
    return any(Path(part.strip()).as_posix().rstrip("/") == want for part in a.split(" + "))


def _repass_label(*records: dict) -> str:
    """A record's own ``metric_label`` wins; otherwise NLI models other than the official ones mean the local judge."""
    for rec in records:
        if isinstance(rec, dict) and rec.get("metric_label"):
            return str(rec["metric_label"])
        if isinstance(rec, dict) and str(rec.get("judge", "")).startswith(LOCAL_JUDGE_LABEL):
            return LOCAL_JUDGE_LABEL
    for rec in records:
        models = rec.get("models") if isinstance(rec, dict) else None
        if isinstance(models, dict):
            judges = [models.get("nli_model"), models.get("coverage_model")]
            if any(j and j not in (OFFICIAL_NLI_MODEL, OFFICIAL_COVERAGE_MODEL) for j in judges):
                return LOCAL_JUDGE_LABEL
            if all(judges):
                return "RePASs"
    # Only the stand-in judge exists on these machines: a number that does not say otherwise was made with it.
    return LOCAL_JUDGE_LABEL


def _row_task(row: dict) -> str:
    if row.get("row"):
        return str(row["row"]) + (f" ({row['strategy']})" if row.get("strategy") else "")
    name = str(row.get("retriever") or row.get("strategy") or "evaluation")
    if row.get("alpha") is not None:
        name += f" (α={row['alpha']})"
    if row.get("questions"):
        name += f", {row['questions']} questions"
    return name


def _rows_results(data: dict, artifact: str, source: str) -> list[Result]:
    """Rows (``{"rows": [...]}`` or ``{"rows": {name: row}}``) whose ``model``, ``reranker``, ``adapter``,
    ``generator`` or ``ranker`` is the artifact; a row without ``split`` takes the file's."""
    out = []
    rows = data.get("rows", [])
    if isinstance(rows, dict):
        rows = [{"row": name, **row} if isinstance(row, dict) else row for name, row in rows.items()]
    for row in rows:
        if not isinstance(row, dict) or row.get("status", "ok") != "ok":
            continue
        if not any(_same_artifact(row.get(k), artifact)
                   for k in ("model", "reranker", "adapter", "generator", "ranker")):
            continue
        split = row.get("split", data.get("split"))
        if not split:
            raise CardError(f"{source}: a row for {artifact} has no 'split'")
        split = str(split)
        protocol = row.get("protocol") or protocol_of(split)
        task = _row_task(row)
        for key, name in RETRIEVAL_METRICS.items():
            if isinstance(row.get(key), (int, float)):
                out.append(Result("text-retrieval", task, PROTOCOL_TITLES.get(protocol, protocol), OBLIQA_HUB_ID,
                                  protocol, split, key.replace("@", "_at_"), f"{name} ({protocol} protocol)",
                                  float(row[key]), source))
        answers, label = [], None  # (key, metric name) of the row's answer metrics
        for key, name in ANSWER_METRICS.items():
            if isinstance(row.get(key), (int, float)):
                label = label or _repass_label(row, data)
                answers.append((key, label if key == "repass" else f"{label}: {name}"))
        answers += [(key, name) for key, name in GOLD_CITATION_METRICS.items()  # no judge: against gold passages
                    if isinstance(row.get(key), (int, float))]
        out += [Result("question-answering", task, PROTOCOL_TITLES.get(protocol, protocol), OBLIQA_HUB_ID, protocol,
                       split, key, f"{metric} ({protocol} protocol)", float(row[key]), source)
                for key, metric in answers]
    return out


def _classification_results(data: dict, artifact: str, source: str) -> list[Result]:
    """A flat classifier report (``benchmarks/results/obligation_classifier.json``)."""
    split = str(data.get("split") or "held-out")
    n = data.get("n_test")
    split_name = f"held-out{f' ({n} sentences)' if n else ''}: {split}"
    return [Result("text-classification", "Obligation detection", "ObligationClassificationDataset",
                   "ObligationClassificationDataset", None, split_name, key, name, float(data[key]), source)
            for key, name in CLASSIFICATION_METRICS.items() if isinstance(data.get(key), (int, float))]


def _nli_results(data: dict, artifact: str, source: str) -> list[Result]:
    """The NLI judge report (``benchmarks/results/nli_judge.json``): overall and per-source accuracy."""
    out = []
    if isinstance(data.get("overall_3way_accuracy"), (int, float)):
        out.append(Result("text-classification", "Natural language inference (3-way)", "NLI sources (pooled)",
                          "nli", None, "held-out", "accuracy", "3-way accuracy (all sources)",
                          float(data["overall_3way_accuracy"]), source))
    for name, rec in sorted((data.get("per_source") or {}).items()):
        if isinstance(rec, dict) and isinstance(rec.get("accuracy"), (int, float)):
            out.append(Result("text-classification", "Natural language inference", name, name, None,
                              f"held-out ({rec.get('n', '?')} pairs)", "accuracy", f"accuracy ({name})",
                              float(rec["accuracy"]), source))
    return out


def results_from(data: Any, artifact: str, source: str) -> list[Result]:
    """Every number in one results file that belongs to ``artifact`` (a path such as ``artifacts/nli_judge``)."""
    if isinstance(data, list):  # append-only logs (one record per run) hold no per-artifact rows
        return []
    if not isinstance(data, dict):
        raise CardError(f"{source}: expected a JSON object")
    if "rows" in data:
        return _rows_results(data, artifact, source)
    if "per_source" in data or "overall_3way_accuracy" in data:
        return _nli_results(data, artifact, source)
    if any(k in data for k in CLASSIFICATION_METRICS):
        return _classification_results(data, artifact, source)
    return []


def measured_on(data: Any, fingerprint: str | None, artifact: str = "") -> Any:
    """The part of a results record measured on the weights with this fingerprint (:data:`WEIGHTS_FINGERPRINT`):
    the rows whose own fingerprint (else the file's) equals it, or a flat record whose fingerprint equals it. A row's
    fingerprint is one string or ``{folder: fingerprint}`` (:func:`rirag.io.with_fingerprints`), read for
    ``artifact``. A record that names no fingerprint, or another one, gives nothing: its numbers may belong to other
    weights."""
    if not isinstance(data, dict):
        return data
    top = data.get(WEIGHTS_FINGERPRINT)
    if "rows" not in data:
        return data if fingerprint and top == fingerprint else {}

    def same(row: Any) -> bool:
        if not fingerprint or not isinstance(row, dict):
            return False
        recorded = row.get(WEIGHTS_FINGERPRINT) or top
        if isinstance(recorded, dict):
            return any(_same_artifact(k, artifact) and v == fingerprint for k, v in recorded.items())
        return recorded == fingerprint

    rows = data["rows"]
    rows = {k: r for k, r in rows.items() if same(r)} if isinstance(rows, dict) else [r for r in rows if same(r)]
    return {**data, "rows": rows}


def collect_results(artifact: str, files: Iterable[str | Path], root: str | Path = ".", *,
                    fingerprint: str | None | bool = False) -> list[Result]:
    """Results for ``artifact`` from the given results files (paths relative to ``root``), duplicates dropped. With
    a ``fingerprint`` (a string, or None for weights that have none), only numbers measured on those weights
    (:func:`measured_on`); ``False`` (the default) takes every row that names the artifact."""
    seen, out = set(), []
    for name in files:
        path = Path(root) / name
        data = read_results(path)
        if fingerprint is not False:
            data = measured_on(data, fingerprint or None, artifact)
        for result in results_from(data, artifact, Path(name).as_posix()):
            key = (result.task_name, result.dataset_config, result.dataset_split, result.metric_type, result.value)
            if key not in seen:
                seen.add(key)
                out.append(result)
    return out


def model_index(name: str, results: list[Result]) -> list[dict]:
    """The ``model-index`` front matter: one entry per (task, dataset, split), metrics grouped under it."""
    grouped: dict[tuple, dict] = {}
    for r in results:
        key = (r.task_type, r.task_name, r.dataset_name, r.dataset_type, r.dataset_config, r.dataset_split, r.source)
        if key not in grouped:
            dataset = {"name": r.dataset_name, "type": r.dataset_type}
            if r.dataset_config:
                dataset["config"] = r.dataset_config
            dataset["split"] = r.dataset_split
            grouped[key] = {"task": {"type": r.task_type, "name": r.task_name}, "dataset": dataset, "metrics": []}
        grouped[key]["metrics"].append({"type": r.metric_type, "value": r.value, "name": r.metric_name})
    return [{"name": name, "results": list(grouped.values())}] if grouped else []


def eval_results(results: list[Result]) -> list:
    """The same results as ``huggingface_hub.EvalResult`` objects (to put into an existing card's metadata)."""
    from huggingface_hub import EvalResult

    return [EvalResult(task_type=r.task_type, task_name=r.task_name, dataset_type=r.dataset_type,
                       dataset_name=r.dataset_name, dataset_config=r.dataset_config, dataset_split=r.dataset_split,
                       metric_type=r.metric_type, metric_value=r.value, metric_name=r.metric_name) for r in results]


def results_table(results: list[Result]) -> list[dict]:
    """Rows for a Markdown table in the card body (the same numbers as the model-index)."""
    return [asdict(r) for r in results]


# --------------------------------------------------------------------------------------------------
# Checking a rendered card the way the Hub reads it
# --------------------------------------------------------------------------------------------------

#: The repo types a card belongs to, with the metadata keys it must carry.
REQUIRED_KEYS = {"model": ("license", "library_name", "tags"), "dataset": ("license", "tags"),
                 "space": ("sdk", "license", "tags")}


def check_card(path: str | Path, repo_type: str) -> dict:
    """Parse a README.md as the Hub does; return {status, results, data}. ``status`` is ``ok`` or says what is wrong.

    Model cards with a ``model-index`` are turned into ``EvalResult``s (``results`` counts them).
    """
    from huggingface_hub import DatasetCard, ModelCard, SpaceCard

    cls = {"model": ModelCard, "dataset": DatasetCard, "space": SpaceCard}[repo_type]
    path = Path(path)
    if not path.exists():
        return {"status": "no card", "results": 0, "data": None}
    try:
        card = cls.load(path)
    except Exception as err:  # the Hub's parser: YAML errors, a model-index it cannot read
        return {"status": f"invalid: {err}", "results": 0, "data": None}
    data = card.data.to_dict()
    missing = [k for k in REQUIRED_KEYS[repo_type] if not data.get(k)]
    if missing:
        return {"status": f"missing {', '.join(missing)}", "results": 0, "data": data}
    n = len(card.data.eval_results or []) if repo_type == "model" else 0
    return {"status": "ok", "results": n, "data": data}
