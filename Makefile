# ternmq developer entry points. Every target is idempotent.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv install run demo test lint typecheck unit catalog-coverage bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

venv install: $(STAMP)

## make run: start the network broker (ternmq serve; data in ./data, port 61616)
run: $(STAMP)
	$(VENV)/bin/ternmq serve

## make demo: a short tour on an embedded broker (no server needed)
demo: $(STAMP)
	$(VENV)/bin/ternmq demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest

catalog-coverage: $(STAMP)
	$(PY) tools/catalog_coverage.py

## make test: lint, type-check, run the whole test suite, check catalog coverage
test: lint typecheck unit catalog-coverage

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
