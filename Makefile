# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Compiled numba kernels are cached here so only the first run pays for compilation (the
# estimator picks the same directory itself when started from a checkout without make).
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: demo test proto install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(PY) -m scheduler_client.demo

# Regenerate estimator/pb/ from proto/ (a test fails when the committed code is stale).
proto: $(STAMP)
	$(PY) -m estimator.pb.regenerate

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache .hypothesis

# Benchmarks: `make bench` regenerates benchmarks/RESULTS.md, results/latest.json and the
# plots (about 15 minutes); `make bench-quick` is a smoke run (< 60 s, asserts no timings) that
# writes to benchmarks/results/quick/ only.
.PHONY: bench bench-quick
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	BENCH_COMMAND="make bench" $(PY) -m benchmarks.run

bench-quick: $(BENCH_STAMP)
	BENCH_COMMAND="make bench-quick" $(PY) -m benchmarks.run --quick
