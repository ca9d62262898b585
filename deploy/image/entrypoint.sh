#!/bin/sh
# Container entrypoint of the karmada-estimator image.
#
# numba needs a WRITABLE cache directory even to load compiled kernels (it checks that it
# can write there before using it), and the pod runs with readOnlyRootFilesystem. So the
# kernels compiled at image build time live read-only in $KARMADA_ESTIMATOR_NUMBA_SEED and
# are copied here into $NUMBA_CACHE_DIR (an emptyDir) before the estimator starts. If the
# copy fails, the estimator still starts and compiles its kernels (readiness waits for it).
set -eu

seed="${KARMADA_ESTIMATOR_NUMBA_SEED:-}"
cache="${NUMBA_CACHE_DIR:-}"
if [ -n "$seed" ] && [ -n "$cache" ] && [ -d "$seed" ] && [ "$seed" != "$cache" ]; then
    if ! { mkdir -p "$cache" && cp -R "$seed/." "$cache/"; }; then
        echo "karmada-estimator-entrypoint: could not copy compiled kernels from $seed to $cache;" \
             "they will be compiled at start-up" >&2
    fi
fi

exec karmada-estimator "$@"
