# groove — developer entry points. `make test` alone builds everything a test needs.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: install test lint demo eval eval-datasets bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install groove with its dev tools

test: $(STAMP)  ## run the test suite (installs first when needed)
	$(BIN)/pytest

lint: $(STAMP)  ## ruff + mypy --strict
	$(BIN)/ruff check .
	$(BIN)/mypy --strict groove_cli

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
