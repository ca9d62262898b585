"""The test suite; a package so that benchmarks and e2e import its support code."""
