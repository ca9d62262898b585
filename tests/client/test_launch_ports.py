"""Ports for local estimators are picked before any of them binds: no two may be the same."""

from __future__ import annotations

from scheduler_client.launch import free_port


def test_ports_picked_before_binding_are_all_different():
    # bind(0) alone picks a random free port each time, so 500 picks repeated one in
    # practically every run before the launcher skipped the ports it had handed out.
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)
