"""RePASsScorer.score in stages gives exactly what the single-function scorer gave; results carry a signature.

``_old_score`` and ``_old_coverage_rounds`` are the scorer's code before it was split (commit 5ea324c), kept here
only as the oracle: the staged scorer must give the same per-item values, means, skips and truncation counts, to
the last bit.
"""

import json

import numpy as np
import pytest

from _scoring_fixtures import NLI_LABELS, all_obligations_model, tiny_bert, tiny_models
from rirag.scoring import core
from rirag.scoring.classifier import CUT_FIRST, CUT_SECOND, NOT_TRUNCATED, clear_caches
from rirag.scoring.constants import (
    CONTRADICTION,
    ENTAILMENT,
    LOCAL_JUDGE_LABEL,
    OFFICIAL_COVERAGE_MODEL,
    OFFICIAL_NLI_MODEL,
    PASSAGE_JOIN,
    ROUND_DECIMALS,
)
from rirag.scoring.repass import (
    SCORE_KEYS,
    TRUNCATION_KEYS,
    RePASsResult,
    RePASsScorer,
    _truncation,
    normalise_inputs,
    summarise,
)
from rirag.scoring.signature import judge_label, parse_signature, repass_signature, splitter_name

PASSAGE = "Firms must keep records for six years. The sky is blue. Firms must report to the regulator."
LONG = " ".join(["firms must keep records"] * 30) + "."  # > 64 tokens: every kind of input gets cut
ANSWERS = [
    "Firms must keep records for six years. The sky is blue.",
    "",
    "An authorised person must notify the regulator within six days. Client money is held separately.",
    "It is not green.",
    None,
    "Firms must comply with this rule. Mr. Smith agreed. The grass is green.",
    "Firms must keep records.",
    LONG + " Firms must report to the regulator.",
    "Client money must be held separately. " + LONG,
]
PASSAGES = [
    [PASSAGE, "Client money must be held separately."],
    [PASSAGE],
    "An authorised person must notify the FSRA within days. It is green.",
    [PASSAGE],
    [PASSAGE],
    ["Firms must comply with the rule.", "A firm should report to the regulator. Mr. Smith agreed."],
    [],  # no passage text
    [PASSAGE, LONG],
    ["Client money must be held separately.", "Firms must report to the regulator."],
]


# -- the scorer before the split (verbatim but for `self` -> `scorer`) --------------------------------------------
def _old_split_item(scorer, answer, passages, split):
    if scorer.config.mode == "reference":
        passage_sentences = list(split(PASSAGE_JOIN.join(passages)))
    else:
        passage_sentences = [s for p in passages for s in split(p)]
    return passage_sentences, list(split(answer))


def _old_score(scorer, predictions, passages):
    from rirag.scoring.models import label_index, obligation_index
    from rirag.text.sentences import get_splitter

    cfg = scorer.config
    items = normalise_inputs(predictions, passages)
    split = get_splitter(cfg.sentence_splitter)
    reference = cfg.mode == "reference"

    splits = []
    no_passage_text = []
    for i, (answer, item_passages) in enumerate(items):
        if answer is None:
            splits.append(None)
            continue
        p_sents, a_sents = _old_split_item(scorer, answer, item_passages, split)
        if not p_sents:
            no_passage_text.append(i)
        splits.append((p_sents, a_sents))
    scored = [s for s in splits if s is not None]

    to_classify = list(dict.fromkeys(s for p, a in scored for s in (p + a if reference else p)))
    is_obligation = {}
    ob = None
    if to_classify:
        ob = scorer._classifier(cfg.obligation_model, "obligation")
        ob_idx = obligation_index(ob.config)
        probs = ob.probabilities([(s, None) for s in to_classify], desc="obligations")
        is_obligation = {k[0]: int(np.argmax(v)) == ob_idx for k, v in probs.items()}

    nli_inputs = [(p, a) for ps, as_ in scored for p in ps for a in as_]
    nli_probs = {}
    nli = None
    if nli_inputs:
        nli = scorer._classifier(cfg.nli_model, "nli")
        e_idx, c_idx = label_index(nli.config, ENTAILMENT), label_index(nli.config, CONTRADICTION)
        nli_probs = nli.probabilities(nli_inputs, desc="NLI pairs")

    def coverage_inputs(ps, as_):
        obligations = [p for p in ps if is_obligation[p]]
        candidates = [a for a in as_ if is_obligation[a]] if reference else as_
        return obligations, candidates, [[(a, o) for a in candidates] for o in obligations]

    cov_per_item = [coverage_inputs(ps, as_) for ps, as_ in scored]
    covered, tried = _old_coverage_rounds(scorer, cov_per_item, reference)

    per_item = {k: [] for k in SCORE_KEYS}
    skipped = []
    truncations = dict.fromkeys(TRUNCATION_KEYS, 0)
    truncated_items = []
    cov = scorer._classifiers.get(f"coverage:{cfg.coverage_model}")
    scored_iter = iter(enumerate(zip(scored, cov_per_item)))
    for i, s in enumerate(splits):
        if s is None:
            skipped.append(i)
            for k in SCORE_KEYS:
                per_item[k].append(None)
            continue
        item_no, ((ps, as_), (obligations, candidates, rows)) = next(scored_iter)
        if ps and as_:
            probs = np.stack([nli_probs[(p, a)] for p in ps for a in as_]).reshape(len(ps), len(as_), -1)
            e_matrix, c_matrix = probs[..., e_idx], probs[..., c_idx]
        else:
            e_matrix = c_matrix = np.zeros((len(ps), len(as_)))
        hits = (np.asarray(covered[item_no], dtype=bool).reshape(len(obligations), 1) if candidates
                else np.zeros((len(obligations), 0), dtype=bool))
        result = core.score_item(e_matrix, c_matrix, hits, ROUND_DECIMALS)
        for k in SCORE_KEYS:
            per_item[k].append(result[k])
        item_truncated = False
        if nli is not None:
            truncations["nli"] += sum(_truncation(nli, (p, a)) != NOT_TRUNCATED for p in ps for a in as_)
        if ob is not None:
            truncations["obligation"] += sum(_truncation(ob, (x, None)) != NOT_TRUNCATED
                                             for x in dict.fromkeys(ps + as_ if reference else ps))
        if cov is not None:
            for key in tried[item_no]:
                code = _truncation(cov, key)
                if code == CUT_FIRST:
                    truncations["coverage"] += 1
                elif code == CUT_SECOND:
                    truncations["coverage_obligation"] += 1
                item_truncated |= code != NOT_TRUNCATED
        if item_truncated:
            truncated_items.append(i)

    out = summarise(per_item, skipped)
    out["no_passage_text"] = no_passage_text
    out["truncations"] = truncations
    out["truncated_items"] = truncated_items
    return out


def _old_coverage_rounds(scorer, cov_per_item, reference):
    from rirag.scoring.models import label_index

    covered = [[False] * len(obligations) for obligations, _, _ in cov_per_item]
    tried = [[] for _ in cov_per_item]
    pending = [(i, k) for i, (obligations, candidates, _) in enumerate(cov_per_item) if candidates
               for k in range(len(obligations))]
    if not pending:
        return covered, tried
    cov = scorer._classifier(scorer.config.coverage_model, "coverage")
    cov_idx = label_index(cov.config, ENTAILMENT)
    j = 0
    while pending:
        inputs = [cov_per_item[i][2][k][j] for i, k in pending]
        probs = cov.probabilities(inputs, desc=f"coverage round {j + 1}")
        batch = np.stack([probs[x] for x in inputs])[:, None, :]
        hits = core.coverage_hits(batch, cov_idx, scorer.config.threshold, require_top_label=reference)[:, 0]
        still = []
        for (i, k), x, hit in zip(pending, inputs, hits):
            tried[i].append(x)
            if hit:
                covered[i][k] = True
            elif j + 1 < len(cov_per_item[i][1]):
                still.append((i, k))
        pending, j = still, j + 1
    return covered, tried


# -- equivalence ---------------------------------------------------------------------------------------------------
def _scorer(**kwargs):
    return RePASsScorer(**kwargs, device="cpu", show_progress=False, batch_size=3)


@pytest.mark.parametrize("obligations", ["random", "all"])
@pytest.mark.parametrize("mode", ["reference", "paper"])
def test_staged_score_equals_the_former_single_function(mode, obligations):
    models = tiny_models()
    if obligations == "all":  # every sentence an obligation: coverage runs for every item, several rounds
        models["obligation_model"] = all_obligations_model()
    clear_caches()
    before = _old_score(_scorer(**models, mode=mode), ANSWERS, PASSAGES)
    clear_caches()
    after = _scorer(**models, mode=mode).score(ANSWERS, PASSAGES)
    assert isinstance(after, RePASsResult)
    assert {k: v for k, v in after.to_dict().items() if k != "signature"} == before  # exact: no tolerance
    for k in SCORE_KEYS:
        assert after[k] == before[k] and after.per_item[k] == before["per_item"][k], k
    # the cases are not trivial: skips, an item without passage text, cuts of every kind (all obligations), both
    # coverage verdicts somewhere
    assert before["skipped"] == [1, 4] and before["no_passage_text"] == [6] and before["n_scored"] == 7
    assert before["truncations"]["nli"] > 0 and before["truncations"]["obligation"] > 0
    if obligations == "all":
        assert before["truncations"]["coverage"] > 0 and before["truncations"]["coverage_obligation"] > 0
        assert before["truncated_items"]
        coverage = {v for v in before["per_item"]["obligation_coverage"] if v is not None}
        assert min(coverage) < max(coverage)


def test_score_dataset_reuses_the_tail_on_tiny_models():
    from datasets import Dataset

    models = tiny_models()
    models["obligation_model"] = all_obligations_model()
    scorer = _scorer(**models)
    expected = scorer.score(ANSWERS, PASSAGES)
    answers = [a or "" for a in ANSWERS]  # Arrow needs strings; "" is skipped as None is
    passages = [[p] if isinstance(p, str) else p for p in PASSAGES]
    got = scorer.score_dataset(Dataset.from_dict({"Answer": answers, "RetrievedPassages": passages}))
    assert isinstance(got, RePASsResult) and got == expected
    assert got.truncations["coverage"] > 0 and got.signature == scorer.signature


# -- the result type and its signature ------------------------------------------------------------------------
def test_result_is_a_mapping_with_the_former_keys_and_a_signature():
    clear_caches()
    result = _scorer(**tiny_models()).score(ANSWERS[:3], PASSAGES[:3])
    assert list(result) == ["entailment", "contradiction", "obligation_coverage", "repass", "per_item", "skipped",
                            "n_scored", "no_passage_text", "truncations", "truncated_items", "signature"]
    plain = result.to_dict()
    assert type(plain) is dict and plain == result and dict(result) == plain
    assert json.loads(json.dumps(plain)) == plain
    assert result["repass"] == result.repass and result.get("nope") is None
    with pytest.raises(KeyError):
        result["nope"]
    assert result != {**plain, "repass": -1.0}


def test_signature_names_the_models_actually_used():
    models = tiny_models()
    other = tiny_bert("coverage_other", NLI_LABELS, seed=7, head_scale=200.0)
    models["coverage_model"] = other
    models["obligation_model"] = all_obligations_model()  # every item needs the coverage model
    scorer = _scorer(**models, mode="paper")
    result = scorer.score(ANSWERS[:3], PASSAGES[:3])
    fields = parse_signature(result["signature"])
    loaded = {key.split(":", 1)[0]: classifier.name for key, classifier in scorer._classifiers.items()}
    assert loaded == {"nli": models["nli_model"], "obligation": models["obligation_model"], "coverage": other}
    assert {role: fields[role] for role in loaded} == loaded
    assert fields["mode"] == "paper" and fields["precision"] == "float32" and fields["splitter"] == "punkt"
    assert fields["threshold"] == "0.7"
    from rirag import __version__

    assert fields["version"] == __version__
    assert result["signature"] == scorer.signature == repass_signature(scorer.config)
    assert result["signature"].startswith("repass:mode=paper|nli=")
    assert judge_label(result["signature"]) == LOCAL_JUDGE_LABEL
    # another model, mode or precision: another signature
    assert _scorer(**tiny_models()).signature != scorer.signature
    assert _scorer(**models, mode="reference").signature != scorer.signature
    assert parse_signature(_scorer(**models, precision="int8").signature)["precision"] == "int8"


def test_signature_fields_labels_and_escaping():
    from types import SimpleNamespace

    from rirag.text.sentences import nltk_split, punkt_split

    def my_splitter(text):
        return [text]

    assert splitter_name("punkt") == splitter_name(None) == splitter_name(punkt_split) == "punkt"
    assert splitter_name(nltk_split) == "nltk"
    assert splitter_name(my_splitter).endswith("test_signature_fields_labels_and_escaping.<locals>.my_splitter")
    official = SimpleNamespace(mode="reference", nli_model=OFFICIAL_NLI_MODEL, coverage_model=OFFICIAL_COVERAGE_MODEL,
                               obligation_model="a|b=c%d", precision="float32", sentence_splitter="punkt",
                               threshold=0.7)
    sig = repass_signature(official)
    assert parse_signature(sig)["obligation"] == "a|b=c%d"  # separators in an id survive the round trip
    assert judge_label(sig) == "RePASs"
    assert judge_label(sig.replace("deberta-large-mnli", "other")) == LOCAL_JUDGE_LABEL
    for bad in ("", "bertscore:nli=x", "repass:mode", "repass:mode=reference"):
        with pytest.raises(ValueError):
            parse_signature(bad)
