# Everything a fresh machine needs: `make demo` runs the example, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo docs test system-check lint typecheck unit fuzz soak lowest newest interop-setup skills-setup auth-server-setup browser-setup inspector-setup interop conformance bench-setup bench bench-quick scale-setup clean

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python -m trio_mcp.examples.demo

# The documentation site (mkdocs.yml: docs/*.md and the API reference from the docstrings) into build/site;
# any warning is an error, and nothing is fetched but the packages. tests/docs/ checks the code in the pages.
docs: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

typecheck: $(BIN)/.installed
	$(BIN)/python -m mypy --strict trio_mcp

# ruff: lint and formatting (configuration in pyproject.toml); `ruff format` fixes what the check finds.
lint: $(BIN)/.installed
	$(BIN)/ruff check trio_mcp tests benchmarks tools
	$(BIN)/ruff format --check trio_mcp tests benchmarks tools

# Peers nobody here wrote: Node 22, the conformance suite, server-everything, and the official Python SDK
# in its own virtual environment (.interop/); see tests/interop/setup.sh.
interop-setup:
	PYTHON=$(PYTHON) bash tests/interop/setup.sh

# The skills (SEP-2640) peers: the TypeScript SDK v2 (npm, locked) and FastMCP (pinned, .interop/fastmcp-venv);
# see tests/interop/skills_setup.sh.
skills-setup: interop-setup
	PYTHON=$(PYTHON) bash tests/interop/skills_setup.sh

# The authorization servers of the end-to-end OAuth tests (oauth2-mock-server, and oidc-provider upstream of the
# authorization facade; npm, locked); see tests/auth_server/setup.sh.
auth-server-setup: interop-setup
	bash tests/auth_server/setup.sh

# redis-server and haproxy for the scaling tests (Debian's packages when root); see tests/scale/setup.sh.
scale-setup:
	bash tests/scale/setup.sh

# Headless Chromium (Debian's package) and the TypeScript SDK's client bundled for a page; see tests/browser/setup.sh.
browser-setup: interop-setup
	bash tests/browser/setup.sh

# The MCP Inspector that `trio-mcp dev` runs (npm ci from trio_mcp/cli/inspector-npm/, the locked release users get),
# into tests/inspector/installed for tests/cli/test_cli_dev.py; see tests/inspector/setup.sh.
inspector-setup: interop-setup
	bash tests/inspector/setup.sh

# The programs make test needs from the system (Chromium, Redis, HAProxy, nginx): as root they are installed by the
# setup scripts; otherwise one line per missing part says how to install it, before anything else runs.
system-check:
	bash tests/system_check.sh

unit: $(BIN)/.installed
	$(BIN)/python -m pytest

# The suite (less interop and benchmark smoke tests) on the other Pythons setup.cfg claims, with pytest-xdist
# (TRIO_MCP_XDIST workers, default 2): the lowest dependency versions setup.cfg declares on the lowest Python
# (.venv-lowest/), the newest releases on the newer ones (.venv-3.12/, .venv-3.13/). See tests/other_python.sh.
LOWEST_PYTHON ?= 3.10
NEWER_PYTHONS ?= 3.12 3.13
lowest:
	bash tests/other_python.sh lowest $(LOWEST_PYTHON)

newest:
	set -e; for version in $(NEWER_PYTHONS); do bash tests/other_python.sh newest $$version; done

# A deeper, randomized run of the property tests in tests/fuzz (make test runs them derandomized and bounded).
FUZZ_EXAMPLES ?= 5000
fuzz: $(BIN)/.installed
	TRIO_MCP_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) TRIO_MCP_FUZZ_RANDOM=1 $(BIN)/python -m pytest -q tests/fuzz

# Thousands of sessions and requests over stdio and HTTP, then memory, fds and tasks checked flat; not in
# make test. See benchmarks/soak.py and benchmarks/SOAK.md.
SOAK_SECONDS ?= 180
soak: $(BIN)/.installed
	$(BIN)/python benchmarks/soak.py --seconds $(SOAK_SECONDS)

interop: $(BIN)/.installed interop-setup skills-setup
	$(BIN)/python -m pytest -m interop

# The official conformance suite against tests/conformance/everything_server.py; see docs/conformance.md.
conformance: $(BIN)/.installed interop-setup
	$(BIN)/python tests/conformance/run_suites.py
	$(BIN)/python tests/conformance/run_suites.py --asgi --run all --run 2025-11-25 --run 2026-07-28

# Speed against the official Python and TypeScript SDKs; see benchmarks/README.md and benchmarks/RESULTS.md.
bench-setup:
	PYTHON=$(PYTHON) bash benchmarks/setup.sh

bench: $(BIN)/.installed bench-setup
	$(BIN)/python benchmarks/compare.py

bench-quick: $(BIN)/.installed bench-setup
	$(BIN)/python benchmarks/compare.py --quick

test: system-check lint typecheck docs interop-setup skills-setup auth-server-setup browser-setup inspector-setup bench-setup scale-setup conformance unit lowest newest

clean:
	rm -rf $(VENV) .venv-lowest .venv-3.* .interop tests/auth_server/node_modules tests/browser/node_modules tests/browser/dist tests/browser/apps/node_modules tests/browser/apps/dist tests/inspector/installed tests/interop/ts_skills/node_modules tests/conformance/node_modules tests/conformance/.node benchmarks/ts/node_modules benchmarks/results .mypy_cache .pytest_cache .hypothesis *.egg-info
