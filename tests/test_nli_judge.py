"""NLI data normalisation on tiny files, and a CrossEncoder training smoke test on a tiny BERT."""

import json

import pytest

from _scoring_fixtures import tiny_bert
from _scripts import load_script
from rirag.scoring import nli_data


def fake_nli_root(tmp_path, n=10):
    root = tmp_path / "nli"
    (root / "snli").mkdir(parents=True)
    rows = ["pairID,sentence1,sentence2,label"]
    labels = ["entailment", "neutral", "contradiction", "-"]
    rows += [f"p{i},The firm keeps records {i}.,The firm has records {i}.,{labels[i % 4]}" for i in range(n)]
    (root / "snli" / "snli_1.0_dev.csv").write_text("\n".join(rows) + "\n")
    (root / "rte").mkdir()
    rte = ["index\tsentence1\tsentence2\tlabel"] + [f"{i}\tA firm {i} must comply.\tA firm complies.\t"
                                                   f"{'entailment' if i % 2 else 'not_entailment'}" for i in range(n)]
    (root / "rte" / "train.tsv").write_text("\n".join(rte) + "\n")
    (root / "rte" / "dev.tsv").write_text(rte[0] + "\n")
    (root / "anli" / "R1").mkdir(parents=True)
    for rnd in ("R1", "R2", "R3"):
        (root / "anli" / rnd).mkdir(parents=True, exist_ok=True)
        for f in ("dev.jsonl", "test.jsonl"):
            (root / "anli" / rnd / f).write_text("\n".join(json.dumps(
                {"context": f"Context {rnd} {f} {i}.", "hypothesis": f"Claim {i}.", "label": "enc"[i % 3]})
                for i in range(3)) + "\n")
    return root


def test_labels_are_normalised_and_dash_rows_dropped(tmp_path):
    root = fake_nli_root(tmp_path)
    snli = list(nli_data.iter_source(str(root), "snli"))
    assert len(snli) == 8  # rows 3 and 7 carry '-' (no gold label) and are dropped
    assert {r["label"] for r in snli} == {"entailment", "neutral", "contradiction"}
    anli = list(nli_data.iter_source(str(root), "anli"))
    assert {r["label"] for r in anli} == {"entailment", "neutral", "contradiction"} and len(anli) == 18
    with pytest.raises(ValueError, match="unknown NLI label"):
        nli_data.normalise_label("maybe", "x")


def test_splits_hold_out_per_source_and_rte_is_test_only(tmp_path):
    root = fake_nli_root(tmp_path, n=20)
    splits = nli_data.build_splits(str(root), sources=("snli", "rte", "anli"), test_per_source=3)
    test_sources = [r["source"] for r in splits["test"]]
    assert test_sources.count("snli") == 3 and test_sources.count("rte") == 3 and test_sources.count("anli") == 3
    assert not any(r["source"] == "rte" for r in splits["train"])
    train_pairs = {(r["premise"], r["hypothesis"]) for r in splits["train"]}
    assert not train_pairs & {(r["premise"], r["hypothesis"]) for r in splits["test"]}


def add_lingnli(root, premises, n_own=12):
    """A LingNLI-like source whose premises partly repeat other sources' premises (as LingNLI's come from MNLI)."""
    (root / "lingnli").mkdir()
    rows = [{"premise": p.upper(), "hypothesis": f"Borrowed claim {i}.", "label": "neutral"}
            for i, p in enumerate(premises)]
    rows += [{"premise": f"Own premise {i // 3}.", "hypothesis": f"Own claim {i}.", "label": "entailment"}
             for i in range(n_own)]
    (root / "lingnli" / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_held_out_parts_are_disjoint_from_training_across_sources_and_stable(tmp_path):
    root = fake_nli_root(tmp_path, n=40)
    snli = list(nli_data.iter_source(str(root), "snli"))
    add_lingnli(root, [r["premise"] for r in snli])  # every SNLI premise reappears (upper-cased) in LingNLI
    splits = nli_data.build_splits(str(root), sources=("snli", "lingnli", "anli"), test_per_source=6, seed=3)
    norm = nli_data.normalise_text
    test_premises = {norm(r["premise"]) for r in splits["test"]}
    assert not {norm(r["premise"]) for r in splits["train"]} & test_premises
    # the LingNLI rows that borrow a held-out SNLI premise were dropped, the others kept
    borrowed = [r for r in splits["train"] if r["source"] == "lingnli" and r["hypothesis"].startswith("Borrowed")]
    held_snli = {norm(r["premise"]) for r in splits["test"] if r["source"] == "snli"}
    held_ling = {norm(r["premise"]) for r in splits["test"] if r["source"] == "lingnli"}
    assert held_snli
    assert {norm(r["premise"]) for r in borrowed} == {norm(r["premise"]) for r in snli} - held_snli - held_ling
    # same seed, same parts; a source's part does not move when another source is left out; another seed differs
    again = nli_data.build_splits(str(root), sources=("snli", "lingnli", "anli"), test_per_source=6, seed=3)
    assert again == splits
    alone = nli_data.build_splits(str(root), sources=("anli",), test_per_source=6, seed=3)
    assert alone["test"] == [r for r in splits["test"] if r["source"] == "anli"]
    other = nli_data.build_splits(str(root), sources=("snli", "lingnli", "anli"), test_per_source=6, seed=4)
    assert other["test"] != splits["test"]


def test_conflicting_labels_are_dropped_and_caps_apply(tmp_path):
    root = fake_nli_root(tmp_path, n=40)
    add_lingnli(root, [], n_own=30)
    with open(root / "lingnli" / "train.jsonl", "a") as f:
        f.write(json.dumps({"premise": "Own premise 0.", "hypothesis": "Own claim 0.",
                            "label": "contradiction"}) + "\n")
    rows = nli_data.load_source(str(root), "lingnli")
    assert len(rows) == 29 and not any(r["hypothesis"] == "Own claim 0." for r in rows)
    splits = nli_data.build_splits(str(root), sources=("lingnli", "snli"), test_per_source=3, train_caps="lingnli=5")
    assert sum(r["source"] == "lingnli" for r in splits["train"]) == 5
    with pytest.raises(ValueError, match="source=N"):
        nli_data.parse_caps("lingnli:5")
    with pytest.raises(ValueError, match="not loaded"):
        nli_data.build_splits(str(root), sources=("snli",), train_caps="lingnli=5")


def load_judge_module():
    return load_script("train/nli_judge.py")


def test_max_length_comes_from_the_data_and_is_capped():
    module = load_judge_module()
    lengths = list(range(1, 101))
    assert module.length_from_data(lengths, 90, 512) == 91
    assert module.length_from_data(lengths, 99, 64) == 64
    with pytest.raises(ValueError, match="no training pairs"):
        module.length_from_data([], 99, 64)


def test_length_grouped_batches_have_similar_lengths():
    import torch

    module = load_judge_module()
    lengths = [5, 100] * 1000
    factory = module.length_grouped_batch_sampler(lengths)
    sampler = factory(list(range(len(lengths))), batch_size=8, drop_last=False,
                      generator=torch.Generator().manual_seed(0))
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    # random batches of 8 would almost all mix 5 and 100; length-grouped ones mix only at megabatch boundaries
    mixed = sum(len({lengths[i] for i in b}) > 1 for b in batches)
    assert mixed <= 0.05 * len(batches)
    with pytest.raises(ValueError, match="does not match"):
        factory(list(range(3)), batch_size=8, drop_last=False)


def test_per_source_accuracy_handles_two_way_rte():
    module = load_judge_module()
    rows = [{"source": "rte", "label": "not_entailment"}, {"source": "rte", "label": "entailment"},
            {"source": "snli", "label": "neutral"}, {"source": "snli", "label": "contradiction"}]
    acc = module.per_source_accuracy(rows, ["contradiction", "neutral", "neutral", "neutral"])
    assert acc["rte"]["accuracy"] == 0.5 and acc["snli"]["accuracy"] == 0.5


def test_training_smoke_changes_weights_and_reloads(tmp_path):
    import torch
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    module = load_judge_module()
    root = fake_nli_root(tmp_path, n=40)
    base = tiny_bert("nli_base", (("0", "LABEL_0"), ("1", "LABEL_1"), ("2", "LABEL_2")), seed=7, head_scale=1.0)
    out = tmp_path / "judge"
    args = module.NLIJudgeArguments(data_dir=str(root), model_name_or_path=base, sources="snli,anli,rte",
                                    test_per_source=4, max_train_per_source=None, max_length=None,
                                    max_length_cap=24, freeze_embeddings=True, in_domain_train_per_type=0,
                                    probe_per_type=0, results_path=str(tmp_path / "res.json"))
    targs = CrossEncoderTrainingArguments(output_dir=str(out), max_steps=3, per_device_train_batch_size=8,
                                          learning_rate=5e-3, report_to="none", use_cpu=True, save_strategy="no",
                                          disable_tqdm=True)
    before = AutoModelForSequenceClassification.from_pretrained(base).state_dict()
    module.main(args, targs)
    res = json.loads((tmp_path / "res.json").read_text())
    assert set(res["per_source"]) == {"snli", "anli", "rte"}
    assert res["max_length"] <= 24 and res["train_steps"] == 3 and res["train_pairs_per_second"] > 0
    # the precision chosen for this machine and the CPU capability it was chosen on
    from rirag.training.precision import cpu_native_bf16

    assert res["compute_precision"] == ("bf16" if cpu_native_bf16() else "fp32") and "precision" not in res
    assert res["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert res["estimated_train_minutes"] is not None
    model = AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert model.config.id2label == {0: "contradiction", 1: "entailment", 2: "neutral"}
    after = model.state_dict()
    changed = {k for k in before if k in after and not torch.equal(before[k], after[k])}
    assert any("encoder.layer" in k for k in changed) and "bert.embeddings.word_embeddings.weight" not in changed
    tok = AutoTokenizer.from_pretrained(out)
    batch = tok(["A firm keeps records."], ["A firm has records."], return_tensors="pt")
    again = AutoModelForSequenceClassification.from_pretrained(out).eval()
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, again(**batch).logits)
    # judged (and saved for RePASs) at the length it was trained at
    assert res["inference_max_length"] == res["max_length"] == tok.model_max_length
    # its card: card data beside the weights, the README rendered from it by model_cards/nli_judge.md.j2
    from rirag.hub.card_data import load_card_data

    card = load_card_data(out)
    text = (out / "README.md").read_text()
    assert card.KIND == "judge" and card.base_model == base and card.render() == text
    assert f"base_model: {base}" in text and "library_name: sentence-transformers" in text
    assert card.hyperparameters["freeze_embeddings"] is True and card.hyperparameters["learning_rate"] == 5e-3
    assert "group_by_length" not in card.hyperparameters and "`freeze_embeddings`: True" in text
    assert {m["name"] for m in card.model_index[0]["results"][0]["metrics"]} == {"3-way accuracy (all sources)"}

    # --eval_only: same weights, a new inference length, the training record kept, eval numbers rewritten
    res_path = tmp_path / "res.json"
    stale = dict(res, overall_3way_accuracy=-1.0, n_test=-1)
    res_path.write_text(json.dumps(stale))
    args.eval_only, args.inference_max_length = True, 40  # above the training length, within the position table
    module.main(args, targs)
    res2 = json.loads(res_path.read_text())
    assert res2["train_steps"] == 3 and res2["train_seconds"] == res["train_seconds"] and "eval_command" in res2
    assert res2["compute_precision"] == res["compute_precision"] and res2["cpu_capability"] == res["cpu_capability"]
    assert res2["inference_max_length"] == 40 and 0.0 <= res2["overall_3way_accuracy"] <= 1.0
    assert res2["n_test"] == res["n_test"] > 0  # counted again, not copied from the record
    assert AutoTokenizer.from_pretrained(out).model_max_length == 40
    again_card = load_card_data(out)  # re-saved: the training run's hyperparameters kept, the new length recorded
    assert again_card.hyperparameters == card.hyperparameters and again_card.settings["inference_max_length"] == 40
    reloaded = AutoModelForSequenceClassification.from_pretrained(out).state_dict()
    assert all(torch.equal(after[k], reloaded[k]) for k in after)
    # --save_model false only measures: the saved judge keeps its length
    args.inference_max_length, args.save_model = 32, False
    module.main(args, targs)
    assert json.loads(res_path.read_text())["inference_max_length"] == 32
    assert AutoTokenizer.from_pretrained(out).model_max_length == 40


def test_a_run_over_its_time_guard_stops_after_the_first_steps_and_saves_nothing(tmp_path, caplog):
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    from rirag.training.runner import TrainingRefused, run_trainer

    module = load_judge_module()
    root = fake_nli_root(tmp_path, n=40)
    base = tiny_bert("nli_guard", (("0", "LABEL_0"), ("1", "LABEL_1"), ("2", "LABEL_2")), seed=7, head_scale=1.0)
    out = tmp_path / "judge"
    args = module.NLIJudgeArguments(data_dir=str(root), model_name_or_path=base, sources="snli,anli,rte",
                                    test_per_source=4, max_length_cap=24, in_domain_train_per_type=0,
                                    probe_per_type=0, results_path=str(tmp_path / "res.json"),
                                    max_train_minutes=1e-6, estimate_steps=1, precision="fp32")
    targs = CrossEncoderTrainingArguments(output_dir=str(out), max_steps=50, per_device_train_batch_size=2,
                                          report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True)
    with pytest.raises(TrainingRefused, match=r"50 steps at .* over the 1e-06-minute guard"):
        module.main(args, targs)
    assert not (out.exists() and any(out.iterdir())) and not (tmp_path / "res.json").exists()  # no judge, no results
    assert run_trainer(module.main, args, targs) == 2  # the script's exit status
    assert "allow_over_time" in caplog.records[-1].getMessage()


def test_eval_only_without_a_trained_judge_says_how_to_train(tmp_path):
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    module = load_judge_module()
    root = fake_nli_root(tmp_path, n=40)
    args = module.NLIJudgeArguments(data_dir=str(root), sources="snli", test_per_source=4, in_domain_train_per_type=0,
                                    probe_per_type=0, results_path=None, eval_only=True)
    targs = CrossEncoderTrainingArguments(output_dir=str(tmp_path / "missing"), report_to="none", use_cpu=True)
    with pytest.raises(FileNotFoundError, match="train it first"):
        module.main(args, targs)


def test_bad_nli_files_name_the_file_and_field(tmp_path):
    root = fake_nli_root(tmp_path)
    for source in ("sick", "mnli"):  # a CSV source lists its folder eagerly: same clear error
        with pytest.raises(FileNotFoundError, match=f"folder .*{source} not found"):
            list(nli_data.iter_source(str(root), source))
    (root / "lingnli").mkdir()
    (root / "lingnli" / "x.jsonl").write_text('{"premise": "P.", "hypothesis": "H.", "label": "neutral"}\n{broken\n')
    with pytest.raises(ValueError, match=r"x.jsonl: line 2 is not valid JSON"):
        list(nli_data.iter_source(str(root), "lingnli"))
    (root / "lingnli" / "x.jsonl").write_text('{"premise": "P.", "hypothesis": "H."}\n')
    with pytest.raises(ValueError, match="lacks the field 'label'"):
        list(nli_data.iter_source(str(root), "lingnli"))
