# Everything a fresh machine needs: `make demo` runs the example, `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test typecheck unit clean

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python -m trio_mcp.examples.demo

typecheck: $(BIN)/.installed
	$(BIN)/python -m mypy --strict trio_mcp

unit: $(BIN)/.installed
	$(BIN)/python -m pytest

test: typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .hypothesis *.egg-info
