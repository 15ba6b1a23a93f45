PYTHON ?= python3
# Every Python the package supports. `make test` runs the slow tests on .venv
# and the fast ones shared out among all the Pythons the machine has, the
# fingerprint tests on each (scripts/test-pythons).
PYTHONS ?= 3.10 3.11 3.12 3.13
JOBS ?= 2
# Python must be free to cache compiled modules: an environment that sets
# PYTHONDONTWRITEBYTECODE (as some CI images do) would otherwise compile
# s3fs, botocore, moto and Dask from source in every child process the tests
# start, which doubles the suite's time.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test checks lint typecheck docs pytest pythons bench clean

# uv (installed by pip, then doing the rest) makes the environments in
# seconds rather than minutes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[test,s3,dask]'
	touch $(STAMP)

# The peers the benchmarks compare with (joblib, DBOS, LangGraph): not needed
# by any test, so only `make bench` installs them, into the same environment.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[test,s3,dask,bench]'
	touch $@

# The demo needs the package alone, not the test, Dask or S3 extras: an
# environment of its own, so that on a fresh machine it takes seconds.
DEMO := $(VENV)-demo
$(DEMO)/.installed: pyproject.toml
	$(PYTHON) -m venv $(DEMO)
	$(DEMO)/bin/python -m pip install --quiet uv
	$(DEMO)/bin/uv pip install --quiet --python $(DEMO)/bin/python -e .
	touch $@

demo: $(DEMO)/.installed
	rm -rf .durable-demo
	DURABLE_STORE=.durable-demo $(DEMO)/bin/python examples/quickstart.py

lint: $(STAMP)
	$(BIN)/ruff check durable tests examples benchmarks
	PYTHONPATH=$(CURDIR) $(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy durable tests/typing_check.py

# The site from docs/ and mkdocs.yml, into site/; --strict fails on a broken
# link or anchor between pages (not --quiet: it hides the warnings that
# --strict counts).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(JOBS)

pythons: $(STAMP)
	JOBS=$(JOBS) scripts/test-pythons $(BIN)/uv $(BIN)/python $(PYTHONS)

# The checks side by side (mypy alone would leave a core idle), then the suites.
checks: $(STAMP)
	$(MAKE) --no-print-directory -j$(JOBS) --output-sync=target lint typecheck docs

test: checks
	$(MAKE) --no-print-directory pythons

# A few minutes: the per-step table with its peers, then resuming from S3.
bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/s3_resume.py

clean:
	rm -rf $(VENV) $(VENV)-* .durable .durable-demo build site *.egg-info
