# tierlog: `make demo` and `make test` are the whole quick start on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The real Claude Code CLI for the tests (tests/claude_code/cli.py), pinned, from npm
CLAUDE_CODE_VERSION := $(shell cat tests/claude_code/claude-code.version)
CLAUDE_CODE_OLD     := 2.0.77
CLAUDE_CODE_STAMP   := .tools/claude-code/.installed-$(CLAUDE_CODE_VERSION)
# The real Codex CLI for the tests (tests/codex/cli.py), pinned, from npm
CODEX_VERSION := $(shell cat tests/codex/codex.version)
CODEX_STAMP   := .tools/codex/.installed-$(CODEX_VERSION)

.PHONY: install demo test lint bench fuzz clean
.PHONY: soak claude-code fixtures-claude-code evidence-claude-code sql-memory

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,lint,openai-agents,langchain,browser,postgres,fast]'
	touch $(STAMP)

install: $(STAMP)  ## virtual environment with tierlog, test and lint tools

demo: install  ## replay both SPEC incidents into ./tierlog-demo.db
	$(BIN)/tierlog demo

test: install  ## the test suite (a bounded slice of the crash and fuzz campaigns)
	@$(MAKE) --no-print-directory claude-code \
	  || echo "make test: the Claude Code CLI could not be installed (npm?): its tests skip"
	@$(MAKE) --no-print-directory codex \
	  || echo "make test: the Codex CLI could not be installed (npm?): its live test skips"
	$(BIN)/python -m pytest -q

claude-code: $(CLAUDE_CODE_STAMP)  ## the pinned Claude Code CLI, from npm into .tools/ (git-ignored)

$(CLAUDE_CODE_STAMP): tests/claude_code/claude-code.version
	rm -rf .tools/claude-code
	npm install --prefix .tools/claude-code --no-audit --no-fund --loglevel=error \
	  @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	.tools/claude-code/node_modules/.bin/claude --version | grep -q '^$(CLAUDE_CODE_VERSION) '
	touch $@

evidence-claude-code: install  ## precision/recall of "not evidenced" on the labelled corpus
	$(BIN)/python -m tests.claude_code.corpus

fixtures-claude-code: install claude-code  ## regenerate tests/data/claude-code with the real CLIs
	npm install --prefix .tools/claude-code-$(CLAUDE_CODE_OLD) --no-audit --no-fund \
	  --loglevel=error @anthropic-ai/claude-code@$(CLAUDE_CODE_OLD)
	$(BIN)/python -m tests.claude_code.make_fixtures
	$(BIN)/python -m tests.claude_code.make_fixtures --version $(CLAUDE_CODE_OLD) \
	  --binary .tools/claude-code-$(CLAUDE_CODE_OLD)/node_modules/.bin/claude

lint: install  ## ruff, mypy --strict, and the report's script parsed by node (when installed)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	@if command -v node >/dev/null; then node --check eventstore/_report/report.js; \
	else echo "node not found: eventstore/_report/report.js not checked"; fi

bench: install  ## benchmarks against raw SQLite and the eventsourcing library; Claude Code hook latency
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[bench]'
	$(BIN)/python bench/run.py --reference
	$(BIN)/python -m bench.hook_latency

fuzz: install  ## the long campaigns: Hypothesis, crash loops, tampers carried, FIFOs, full disks, URLs, restarts
	TIERLOG_CAMPAIGN=long $(BIN)/python -m pytest -q tests/shell/test_properties.py tests/invariants/test_context_model.py tests/shell/test_crash.py tests/test_campaign.py

sql-memory: install  ## tierlog sql of 20,000,000 PostgreSQL rows: peak RSS (<= 200 MB) and --timeout
	$(BIN)/python -m tests.sql_memory --rows 20000000

soak: install  ## 30 s of 12 writer processes on a throwaway PostgreSQL cluster
	$(BIN)/python -m tests.pg_soak --seconds 30

.PHONY: fleet
fleet: install  ## 16 hosts' journals shipped by 1, 2, 4, 8 concurrent shippers to a throwaway PostgreSQL cluster, then audited
	$(BIN)/python -m bench.fleet

clean:
	rm -rf $(VENV) .tools tierlog-demo.db tierlog-demo.db-* tierlog-demo.db.spills .pytest_cache .mypy_cache .ruff_cache

.PHONY: fidelity
fidelity: install  ## the session simulator: does the gate pay for itself? (bench/fidelity.json, .svg)
	$(BIN)/python bench/fidelity.py
.PHONY: bench-import
bench-import: install  ## a live agent's append latency while a 250k-event import runs beside it
	$(BIN)/python bench/import_wait.py --events 250000

.PHONY: codex fixtures-codex
codex: $(CODEX_STAMP)  ## the pinned Codex CLI, from npm into .tools/ (git-ignored)

$(CODEX_STAMP): tests/codex/codex.version
	rm -rf .tools/codex
	npm install --prefix .tools/codex --no-audit --no-fund --loglevel=error \
	  @openai/codex@$(CODEX_VERSION)
	.tools/codex/node_modules/.bin/codex --version | grep -qx 'codex-cli $(CODEX_VERSION)'
	touch $@

fixtures-codex: install codex  ## regenerate tests/data/codex with the real CLI and the mock API
	$(BIN)/python -m tests.codex.make_fixtures
