"""Tests of estimator.estimate.estimate."""
