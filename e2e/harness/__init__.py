"""End-to-end bed with the real peers: etcd + kube-apiserver, Karmada's estimator, ours.

Importable without Go (the binaries are only needed when `python -m e2e.harness` runs them);
`make e2e` builds them first. Nothing here is used by `make test`'s code under test.
"""
