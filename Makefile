# groove — developer entry points. `make test` alone builds everything a test needs.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

GROOVE  := $(BIN)/groove
DEMO_KB := golden

.PHONY: install test lint demo eval eval-datasets suite bench bench-backends bench-serve clean lock

# The benchmarks read public collections kept outside the checkout, named by environment
# variables (bench/README.md): GROOVE_DATASETS, the folder holding cisi/ and jsquad/;
# GROOVE_MIRRORS, the folder of <owner>+<name>/repo git snapshots the suite's other collections
# are rebuilt from (bench/collections.json names each repository and commit). A target that
# needs one stops here, before installing anything, when it is unset.
NEEDS_DATASETS := bench eval-datasets suite bench-backends
NEEDS_MIRRORS  := suite
ifneq ($(filter $(NEEDS_DATASETS),$(MAKECMDGOALS)),)
ifeq ($(strip $(GROOVE_DATASETS)),)
$(error make $(firstword $(filter $(NEEDS_DATASETS),$(MAKECMDGOALS))): set GROOVE_DATASETS to the folder holding cisi/ and jsquad/ (see bench/README.md))
endif
endif
ifneq ($(filter $(NEEDS_MIRRORS),$(MAKECMDGOALS)),)
ifeq ($(strip $(GROOVE_MIRRORS)),)
$(error make suite: set GROOVE_MIRRORS to the folder of <owner>+<name>/repo git snapshots (see bench/README.md))
endif
endif
export GROOVE_DATASETS GROOVE_MIRRORS

# editable_mode=compat puts the checkout on sys.path with a plain .pth line: the default mode's
# import hook adds a fixed cost to every interpreter start, a visible share of a cold
# `groove search` that an installed wheel does not pay
# (bench/results/code-notes.md#editable-install). setuptools is pinned in pyproject.toml, which
# keeps this mode.
EDITABLE := --config-settings editable_mode=compat -e

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt $(EDITABLE) '.[dev]'
	touch $(STAMP)

# `make demo` runs what a user installs (`pipx install .`): the runtime dependencies only, in
# a venv of their own, so the demo neither needs nor pulls the test and lint tools
RUN_VENV  := .venv-run
RUN_STAMP := $(RUN_VENV)/.installed
RUN       := $(RUN_VENV)/bin/groove

$(RUN_STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(RUN_VENV)
	$(RUN_VENV)/bin/pip install --quiet -c constraints.txt $(EDITABLE) .
	touch $(RUN_STAMP)

install: $(STAMP)  ## create .venv and install groove with its dev tools

test: $(STAMP)  ## run the test suite (installs first when needed)
	$(BIN)/pytest

lint: $(STAMP)  ## ruff + mypy --strict
	$(BIN)/ruff check .
	$(BIN)/mypy --strict groove_cli

# demo compiles groove's bytecode first, as an installed package has it (PYTHONDONTWRITEBYTECODE
# would otherwise make every command compile its modules from source).
demo: $(RUN_STAMP)  ## runtime install; resolve the default model, index the sample KB, two searches
	$(RUN_VENV)/bin/python -m compileall -q groove_cli > /dev/null
	$(RUN) models resolve multilingual-e5-small
	$(RUN) index $(DEMO_KB)
	$(RUN) search --kb-path $(DEMO_KB) --format text --limit 3 "how do retry budgets stop retry storms?"
	$(RUN) search --kb-path $(DEMO_KB) --format text --limit 3 "障害が起きたときの連絡手順"

eval: $(STAMP)  ## score retrieval on the sample KB against its golden file
	$(GROOVE) index --kb-path $(DEMO_KB) --quiet
	$(GROOVE) eval --kb-path $(DEMO_KB)

eval-datasets: $(STAMP)  ## quality on the CISI and JSQuAD collections -> bench/results/quality.*
	$(BIN)/pip install --quiet -c constraints.txt $(EDITABLE) '.[bench]'
	$(BIN)/python bench/eval_datasets.py
	$(BIN)/python bench/baseline_commit.py  # CISI before issue 13, on this machine
	$(BIN)/python bench/eval_datasets.py --render-only

suite: $(STAMP)  ## 12 public collections: peers, groove legs, LOCO fusion; fresh ones apart -> bench/results/suite.*
	$(BIN)/pip install --quiet -c constraints.txt $(EDITABLE) '.[bench]'
	$(BIN)/python bench/suite_collections.py
	$(BIN)/python bench/suite.py
	$(BIN)/python bench/suite.py --fresh

bench: $(STAMP)  ## speed benchmarks -> bench/results/*.json + .md
	$(BIN)/python bench/bench_models.py
	$(BIN)/python bench/bench_index.py
	$(BIN)/python bench/bench_search.py
	$(BIN)/python bench/bench_tune.py

bench-serve: $(STAMP)  ## groove serve at 10k chunks (issue 27) -> bench/results/serve.*
	$(BIN)/python bench/bench_serve.py

bench-backends: $(STAMP)  ## SQLite vs Postgres + pgvector (issue 18) -> bench/results/backends.*
	$(BIN)/python bench/bench_backends.py
	$(BIN)/python bench/bench_backends_targets.py  # recall@50 at 100k near-real vectors, full-KB index

lock: $(STAMP)  ## re-pin constraints.txt from the current .venv (after a deliberate upgrade)
	$(BIN)/pip install --quiet $(EDITABLE) '.[dev,bench]'
	{ sed -n '/^#/p' constraints.txt; $(BIN)/pip freeze --exclude-editable; } > constraints.txt.new && mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) $(RUN_VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
