"""Tests of estimator.deploy (rendered manifests)."""
