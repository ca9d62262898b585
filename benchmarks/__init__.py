"""Benchmark harness: synthetic members, job shapes, kernel/naive/RPC timings, accuracy.

Run `make bench` (full) or `make bench-quick` (smoke). See benchmarks/RESULTS.md.

Every writer of RESULTS.md splices its own "## " section and computes percentiles through
benchmarks/resultsmd.py. A benchmark `x` with more than one job keeps its parts next to it
as `x_*.py` (run_measure, run_server; report_targets, report_plots; load_report;
watch_churn_fake, watch_churn_report). Test support code is imported as the `tests` package
(`from tests.support import naive`), so run benchmarks from the repository root with `python -m`.
"""
