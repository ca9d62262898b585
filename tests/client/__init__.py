"""Tests of scheduler_client (karmada-place)."""
