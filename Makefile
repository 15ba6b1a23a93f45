PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck docs pytest bench clean

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

# The site from docs/ and mkdocs.yml, into site/; --strict fails on a broken
# link or anchor between pages (not --quiet: it hides the warnings that
# --strict counts).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

test: lint typecheck docs pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) .durable .durable-demo build site *.egg-info
