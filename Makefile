# dplens: `make run` starts the app (`make run PORT=8600 HOST=0.0.0.0` to change where), `make test` runs every test. Both create/refresh .venv as needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs
PYTEST_ARGS ?=
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: run test bench lint docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install -q -c requirements.lock -e .
	touch $@

$(TEST_STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[test]'
	touch $@ $(RUN_STAMP)

$(DOCS_STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[docs]'
	touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/streamlit run app.py --server.address $(HOST) --server.port $(PORT)

# Two phases: every test file but the browser and "serial" ones on two workers (pytest-xdist, one file per
# worker at a time), then the browser tests and the tests that start their own interpreters, one at a time.
# Exit code 5 (no test selected, e.g. PYTEST_ARGS naming one file) is not a failure of that phase.
test: $(TEST_STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not e2e and not serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(BIN)/python -m pytest -p no:xdist -m "e2e or serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]

bench: $(RUN_STAMP)
	$(BIN)/python bench/run_all.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check core pages app.py ui tests bench

# The documentation site (mkdocs.yml, docs/) into site/; the mechanism and CLI references are generated from the
# code at build time (docs/gen_ref.py, an MkDocs hook). --strict: any broken link or warning fails the build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) test-artifacts
