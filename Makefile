# ternmq developer entry points. Every target is idempotent.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# What running the broker needs (no test tools): make run, make demo.
RUNSTAMP := $(VENV)/.installed-run
# The spark extra (pyspark builds a ~450 MB wheel on first install): only what needs it.
SPARK  := $(VENV)/.installed-spark
# The JavaScript clients the tests drive (@stomp/stompjs in Chromium): npm ci into tests/js.
JSDEPS := tests/js/node_modules/.installed

.PHONY: venv install run demo pipeline-demo test lint typecheck unit catalog-coverage bench bench-peers clean sysdeps wheel-compiled test-compiled

$(RUNSTAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(RUNSTAMP)

$(STAMP): $(RUNSTAMP)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(SPARK): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,spark]'
	touch $(SPARK)

# What the tests drive besides Python (PostgreSQL, Chromium, npm, ActiveMQ's jars): from
# Debian where missing; nothing to do when all is there.
sysdeps:
	bash tools/system-deps.sh

$(JSDEPS): tests/js/package.json tests/js/package-lock.json | sysdeps
	npm ci --prefix tests/js --silent --no-audit --no-fund
	touch $(JSDEPS)

venv install: $(SPARK)

## make run: start the network broker (ternmq serve; data in ./data, port 61616)
run: $(RUNSTAMP)
	$(VENV)/bin/ternmq serve

## make demo: a short tour on an embedded broker (no server needed)
demo: $(RUNSTAMP)
	$(VENV)/bin/ternmq demo

## make pipeline-demo: the example Spark pipeline (needs Java 17; see README)
pipeline-demo: $(SPARK)
	$(VENV)/bin/ternmq pipeline-demo

lint: $(SPARK)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(SPARK)
	$(VENV)/bin/mypy

# The suite runs on two processes (pytest-xdist, a test file at a time per worker; each worker
# has its own PostgreSQL test server). TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
unit: $(SPARK) sysdeps $(JSDEPS)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

catalog-coverage: $(SPARK)
	$(PY) tools/catalog_coverage.py

## make test: lint, type-check, run the whole test suite, check catalog coverage
test: lint typecheck unit catalog-coverage

# The compiled variant (mypyc, see docs/performance.md "Compiled hot modules"): a release wheel
# built with TERNMQ_MYPYC=1 into build/wheel, installed in its own venv with the dev venv's
# versions of everything else (pip freeze as constraints).
CVENV := build/compiled-venv
CPY   := $(CVENV)/bin/python

## make wheel-compiled: build/wheel/ternmq-*.whl with the hot modules compiled (needs gcc)
wheel-compiled: $(STAMP)
	rm -rf build/wheel
	TERNMQ_MYPYC=1 $(PY) -m pip wheel --quiet --no-deps -w build/wheel .

## make test-compiled: that wheel installed in build/compiled-venv, and the focused suite run
## against the INSTALLED package (the conformance suite over vm://, the batch unit tests)
test-compiled: wheel-compiled
	rm -rf $(CVENV)
	$(PY) -m venv $(CVENV)
	$(PY) -m pip freeze --exclude-editable > build/constraints.txt
	$(CPY) -m pip install --quiet -c build/constraints.txt build/wheel/ternmq-*.whl \
	    pytest pytest-timeout pytest-xdist hypothesis
	$(CPY) -c "import sys, ternmq; print(ternmq.__file__, ternmq.compiled()); \
	    sys.exit('not the compiled install' if not ternmq.compiled() else 0)"
	TERNMQ_CONFORMANCE_TRANSPORTS=vm TERNMQ_CONFORMANCE_POSTGRES=off \
	    $(CPY) -m pytest -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests/conformance \
	    tests/unit/test_handle_batch.py tests/unit/test_variant.py \
	    tests/unit/test_hand_over.py tests/unit/test_acked_when_sent.py \
	    tests/unit/test_deferred_insert.py

bench: $(SPARK)
	$(PY) -m benchmarks

## make bench-peers: the STOMP side-by-side table against ActiveMQ 5.17 and RabbitMQ 3.10
## (as root; ../shared/bench/setup-peers.sh install first; see docs/performance.md)
bench-peers: $(RUNSTAMP)
	TERNMQ_PYTHON=$(abspath $(PY)) benchmarks/stomp_peers.sh

clean:
	rm -rf $(VENV) tests/js/node_modules build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
