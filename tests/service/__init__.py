"""Tests of estimator.service and the estimator process (gRPC, HTTP, CLI, wire forms)."""
