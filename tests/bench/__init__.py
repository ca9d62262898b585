"""Smoke tests of benchmarks/."""
