# The two commands of the README: `make serve` and `make test`. Both create the virtual environment if it is
# missing and (re)install the project when pyproject.toml changes; they need only python3 and the package index.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: serve test check openapi bench lint lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

## serve: install the service and start it on 127.0.0.1:8000 (settings: DPCAL_* variables, see app/settings.py)
serve: $(VENV)/.installed
	$(BIN)/dpcal serve

## test: install the test extra and run the whole suite on both cores (pytest-xdist; what CI runs)
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist worksteal

## check: the fast tier for the inner loop (every test not marked slow, on both cores)
check: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not slow"

## openapi: record the service's answers to its examples, then regenerate openapi/openapi.json
openapi: $(VENV)/.installed
	$(BIN)/dpcal openapi --record-examples -o openapi/openapi.json

## bench: dpcal against dp_accounting, side by side (figures in the README)
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/calibration.py
	$(BIN)/python benchmarks/rdp.py
	$(BIN)/python benchmarks/pld.py
	$(BIN)/python benchmarks/blas.py
	$(BIN)/python benchmarks/http_calibration.py
	$(BIN)/python benchmarks/load.py
	$(BIN)/python benchmarks/jobs.py
	$(BIN)/python benchmarks/cli.py

## lint: ruff (lint and format) and mypy (strict on accountants/, normal on app/; configured in pyproject.toml)
lint: $(VENV)/.installed-test
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

## lock: re-resolve deploy/requirements.lock (what the image installs, every file by hash) from pyproject.toml
lock:
	$(PYTHON) -m venv $(VENV)-lock && $(VENV)-lock/bin/python -m pip install --quiet pip-tools==7.6.2
	$(VENV)-lock/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --extra postgres \
		--extra dask --no-emit-index-url --no-emit-find-links -o deploy/requirements.lock pyproject.toml \
		deploy/build-requirements.in

clean:
	rm -rf $(VENV) $(VENV)-lock .pytest_cache .hypothesis .ruff_cache
