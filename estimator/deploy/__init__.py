"""Deployment: the Kubernetes manifests `karmada-estimator manifests` renders."""
