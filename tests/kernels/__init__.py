"""Tests of estimator.kernels."""
