PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench,s3,dask]'
	touch $(STAMP)

demo: $(STAMP)
	rm -rf .durable-demo
	DURABLE_STORE=.durable-demo $(BIN)/python examples/quickstart.py

lint: $(STAMP)
	$(BIN)/ruff check durable tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy durable tests/typing_check.py

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) .durable .durable-demo build *.egg-info
