"""Tests of estimator.cluster: cache, object files, list/watch."""
