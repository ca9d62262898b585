# Versions of the real peers `make e2e` builds and runs; this file is the one place to change them.
# kube-apiserver, kube-scheduler and etcd come from e2e/kube/go.mod (keep them equal to these), Karmada from
# e2e/karmada*/go.mod. Karmada v1.18.2 is the newest release the Go module proxy serves.
KUBERNETES_VERSION := v1.36.3
ETCD_VERSION := v3.6.8
KARMADA_VERSION := v1.18.2
KARMADA_OLD_VERSION := v1.16.0
# Helm, built from its Go module, renders Karmada's own chart in the install check (e2e/harness/install.py);
# the newest Helm 3 (Karmada's hack/util.sh installs Helm 3).
HELM_VERSION := v3.22.0
