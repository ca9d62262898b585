"""Test support code: builders, the fake API server, reference oracles, servers, data."""
