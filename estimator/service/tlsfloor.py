"""TLS 1.3 as the least the gRPC server accepts, as Karmada's estimator server
(pkg/util/grpcconnection: `MinVersion: tls.VersionTLS13`).

gRPC Python has no minimum-version setting. Its TLS library (BoringSSL) negotiates TLS 1.3
with its fixed 1.3 cipher suites, and TLS 1.2 with the suites `GRPC_SSL_CIPHER_SUITES`
lists, which gRPC reads once, when it is first imported. `pin()` sets that list, before the
first import, to one pre-shared-key suite: a server without a PSK callback never selects it,
so no TLS 1.2 handshake can complete (the client sees the handshake fail, NO_SHARED_CIPHER),
while TLS 1.3 is untouched. An operator's own `GRPC_SSL_CIPHER_SUITES` is left alone.

Where the list could not be pinned (gRPC imported earlier in this process, e.g. by a test,
or another list set), `transport_floor()` is False and the server refuses every call made
over TLS 1.2 instead (the call's auth context names the version): the handshake then
succeeds, but nothing is served over it.

This module must not import grpc.
"""

from __future__ import annotations

import os
import sys

ENV = "GRPC_SSL_CIPHER_SUITES"
# TLS 1.2 suites offered: one no server here can select (no pre-shared keys are configured).
PSK_ONLY = "ECDHE-PSK-CHACHA20-POLY1305"

_pinned = False


def pin() -> bool:
    """Pin the TLS 1.2 suite list before gRPC is imported (see the module docstring); True
    when TLS 1.2 handshakes are refused by the transport in this process."""
    global _pinned
    if not _pinned and "grpc" not in sys.modules:
        value = os.environ.setdefault(ENV, PSK_ONLY)
        _pinned = value == PSK_ONLY
    return _pinned


def transport_floor() -> bool:
    """Whether this process's gRPC refuses TLS 1.2 handshakes (the list was pinned in time)."""
    return _pinned
