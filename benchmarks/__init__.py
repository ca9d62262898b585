"""Benchmark harness: synthetic members, job shapes, kernel/naive/RPC timings, accuracy.

Run `make bench` (full) or `make bench-quick` (smoke). See benchmarks/RESULTS.md.
"""
