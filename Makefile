# dplens: `make run` starts the app (`make run PORT=8600 HOST=0.0.0.0` to change where), `make test` runs every test. Both create/refresh .venv as needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: run test bench lint typecheck docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# One environment for every target: exactly the versions and hashes in requirements.lock (the app with all its
# optional extras, the dev tools and the docs tools; CONTRIBUTING.md: how to regenerate it), then dplens itself.
$(STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install -q --require-hashes -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

run: $(STAMP)
	$(BIN)/dplens app --host $(HOST) --port $(PORT)

# Two phases: every test file but the browser and "serial" ones on two workers (pytest-xdist, one file per
# worker at a time), then the browser tests and the tests that start their own interpreters, one at a time.
# Exit code 5 (no test selected, e.g. PYTEST_ARGS naming one file) is not a failure of that phase.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not e2e and not serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(BIN)/python -m pytest -p no:xdist -m "e2e or serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check src pages app.py tests bench

# mypy on src/dplens (core, ui, cli), pages/ and app.py (pyproject.toml [tool.mypy]; the public API modules are
# strict); tests/ and bench/ are not type-checked.
typecheck: $(STAMP)
	$(BIN)/mypy

# The documentation site (mkdocs.yml, docs/) into site/; the mechanism and CLI references are generated from the
# code at build time (docs/gen_ref.py, an MkDocs hook). --strict: any broken link or warning fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) test-artifacts
