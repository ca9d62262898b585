"""Tests of estimator.core."""
