"""Tests of the e2e harness's own logic (no Go needed)."""
