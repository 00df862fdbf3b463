# tierlog: `make demo` and `make test` are the whole quick start on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench fuzz clean
.PHONY: soak

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,lint,openai-agents,browser,postgres,fast]'
	touch $(STAMP)

install: $(STAMP)  ## virtual environment with tierlog, test and lint tools

demo: install  ## replay both SPEC incidents into ./tierlog-demo.db
	$(BIN)/tierlog demo

test: install  ## the test suite (a bounded slice of the crash and fuzz campaigns)
	$(BIN)/python -m pytest -q

lint: install  ## ruff, mypy --strict, and the report's script parsed by node (when installed)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	@if command -v node >/dev/null; then node --check eventstore/_report/report.js; \
	else echo "node not found: eventstore/_report/report.js not checked"; fi

bench: install  ## benchmarks against raw SQLite and the eventsourcing library
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[bench]'
	$(BIN)/python bench/run.py
	$(BIN)/python -m bench.ceiling

fuzz: install  ## the long campaigns: many more Hypothesis examples and crash loops
	TIERLOG_CAMPAIGN=long $(BIN)/python -m pytest -q tests/shell/test_properties.py tests/invariants/test_context_model.py tests/shell/test_crash.py

soak: install  ## 30 s of 12 writer processes on a throwaway PostgreSQL cluster
	$(BIN)/python -m tests.pg_soak --seconds 30

clean:
	rm -rf $(VENV) tierlog-demo.db tierlog-demo.db-* tierlog-demo.db.spills .pytest_cache .mypy_cache .ruff_cache

.PHONY: fidelity
fidelity: install  ## the session simulator: does the gate pay for itself? (bench/fidelity.json, .svg)
	$(BIN)/python bench/fidelity.py
.PHONY: bench-import
bench-import: install  ## a live agent's append latency while a 250k-event import runs beside it
	$(BIN)/python bench/import_wait.py --events 250000
