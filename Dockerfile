# syntax=docker/dockerfile:1
# karmada-estimator: the accurate Karmada scheduler-estimator, one Deployment per member.
#
#   docker build -t REGISTRY/karmada-accurate-estimator:0.1.0 .
#
# Reproducible: the base image is pinned by digest (the multi-arch index of
# python:3.11.16-slim-bookworm), and every Python package, the build backend included, comes
# from requirements.lock with its hashes (`make lock` regenerates it; a test checks it matches
# pyproject.toml). Runs as uid/gid 10001; the manifests add a read-only root filesystem.
# numba kernels are compiled at build time for a generic CPU of the build architecture
# (NUMBA_CPU_NAME=generic, so the cache matches every node of that architecture) into a
# read-only seed; the entrypoint copies them into the writable NUMBA_CACHE_DIR (an emptyDir in
# our manifests, the container's own layer under Karmada's chart), because numba only uses a
# cache directory it can write to. /bin/karmada-scheduler-estimator is the entrypoint too, so
# Karmada's chart and karmadactl start this image unchanged.

ARG PYTHON_IMAGE=python:3.11.16-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/karmada-estimator/venv
WORKDIR /src
COPY requirements.lock ./
# Exactly the locked set: pinned versions, every file checked against its hash, nothing resolved here.
RUN /opt/karmada-estimator/venv/bin/pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY estimator/ estimator/
# The placement client ships too, so `karmada-place` works from the same image.
COPY scheduler_client/ scheduler_client/
# A regular (not editable) install with the locked build backend: the image carries no source tree.
RUN /opt/karmada-estimator/venv/bin/pip install --no-deps --no-build-isolation . \
 && /opt/karmada-estimator/venv/bin/pip check \
 && /opt/karmada-estimator/venv/bin/python -m compileall -q /opt/karmada-estimator/venv/lib

FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 estimator \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin estimator
COPY --from=build /opt/karmada-estimator/venv /opt/karmada-estimator/venv
COPY deploy/image/entrypoint.sh /usr/local/bin/karmada-estimator-entrypoint
ENV PATH=/opt/karmada-estimator/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NUMBA_CPU_NAME=generic \
    KARMADA_ESTIMATOR_NUMBA_SEED=/opt/karmada-estimator/numba-cache \
    NUMBA_CACHE_DIR=/var/cache/karmada-estimator/numba
# Compile every kernel once, at build time, into the read-only seed.
RUN NUMBA_CACHE_DIR=/opt/karmada-estimator/numba-cache \
        python -c "from estimator import kernels; kernels.warmup()" \
 && chmod -R a+rX /opt/karmada-estimator/numba-cache \
 && chmod 0755 /usr/local/bin/karmada-estimator-entrypoint \
 && ln -s /usr/local/bin/karmada-estimator-entrypoint /bin/karmada-scheduler-estimator \
 && mkdir -p /var/cache/karmada-estimator/numba \
 && chown -R 10001:10001 /var/cache/karmada-estimator
USER 10001:10001
# gRPC, probes (/healthz, /readyz), Prometheus /metrics
EXPOSE 10352 10351 8080
ENTRYPOINT ["/usr/local/bin/karmada-estimator-entrypoint"]
CMD ["--help"]
