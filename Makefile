# Each target builds its own virtual environment (.venv) with what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lab bench bench-smoke clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)  ## a scripted delegation tree on the mock endpoint, printed as events and a tree
	$(PY) -m sagents_nb.demo

test: $(STAMP)  ## lint, format check, the import contract, the type check, then the whole test suite
	$(PY) -m ruff check sagents_nb tests benchmarks
	$(PY) -m ruff format --check sagents_nb tests benchmarks
	$(VENV)/bin/lint-imports
	$(PY) -m mypy
	$(PY) -m pytest -q

test-fast: $(STAMP)  ## day-to-day: lint, import contract, and the tests without kernels, browsers or CLIs
	$(PY) -m ruff check sagents_nb tests benchmarks
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -m "not kernel and not browser and not cli"

lab: $(STAMP)  ## JupyterLab on notebooks/ with the project installed
	$(PY) -m jupyter lab notebooks/

bench: $(STAMP)  ## the full benchmark against the peer frameworks (builds their venvs)
	$(PY) benchmarks/run.py

bench-smoke: $(STAMP)  ## a quick benchmark: sagents_nb and the floor only
	$(PY) benchmarks/run.py --smoke

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
