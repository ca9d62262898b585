"""The gRPC server's certificate, key and client CA as files, re-read when they change.

cert-manager (and anyone else) rotates a serving certificate by replacing the files; the
server picks the new pair up without a restart: gRPC asks `ServingFiles.poll` before each
TLS handshake (dynamic server credentials), which stats the files and, when they changed,
reads and checks them. Connections already open keep their session, so no call fails
during the swap. A pair that does not go together yet (the certificate replaced, the key
not yet) or a half-written file is not taken: the previous pair keeps serving, and the files
are checked again at the next handshake after they change again. The files should be
replaced by renaming new ones into place (as Kubernetes' Secret volumes do).

No gRPC here: server.py turns the bytes into gRPC's credentials.
"""

from __future__ import annotations

import logging
import os
import ssl
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger("estimator.tls")


class TLSFilesError(OSError):
    """Certificate, key or CA files that cannot serve TLS; the message names the flag."""


class Material(NamedTuple):
    key: bytes
    cert: bytes
    ca: bytes | None


def _check(cert_file: str, key_file: str, ca_file: str) -> None:
    """Fail naming the flag, instead of gRPC's "Failed to bind to address"."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ValueError) as error:
        raise TLSFilesError(
            f"--grpc-auth-cert-file {cert_file} / --grpc-auth-key-file "
            f"{key_file}: not a certificate and its private key ({error})"
        ) from None
    if ca_file:
        try:
            context.load_verify_locations(cafile=ca_file)
        except (OSError, ValueError) as error:
            raise TLSFilesError(f"--grpc-client-ca-file {ca_file}: no PEM CA certificate ({error})") from None


class ServingFiles:
    """The files of --grpc-auth-cert-file, --grpc-auth-key-file and --grpc-client-ca-file."""

    def __init__(self, cert_file: str, key_file: str, ca_file: str = ""):
        self.paths = tuple(p for p in (cert_file, key_file, ca_file) if p)
        self.cert_file, self.key_file, self.ca_file = cert_file, key_file, ca_file
        stamp = self._stamp()
        self.current = self._read()
        if self._stamp() != stamp:  # replaced while read: read the settled files once more
            stamp = self._stamp()
            self.current = self._read()
        self._stamp_read = stamp
        self._stamp_refused: tuple | None = None
        self.reloads = 0

    def _stamp(self) -> tuple:
        stamps: list[tuple[int, int, int, int] | None] = []
        for path in self.paths:
            try:
                st = os.stat(path)
            except OSError:
                stamps.append(None)
                continue
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev))
        return tuple(stamps)

    def _read(self) -> Material:
        _check(self.cert_file, self.key_file, self.ca_file)
        try:
            return Material(
                Path(self.key_file).read_bytes(),
                Path(self.cert_file).read_bytes(),
                Path(self.ca_file).read_bytes() if self.ca_file else None,
            )
        except OSError as error:
            raise TLSFilesError(f"cannot read the gRPC TLS files: {error}") from None

    def poll(self) -> Material | None:
        """The new material when the files changed since they were last read and now hold a
        certificate with its key (and a CA); None otherwise: keep serving what was read."""
        stamp = self._stamp()
        if stamp == self._stamp_read or stamp == self._stamp_refused:
            return None
        try:
            material = self._read()
        except TLSFilesError as error:
            self._stamp_refused = stamp
            log.warning(
                "gRPC TLS files changed but cannot be used yet, still serving the previous certificate: %s", error
            )
            return None
        if self._stamp() != stamp:  # changed again while read: take them at the next handshake
            return None
        self._stamp_read, self.current = stamp, material
        self.reloads += 1
        log.info("gRPC serving certificate re-read from %s (reload %d)", self.cert_file, self.reloads)
        return material
