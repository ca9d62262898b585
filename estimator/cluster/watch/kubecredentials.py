"""The client configuration the flags name, read: kubeconfig files, token, CA, certificate and
key files, exec plugins run, the in-cluster service account. What the files mean is
kubeconfig.py's (pure); this module does the reading and hands kubeclient.py a `ClientConfig`
whose credentials are bytes, with the TLS context built from exactly those bytes.

`load_configuration` is called again on every credential reload (kubeclient.KubeClient), so
a rotated token, certificate or CA file, a rewritten kubeconfig or a plugin's new token are
picked up; two loads with the same credentials give equal ClientConfigs.
"""

from __future__ import annotations

import base64
import logging
import os
import ssl
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from estimator.cluster.kubefiles import ObjectFileError, parse_objects
from estimator.cluster.watch import kubeconfig as kc
from estimator.cluster.watch.apierrors import KubeConfigError

log = logging.getLogger("estimator.watch")

# client-go sets no limit on an exec plugin; ours runs on a list/watch thread, so one that hangs
# is given up after this long (the reload fails and is logged, the current credentials stay).
EXEC_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class ClientConfig:
    """Where to connect and how to prove who we are. Equal configurations hold the same
    credentials (the TLS context and the expiry do not take part in the comparison)."""

    host: str
    ca_pem: bytes | None = None  # None: the system's roots
    verify: bool = True
    tls_server_name: str = ""
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    authorization: str = ""  # the Authorization header ("" for none)
    proxy_url: str = ""
    uses_plugin: bool = False  # an exec plugin gave the credentials (it handles their expiry)
    source: str = field(default="", compare=False)
    expires_at: float | None = field(default=None, compare=False)  # the plugin's expirationTimestamp (epoch)
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False, repr=False)


def load_configuration(
    kubeconfig: str = "",
    master: str = "",
    context: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: str = kc.SERVICE_ACCOUNT_DIR,
) -> ClientConfig:
    """clientcmd.BuildConfigFromFlags: kubeconfig (with --master overriding its server),
    --master alone (no credentials), or in-cluster when neither is given."""
    environ = os.environ if environ is None else environ
    master = master.rstrip("/")
    try:
        if kubeconfig:
            settings = kc.select(kc.merge(_read_kubeconfigs(kubeconfig)), context)
            if master:
                settings = kc.with_server(settings, master)
        elif master:
            settings = kc.Settings(server=master, source="--master")
        else:
            settings = kc.in_cluster(environ, service_account_dir)
        return materialize(settings, environ)
    except (KubeConfigError, OSError, ValueError, ssl.SSLError) as error:
        where = kubeconfig or ("in-cluster service account" if not master else master)
        hint = "" if kubeconfig or master else " (no --kubeconfig or --master given and not running in a pod)"
        raise KubeConfigError(f"cannot load Kubernetes client configuration from {where}{hint}: {error}") from None


def _read_kubeconfigs(paths: str) -> list[tuple[str, object]]:
    """Each file of a KUBECONFIG-style list (one file is the usual case); in a list of several,
    missing files are skipped as client-go skips them, but one must exist."""
    names = [p for p in paths.split(os.pathsep) if p]
    documents = []
    for name in names:
        path = os.path.abspath(os.path.expanduser(name))
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            if len(names) == 1:
                raise KubeConfigError(f"{path}: no such file") from None
            continue
        try:
            objects = parse_objects(text, path)
        except ObjectFileError as error:
            raise KubeConfigError(str(error)) from None
        if len(objects) > 1:
            raise KubeConfigError(f"{path}: {len(objects)} documents; a kubeconfig is one")
        documents.append((path, objects[0] if objects else None))
    if not documents:
        raise KubeConfigError(f"none of {paths} exists")
    return documents


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise KubeConfigError(f"cannot read {what} {path}: {error.strerror or error}") from None


def materialize(settings: kc.Settings, environ: Mapping[str, str]) -> ClientConfig:
    """Read what `settings` names and run its exec plugin when no static credential is given
    (client-go's precedence: a token, password or certificate in the kubeconfig wins)."""
    ca = settings.ca_data or None
    if settings.ca_file:
        try:
            ca = _read(settings.ca_file, "certificate-authority")
        except KubeConfigError as error:
            if not settings.ca_optional:
                raise
            log.error("%s; using the system's root certificates", error)  # as rest.InClusterConfig does
    cert = settings.cert_data or (_read(settings.cert_file, "client-certificate") if settings.cert_file else None)
    key = settings.key_data or (_read(settings.key_file, "client-key") if settings.key_file else None)
    token = settings.token
    if settings.token_file:
        try:
            token = _read(settings.token_file, "tokenFile").decode("utf-8", "replace").strip()
        except KubeConfigError:
            if not token:  # client-go falls back to an inline token when the file cannot be read
                raise
    authorization = f"Bearer {token}" if token else ""
    if settings.username or settings.password:
        pair = f"{settings.username}:{settings.password}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode()
    expires_at, uses_plugin = None, False
    if settings.exec_plugin is not None and not settings.static_credentials():
        credential = run_exec_plugin(settings.exec_plugin, settings, environ, ca or b"")
        uses_plugin, expires_at = True, credential.expires_at
        authorization = f"Bearer {credential.token}" if credential.token else ""
        if credential.cert_data:
            cert, key = credential.cert_data, credential.key_data
    if any(c in authorization for c in "\r\n"):
        raise KubeConfigError("the token or password contains a line break")
    proxy = settings.proxy_url or kc.environment_proxy(settings.server, environ)
    config = ClientConfig(
        host=settings.server.rstrip("/"),
        ca_pem=ca,
        verify=not settings.insecure,
        tls_server_name=settings.tls_server_name,
        cert_pem=cert,
        key_pem=key,
        authorization=authorization,
        proxy_url=proxy,
        uses_plugin=uses_plugin,
        source=settings.source,
        expires_at=expires_at,
    )
    if not config.host.startswith("https://"):
        return config
    return replace(config, ssl_context=tls_context(config))


def run_exec_plugin(
    plugin: kc.ExecPlugin,
    settings: kc.Settings,
    environ: Mapping[str, str],
    ca_data: bytes = b"",
    timeout: float = EXEC_TIMEOUT_SECONDS,
) -> kc.ExecCredential:
    """Run the plugin as client-go does: our environment plus its `env`, KUBERNETES_EXEC_INFO,
    no stdin (never interactive), its stderr ours; its stdout is the ExecCredential."""
    env = {**environ, **dict(plugin.env), kc.EXEC_INFO_ENV: kc.exec_info(plugin, settings, ca_data)}
    try:
        done = subprocess.run(
            [plugin.command, *plugin.args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        hint = f" ({plugin.install_hint.strip()})" if plugin.install_hint.strip() else ""
        raise KubeConfigError(
            f"exec plugin of user {settings.user!r}: executable {plugin.command} not found{hint}"
        ) from None
    except subprocess.TimeoutExpired:
        raise KubeConfigError(
            f"exec plugin of user {settings.user!r}: {plugin.command} gave no answer within {timeout:g}s"
        ) from None
    except OSError as error:
        raise KubeConfigError(f"exec plugin of user {settings.user!r}: cannot run {plugin.command}: {error}") from None
    if done.returncode != 0:
        raise KubeConfigError(
            f"exec plugin of user {settings.user!r}: {plugin.command} failed with exit code {done.returncode}"
        )
    return kc.parse_exec_credential(done.stdout, plugin)


def tls_context(config: ClientConfig) -> ssl.SSLContext:
    """TLS for the API server: TLS 1.2 or later (as client-go), the CA given (else the
    system's roots), the server's name checked (tls-server-name when given, see kubeclient),
    and our client certificate. Python reads a certificate and key only from files: they pass
    through a private temporary directory, removed before this returns."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if not config.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.ca_pem:
        if b"-----BEGIN" in config.ca_pem:
            context.load_verify_locations(cadata=config.ca_pem.decode("ascii", "ignore"))
        else:
            context.load_verify_locations(cadata=config.ca_pem)  # DER
    else:
        context.load_default_certs()
    if config.cert_pem:
        with tempfile.TemporaryDirectory(prefix="karmada-estimator-tls-") as directory:
            cert_file, key_file = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
            for path, data in ((cert_file, config.cert_pem), (key_file, config.key_pem or b"")):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                    file.write(data)
            try:
                context.load_cert_chain(cert_file, key_file)
            except ssl.SSLError as error:
                raise KubeConfigError(f"the client certificate and key cannot be used together: {error}") from None
    return context
