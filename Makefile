# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Compiled numba kernels are cached here so only the first run pays for compilation (the
# estimator picks the same directory itself when started from a checkout without make).
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: demo test proto install clean lint format

# Installing also compiles the kernels into the cache (~20 CPU-seconds, once), so the first
# demo or estimator start only loads them; the demo still compiles once itself if the cache
# went stale (an edited kernel).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -c 'from estimator.kernels import warmup; warmup()'
	touch $(STAMP)

install: $(STAMP)

# The lowest-floor job first (below), then the whole suite: its summary is the last line. The suite
# includes the formatter, linter and type checker (tests/test_lint.py, the same three as `make lint`).
test: $(STAMP) test-floors
	$(PY) -m pytest -q

# ruff (lint, then format) and mypy on estimator/ and scheduler_client/, as configured in pyproject.toml
# ([tool.ruff], [tool.mypy]: what each checks, what is left out and why); `make format` applies ruff's
# safe fixes and its formatting.
lint: $(STAMP)
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix
	$(VENV)/bin/ruff format

# The demo loads the kernels once (compiling them first if the cache is stale) and forks its eight
# estimators from itself, so they share the loaded kernels instead of loading them eight times.
demo: $(STAMP)
	$(PY) -m scheduler_client.demo

# Regenerate estimator/pb/ from proto/ (a test fails when the committed code is stale).
proto: $(STAMP)
	$(PY) -m estimator.pb.regenerate

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache .hypothesis .mypy_cache .ruff_cache

# Honest dependency floors: every direct dependency at the lowest version pyproject.toml allows
# (uv's --resolution lowest-direct) in a venv of its own, running a representative fast subset of
# the suite: the pure core, object files, the watch against the fake API server, wire conversion,
# the gRPC server (reflection through grpcurl, health, drain), metrics, the numba kernels, the
# manifests' schemas and the layering contracts; tests/deploy/test_floors.py checks the installed
# versions are the floors. About a minute here (the first run also installs and compiles kernels).
FLOORS_VENV := $(VENV)/floors
FLOORS_PY := $(FLOORS_VENV)/bin/python
FLOORS_STAMP := $(FLOORS_VENV)/.installed
FLOORS_TESTS := tests/core tests/cluster/test_kubefiles.py tests/cluster/test_files.py tests/cluster/test_watch.py \
  tests/service/test_convert.py tests/service/test_grpcurl.py tests/service/test_metrics_hot.py \
  tests/service/test_drain.py::test_stop_lets_an_in_flight_call_finish_and_refuses_new_ones \
  tests/kernels/test_tables.py tests/estimate/test_estimate.py tests/deploy/test_floors.py tests/test_layering.py \
  tests/deploy/test_manifests.py::test_every_rendered_object_is_valid_against_the_kubernetes_openapi_schema
.PHONY: test-floors lock image

$(FLOORS_STAMP): pyproject.toml
	test -x $(FLOORS_PY) || $(PYTHON) -m venv $(FLOORS_VENV)
	$(FLOORS_PY) -m pip install --quiet --upgrade pip uv
	$(FLOORS_VENV)/bin/uv pip install --quiet --python $(FLOORS_PY) --resolution lowest-direct -r pyproject.toml --extra test
	$(FLOORS_VENV)/bin/uv pip install --quiet --python $(FLOORS_PY) --no-deps -e .
	touch $@

test-floors: $(FLOORS_STAMP)
	@echo "test-floors: the lowest versions pyproject.toml allows ($(FLOORS_VENV)), a subset of the suite"
	NUMBA_CACHE_DIR=$(CURDIR)/$(FLOORS_VENV)/numba-cache KARMADA_ESTIMATOR_FLOORS=1 \
	  $(FLOORS_PY) -m pytest -q -p no:cacheprovider $(FLOORS_TESTS)

# requirements.lock, what the image installs (deploy/image/lock.py; needs PyPI). A test fails
# when pyproject.toml's dependencies change and this was not run.
lock: $(FLOORS_STAMP)
	$(FLOORS_PY) deploy/image/lock.py --uv $(FLOORS_VENV)/bin/uv

# The image (needs a Docker daemon); IMAGE names it.
IMAGE ?= karmada-accurate-estimator:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
image:
	docker build -t $(IMAGE) .

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
	$(PY) -m benchmarks.dra --write

bench-quick: $(BENCH_STAMP)
	BENCH_COMMAND="make bench-quick" $(PY) -m benchmarks.run --quick

# End-to-end with the real peers (needs Go 1.26 and the Go module proxy): builds etcd,
# kube-apiserver and kube-scheduler from e2e/kube (versions in e2e/versions.mk, the one place for them) into
# .e2e/bin/ once per version, Karmada's programs via e2e-karmada, then runs the comparison.
# See docs/e2e.md.
include e2e/versions.mk
E2E_BIN := .e2e/bin
E2E_GO := GOFLAGS='-trimpath -buildvcs=false' go
.PHONY: e2e e2e-kube

$(E2E_BIN)/kube-apiserver-$(KUBERNETES_VERSION): e2e/kube/go.mod e2e/kube/go.sum e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/kube && test "$$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" = "$(KUBERNETES_VERSION)" \
	  || { echo "e2e/kube/go.mod pins a different k8s.io/kubernetes than KUBERNETES_VERSION=$(KUBERNETES_VERSION)"; exit 2; }
	cd e2e/kube && $(E2E_GO) build -ldflags='-s -w' -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/kube-apiserver

$(E2E_BIN)/etcd-$(ETCD_VERSION): e2e/kube/go.mod e2e/kube/go.sum e2e/kube/cmd/etcd/main.go e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/kube && test "$$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)" = "$(ETCD_VERSION)" \
	  || { echo "e2e/kube/go.mod pins a different etcd than ETCD_VERSION=$(ETCD_VERSION)"; exit 2; }
	cd e2e/kube && $(E2E_GO) build -ldflags='-s -w' -o $(CURDIR)/$@ ./cmd/etcd

# The judge of every answer: kube-scheduler from the same module and version as the apiserver.
$(E2E_BIN)/kube-scheduler-$(KUBERNETES_VERSION): e2e/kube/go.mod e2e/kube/go.sum e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/kube && $(E2E_GO) build -ldflags='-s -w' -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/kube-scheduler

e2e-kube: $(E2E_BIN)/kube-apiserver-$(KUBERNETES_VERSION) $(E2E_BIN)/etcd-$(ETCD_VERSION) $(E2E_BIN)/kube-scheduler-$(KUBERNETES_VERSION)

# The default run takes the 1k-node member only: Karmada's own estimator needs tens of seconds
# per call at 5k nodes on a 2-core machine, so 5k/10k would not fit the run's time budget.
# Everything: make e2e E2E_ARGS="--large 1000,5000,10000" (about 40 min more here: Karmada needs
# minutes per call at 5k/10k nodes, so those members are opt-in; see docs/e2e.md).
E2E_ARGS ?= --large 1000
e2e: $(STAMP) e2e-kube e2e-karmada e2e-karmada-cp
	PYTHONPATH=$(CURDIR) $(PY) -m e2e.harness $(E2E_ARGS)

# Karmada's peers (see e2e/karmada/README.md): its scheduler-estimator at both versions, and our
# Go programs that call estimators and schedule through Karmada's own code. Built once per
# version into .e2e/bin/; a second run reuses them. GONOSUMDB: the checksum DB does not know
# every Karmada release the proxy serves. The build tag is the one Karmada's hack/build.sh sets:
# without it (Kubernetes >= 1.35 API types) Karmada's estimator messages panic when used.
KARMADA_GO := GONOSUMDB=github.com/karmada-io/karmada $(E2E_GO)
KARMADA_BUILD := build -tags kubernetes_protomessage_one_more_release -ldflags='-s -w'
KARMADA_SRC := $(wildcard e2e/karmada/internal/*/*.go)
karmada-pin = test "$$(go list -m -f '{{.Version}}' github.com/karmada-io/karmada)" = "$(1)" \
  || { echo "$$PWD/go.mod pins a different Karmada than $(1) (e2e/versions.mk)"; exit 2; }
.PHONY: e2e-karmada

$(E2E_BIN)/karmada-scheduler-estimator-$(KARMADA_VERSION): e2e/karmada/go.mod e2e/karmada/go.sum e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/karmada && $(call karmada-pin,$(KARMADA_VERSION)) && $(KARMADA_GO) $(KARMADA_BUILD) -o $(CURDIR)/$@ github.com/karmada-io/karmada/cmd/scheduler-estimator

$(E2E_BIN)/karmada-scheduler-estimator-$(KARMADA_OLD_VERSION): e2e/karmada-v1.16/go.mod e2e/karmada-v1.16/go.sum e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/karmada-v1.16 && $(call karmada-pin,$(KARMADA_OLD_VERSION)) && $(KARMADA_GO) $(KARMADA_BUILD) -o $(CURDIR)/$@ github.com/karmada-io/karmada/cmd/scheduler-estimator

$(E2E_BIN)/estclient-$(KARMADA_VERSION): e2e/karmada/go.mod e2e/karmada/go.sum e2e/versions.mk $(KARMADA_SRC) $(wildcard e2e/karmada/cmd/estclient/*.go)
	@mkdir -p $(E2E_BIN)
	cd e2e/karmada && $(call karmada-pin,$(KARMADA_VERSION)) && $(KARMADA_GO) $(KARMADA_BUILD) -o $(CURDIR)/$@ ./cmd/estclient

$(E2E_BIN)/karmada-schedule-$(KARMADA_VERSION): e2e/karmada/go.mod e2e/karmada/go.sum e2e/versions.mk $(KARMADA_SRC) $(wildcard e2e/karmada/cmd/karmada-schedule/*.go)
	@mkdir -p $(E2E_BIN)
	cd e2e/karmada && $(call karmada-pin,$(KARMADA_VERSION)) && $(KARMADA_GO) $(KARMADA_BUILD) -o $(CURDIR)/$@ ./cmd/karmada-schedule

e2e-karmada: $(addprefix $(E2E_BIN)/,karmada-scheduler-estimator-$(KARMADA_VERSION) karmada-scheduler-estimator-$(KARMADA_OLD_VERSION) estclient-$(KARMADA_VERSION) karmada-schedule-$(KARMADA_VERSION))

# Checks of our Go programs against our estimator (e2e/karmada/test_karmada_programs.py).
.PHONY: e2e-karmada-check
e2e-karmada-check: $(STAMP) e2e-karmada
	$(PY) -m pytest -q -p no:cacheprovider e2e/karmada
e2e: e2e-karmada-check

# A real Karmada control plane for e2e/harness/karmadacp.py (issue 26): Karmada's own programs,
# built from e2e/karmada/go.mod at KARMADA_VERSION (its `tool` lines name them). The pattern rule
# builds one program, `karmada-<cmd>-<version>` from cmd/<cmd>; the first compiles Karmada's
# controllers and the apiserver libraries, the others reuse the Go build cache.
KARMADA_CP := aggregated-apiserver controller-manager scheduler webhook
KARMADA_CP_BINS := $(foreach c,$(KARMADA_CP),$(E2E_BIN)/karmada-$(c)-$(KARMADA_VERSION))
.PHONY: e2e-karmada-cp

$(KARMADA_CP_BINS): $(E2E_BIN)/karmada-%-$(KARMADA_VERSION): e2e/karmada/go.mod e2e/karmada/go.sum e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/karmada && $(call karmada-pin,$(KARMADA_VERSION)) && $(KARMADA_GO) $(KARMADA_BUILD) -o $(CURDIR)/$@ github.com/karmada-io/karmada/cmd/$*

e2e-karmada-cp: $(KARMADA_CP_BINS) $(E2E_BIN)/karmada-scheduler-estimator-$(KARMADA_VERSION)

# The scenarios of issue 26 on two such control planes at once (ours / Karmada's estimators),
# ending with the `karmada: ...` line (e2e/harness/karmadacp_scenarios.py; about 1.5 min here).
# karmada-local leaves one (our estimators) running to kubectl into; karmada-local-down removes it
# (docs/karmada-local.md).
.PHONY: e2e-karmadacp karmada-local karmada-local-down
e2e-karmadacp: $(STAMP) e2e-kube e2e-karmada-cp
	PYTHONPATH=$(CURDIR) $(PY) -m e2e.harness.karmadacp

karmada-local: $(STAMP) e2e-kube e2e-karmada-cp
	PYTHONPATH=$(CURDIR) $(PY) -m e2e.harness.karmadacp --keep

karmada-local-down:
	PYTHONPATH=$(CURDIR) $(PY) -m e2e.harness.karmadacp --down

# Karmada's own install routes and ours against a real kube-apiserver (issue 29,
# e2e/harness/install.py): Karmada's Helm chart rendered by a Helm built from its Go module
# (HELM_VERSION in e2e/versions.mk), karmadactl's addon, our manifests. Its `install:` line is
# printed by make e2e; `make e2e-install` runs it alone (about a minute once the tools are built).
.PHONY: e2e-install-tools e2e-install
HELM_BIN := $(E2E_BIN)/helm-$(HELM_VERSION)
KARMADACTL_BIN := $(E2E_BIN)/karmadactl-$(KARMADA_VERSION)

# `go install module@version` builds Helm with its own go.mod, as its releases are built.
$(HELM_BIN): e2e/versions.mk
	@mkdir -p $(E2E_BIN)/.helm-$(HELM_VERSION)
	GOBIN=$(CURDIR)/$(E2E_BIN)/.helm-$(HELM_VERSION) $(E2E_GO) install \
	  -ldflags='-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(E2E_BIN)/.helm-$(HELM_VERSION)/helm $@ && rmdir $(E2E_BIN)/.helm-$(HELM_VERSION)

# karmadactl from e2e/karmada/go.mod (its `tool` line), with the version Karmada's hack/build.sh stamps.
$(KARMADACTL_BIN): e2e/karmada/go.mod e2e/karmada/go.sum e2e/versions.mk
	@mkdir -p $(E2E_BIN)
	cd e2e/karmada && $(call karmada-pin,$(KARMADA_VERSION)) && $(KARMADA_GO) build -tags kubernetes_protomessage_one_more_release \
	  -ldflags='-s -w -X github.com/karmada-io/karmada/pkg/version.gitVersion=$(KARMADA_VERSION)' \
	  -o $(CURDIR)/$@ github.com/karmada-io/karmada/cmd/karmadactl

e2e-install-tools: $(HELM_BIN) $(KARMADACTL_BIN)
e2e: e2e-install-tools

e2e-install: $(STAMP) e2e-kube e2e-install-tools
	PYTHONPATH=$(CURDIR) $(PY) -m e2e.harness.install
