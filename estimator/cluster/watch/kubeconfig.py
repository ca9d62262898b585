"""What a kubeconfig, --master or the in-cluster environment says about the member's API
server and our credentials, read the way client-go's clientcmd reads it. Pure: the caller
(kubecredentials.py) reads the files, runs exec plugins and hands their output in here.

Supported, as in client-go:
- several files in one --kubeconfig (`a.yaml:b.yaml`, as KUBECONFIG): a cluster, user or
  context defined in more than one file comes from the first; so does current-context;
- the current context, or the context named by the caller;
- cluster: server (no scheme: https when a CA, client certificate or insecure-skip-tls-verify
  says TLS, else http), certificate-authority / certificate-authority-data,
  insecure-skip-tls-verify, tls-server-name, proxy-url (http, https, socks5);
- user: client-certificate(-data) + client-key(-data), token, tokenFile (the file wins over an
  inline token, as in client-go, and is re-read on reload), username + password, and exec
  credential plugins (client.authentication.k8s.io/v1 and v1beta1);
- relative file paths (and an exec command containing a slash) are relative to the directory
  of the kubeconfig file that defines them;
- without --kubeconfig and --master, the pod's service account (KUBERNETES_SERVICE_HOST/PORT,
  its token and ca.crt);
- HTTPS_PROXY / HTTP_PROXY / NO_PROXY when the cluster names no proxy-url (loopback and
  localhost never go through one), as Go's http.ProxyFromEnvironment.

Refused with a message naming the entry (never silently ignored): auth-provider users (kubectl
dropped the gcp and azure providers in 1.26; use their exec plugins, or kubelogin for oidc),
impersonation (as, as-groups, as-uid, as-user-extra), exec plugins that want a terminal
(interactiveMode Always), and what client-go refuses: a file and its -data both given, a
certificate without its key, a CA together with insecure-skip-tls-verify, a token together with
a username and password.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from estimator.cluster.watch.apierrors import KubeConfigError

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
# The cluster extension client-go passes to a plugin as spec.cluster.config.
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
_IMPERSONATION = ("as", "as-uid", "as-groups", "as-user-extra")
_PROXY_SCHEMES = ("http", "https", "socks5")


@dataclass(frozen=True)
class ExecPlugin:
    """A user's `exec` section."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    interactive_mode: str = "Never"
    provide_cluster_info: bool = False
    install_hint: str = ""
    cluster_config: Any = None  # the cluster's client.authentication.k8s.io/exec extension


@dataclass(frozen=True)
class Settings:
    """One cluster and user: paths absolute, -data fields decoded, nothing read yet."""

    server: str
    source: str  # where the settings came from, for messages
    user: str = ""  # the user entry's name ("" for none)
    ca_file: str = ""
    ca_data: bytes = b""
    insecure: bool = False
    tls_server_name: str = ""
    proxy_url: str = ""
    cert_file: str = ""
    cert_data: bytes = b""
    key_file: str = ""
    key_data: bytes = b""
    token: str = ""
    token_file: str = ""
    username: str = ""
    password: str = ""
    exec_plugin: ExecPlugin | None = None
    ca_optional: bool = False  # in-cluster: an unreadable ca.crt means the system's roots, as in client-go

    def static_credentials(self) -> bool:
        """A token, password or client certificate: client-go then does not run the exec plugin."""
        return bool(self.token or self.token_file or self.username or self.password or self.cert_file or self.cert_data)


@dataclass(frozen=True)
class ExecCredential:
    """What an exec plugin printed: a token and/or a client certificate and key."""

    token: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    expires_at: float | None = None  # seconds since the epoch; None: valid until refused


@dataclass(frozen=True)
class Merged:
    """Several kubeconfig files as one: name -> (file it came from, entry)."""

    current_context: str
    clusters: dict[str, tuple[str, dict]]
    users: dict[str, tuple[str, dict]]
    contexts: dict[str, tuple[str, dict]]
    files: tuple[str, ...]


def merge(documents: Iterable[tuple[str, Any]]) -> Merged:
    """client-go's merge of a KUBECONFIG list: the first file to define a name (or a
    current-context) wins. `documents`: (absolute path, parsed file); None is an empty file."""
    current = ""
    sections: dict[str, dict[str, tuple[str, dict]]] = {"clusters": {}, "users": {}, "contexts": {}}
    files = []
    for path, document in documents:
        files.append(path)
        if document is None:
            continue
        if not isinstance(document, dict):
            raise KubeConfigError(f"{path}: not a kubeconfig (a mapping with clusters, users and contexts expected)")
        if not current and document.get("current-context"):
            current = str(document["current-context"])
        for section, key in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            entries = document.get(section) or []
            if not isinstance(entries, list):
                raise KubeConfigError(f"{path}: {section} is not a list")
            for entry in entries:
                if not isinstance(entry, dict) or not entry.get("name"):
                    raise KubeConfigError(f"{path}: an entry of {section} has no name")
                body = entry.get(key) or {}
                if not isinstance(body, dict):
                    raise KubeConfigError(f"{path}: {section} {entry['name']!r}: {key} is not a mapping")
                sections[section].setdefault(str(entry["name"]), (path, body))
    return Merged(current, sections["clusters"], sections["users"], sections["contexts"], tuple(files))


def select(merged: Merged, context: str | None = None) -> Settings:
    """The settings of `context` (else the current context): its cluster and user."""
    files = ", ".join(merged.files)
    name = context or merged.current_context
    if not name:
        raise KubeConfigError(f"{files}: no current-context is set and no context was given")
    if name not in merged.contexts:
        raise KubeConfigError(f"{files}: context {name!r} is not defined")
    _, entry = merged.contexts[name]
    cluster_name, user_name = str(entry.get("cluster") or ""), str(entry.get("user") or "")
    if cluster_name not in merged.clusters:
        raise KubeConfigError(f"{files}: context {name!r} names cluster {cluster_name!r}, which is not defined")
    if user_name and user_name not in merged.users:
        raise KubeConfigError(f"{files}: context {name!r} names user {user_name!r}, which is not defined")
    settings = _cluster(cluster_name, *merged.clusters[cluster_name], source=f"{files} (context {name!r})")
    if user_name:
        settings = _user(settings, user_name, *merged.users[user_name], cluster=merged.clusters[cluster_name][1])
    if not settings.server.startswith(("https://", "http://")):
        tls = settings.ca_file or settings.ca_data or settings.cert_file or settings.cert_data or settings.insecure
        settings = replace(settings, server=("https://" if tls else "http://") + settings.server)
    return settings


def _resolve(path: str, origin: str) -> str:
    """A path in a kubeconfig, relative to the directory of the file it is in."""
    if not path or os.path.isabs(path):
        return path
    return os.path.join(os.path.dirname(os.path.abspath(origin)), path)


def _data(entry: dict, key: str, where: str) -> bytes:
    value = entry.get(key)
    if not value:
        return b""
    try:
        return base64.b64decode("".join(str(value).split()), validate=True)
    except (binascii.Error, ValueError):
        raise KubeConfigError(f"{where}: {key} is not valid base64") from None


def _pair(entry: dict, file_key: str, data_key: str, origin: str, where: str) -> tuple[str, bytes]:
    path, data = _resolve(str(entry.get(file_key) or ""), origin), _data(entry, data_key, where)
    if path and data:
        raise KubeConfigError(f"{where}: {file_key} and {data_key} are both given; give one (client-go refuses both)")
    return path, data


def _cluster(name: str, origin: str, entry: dict, source: str) -> Settings:
    where = f"{origin}: cluster {name!r}"
    server = str(entry.get("server") or "").strip()
    if not server:
        raise KubeConfigError(f"{where} has no server")
    ca_file, ca_data = _pair(entry, "certificate-authority", "certificate-authority-data", origin, where)
    insecure = entry.get("insecure-skip-tls-verify") is True
    if insecure and (ca_file or ca_data):
        raise KubeConfigError(
            f"{where}: insecure-skip-tls-verify with a certificate authority; give one of them (client-go refuses both)"
        )
    proxy = str(entry.get("proxy-url") or "")
    if proxy:
        parts = urlsplit(proxy)
        if parts.scheme not in _PROXY_SCHEMES or not parts.hostname:
            raise KubeConfigError(f"{where}: proxy-url {proxy!r}: an http, https or socks5 URL with a host expected")
    return Settings(
        server=server.rstrip("/"),
        source=source,
        ca_file=ca_file,
        ca_data=ca_data,
        insecure=insecure,
        tls_server_name=str(entry.get("tls-server-name") or ""),
        proxy_url=proxy,
    )


def _user(settings: Settings, name: str, origin: str, entry: dict, cluster: dict) -> Settings:
    where = f"{origin}: user {name!r}"
    if entry.get("auth-provider"):
        provider = entry["auth-provider"].get("name", "?") if isinstance(entry["auth-provider"], dict) else "?"
        raise KubeConfigError(
            f"{where} authenticates through auth-provider {provider!r}, which is not supported: kubectl itself dropped "
            f"the gcp and azure providers in 1.26. Use the provider's exec plugin instead (gke-gcloud-auth-plugin, "
            f"kubelogin for Azure and for oidc), or a token or client certificate"
        )
    impersonating = [key for key in _IMPERSONATION if entry.get(key)]
    if impersonating:
        raise KubeConfigError(f"{where}: impersonation ({', '.join(impersonating)}) is not supported")
    cert_file, cert_data = _pair(entry, "client-certificate", "client-certificate-data", origin, where)
    key_file, key_data = _pair(entry, "client-key", "client-key-data", origin, where)
    if bool(cert_file or cert_data) != bool(key_file or key_data):
        raise KubeConfigError(f"{where}: a client certificate needs its key and a key its certificate")
    token, token_file = str(entry.get("token") or "").strip(), _resolve(str(entry.get("tokenFile") or ""), origin)
    username, password = str(entry.get("username") or ""), str(entry.get("password") or "")
    if (token or token_file) and (username or password):
        raise KubeConfigError(
            f"{where}: a token and a username/password are both given; only one authentication "
            f"method is allowed (as in client-go)"
        )
    plugin = _exec(entry["exec"], origin, where, cluster) if entry.get("exec") else None
    return replace(
        settings,
        user=name,
        cert_file=cert_file,
        cert_data=cert_data,
        key_file=key_file,
        key_data=key_data,
        token=token,
        token_file=token_file,
        username=username,
        password=password,
        exec_plugin=plugin,
    )


def _exec(entry: Any, origin: str, where: str, cluster: dict) -> ExecPlugin:
    if not isinstance(entry, dict):
        raise KubeConfigError(f"{where}: exec is not a mapping")
    command = str(entry.get("command") or "")
    if not command:
        raise KubeConfigError(f"{where}: exec has no command")
    if "/" in command:  # a bare name is looked up on PATH
        command = _resolve(command, origin)
    version = str(entry.get("apiVersion") or "")
    if version not in EXEC_API_VERSIONS:
        raise KubeConfigError(
            f"{where}: exec apiVersion {version!r} is not supported (use one of {', '.join(EXEC_API_VERSIONS)})"
        )
    mode = str(entry.get("interactiveMode") or "")
    if not mode and version.endswith("/v1beta1"):
        mode = "IfAvailable"  # client-go's default for v1beta1; v1 must say
    if mode not in _INTERACTIVE_MODES:
        raise KubeConfigError(
            f"{where}: exec interactiveMode {mode!r}: one of {', '.join(_INTERACTIVE_MODES)} expected"
        )
    if mode == "Always":
        raise KubeConfigError(
            f"{where}: the exec plugin wants a terminal (interactiveMode Always); the estimator runs without one"
        )
    env = []
    for variable in entry.get("env") or []:
        if not isinstance(variable, dict) or not variable.get("name"):
            raise KubeConfigError(f"{where}: an exec env entry has no name")
        env.append((str(variable["name"]), str(variable.get("value") or "")))
    args = entry.get("args") or []
    if not isinstance(args, list):
        raise KubeConfigError(f"{where}: exec args is not a list")
    extensions = {e.get("name"): e.get("extension") for e in cluster.get("extensions") or [] if isinstance(e, dict)}
    return ExecPlugin(
        command=command,
        args=tuple(str(a) for a in args),
        env=tuple(env),
        api_version=version,
        interactive_mode=mode,
        provide_cluster_info=entry.get("provideClusterInfo") is True,
        install_hint=str(entry.get("installHint") or ""),
        cluster_config=extensions.get(EXEC_EXTENSION),
    )


def in_cluster(environ: Mapping[str, str], directory: str = SERVICE_ACCOUNT_DIR) -> Settings:
    """rest.InClusterConfig: the service's address from the environment, the service
    account's token file (re-read: it rotates) and CA file."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError("not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    return Settings(
        server=f"https://{host}:{port}",
        source="in-cluster service account",
        token_file=os.path.join(directory, "token"),
        ca_file=os.path.join(directory, "ca.crt"),
        ca_optional=True,
    )


def exec_info(plugin: ExecPlugin, settings: Settings, ca_data: bytes = b"") -> str:
    """The KUBERNETES_EXEC_INFO a plugin gets: a non-interactive ExecCredential request, with
    the cluster when the plugin asks for it (provideClusterInfo)."""
    spec: dict[str, Any] = {"interactive": False}
    if plugin.provide_cluster_info:
        cluster: dict[str, Any] = {"server": settings.server}
        for key, value in (
            ("tls-server-name", settings.tls_server_name),
            ("proxy-url", settings.proxy_url),
            ("insecure-skip-tls-verify", settings.insecure),
            ("certificate-authority-data", base64.b64encode(ca_data).decode() if ca_data else ""),
            ("config", plugin.cluster_config),
        ):
            if value:
                cluster[key] = value
        spec["cluster"] = cluster
    return json.dumps({"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}, separators=(",", ":"))


def parse_exec_credential(stdout: bytes, plugin: ExecPlugin) -> ExecCredential:
    """The ExecCredential a plugin printed, checked as client-go checks it."""
    where = f"exec plugin {plugin.command}"
    try:
        document = json.loads(stdout)
    except ValueError:
        raise KubeConfigError(f"{where}: its output is not an ExecCredential in JSON") from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise KubeConfigError(f"{where}: its output is not an ExecCredential")
    if document.get("apiVersion") != plugin.api_version:
        raise KubeConfigError(
            f"{where}: configured for {plugin.api_version}, it answered {document.get('apiVersion')!r}"
        )
    status = document.get("status")
    if not isinstance(status, dict):
        raise KubeConfigError(f"{where}: its ExecCredential has no status")
    token = str(status.get("token") or "")
    cert, key = str(status.get("clientCertificateData") or ""), str(status.get("clientKeyData") or "")
    if not (token or cert or key):
        raise KubeConfigError(f"{where}: it returned neither a token nor a client certificate and key")
    if bool(cert) != bool(key):
        raise KubeConfigError(
            f"{where}: it returned a client certificate without its key, or a key without its certificate"
        )
    expires_at = None
    if status.get("expirationTimestamp"):
        try:
            expires_at = datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise KubeConfigError(
                f"{where}: expirationTimestamp {status['expirationTimestamp']!r} is not RFC 3339"
            ) from None
    return ExecCredential(token=token.strip(), cert_data=cert.encode(), key_data=key.encode(), expires_at=expires_at)


def environment_proxy(server: str, environ: Mapping[str, str]) -> str:
    """Go's http.ProxyFromEnvironment for `server`: HTTPS_PROXY (https) or HTTP_PROXY (http),
    lower case first, unless NO_PROXY covers the host; never for localhost or loopback."""
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    scheme = "https" if parts.scheme == "https" else "http"
    proxy = environ.get(f"{scheme}_proxy") or environ.get(f"{scheme.upper()}_PROXY") or ""
    if not proxy or not host or host == "localhost":
        return ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address.is_loopback:
        return ""
    port = str(parts.port or (443 if scheme == "https" else 80))
    for rule in (environ.get("no_proxy") or environ.get("NO_PROXY") or "").split(","):
        rule = rule.strip().lower()
        if not rule:
            continue
        if rule == "*":
            return ""
        if address is not None:
            try:
                if address in ipaddress.ip_network(rule, strict=False):
                    return ""
                continue
            except ValueError:
                pass
        rule_host, _, rule_port = rule.rpartition(":") if rule.count(":") == 1 else (rule, "", "")
        if rule_port and rule_port != port:
            continue
        rule_host = rule_host.removeprefix("*")
        if host.endswith(rule_host if rule_host.startswith(".") else "." + rule_host) or host == rule_host:
            return ""  # "example.com" covers it and its subdomains, ".example.com" only the subdomains
    return proxy if "://" in proxy else "http://" + proxy


def with_server(settings: Settings, master: str) -> Settings:
    """--master replaces the server and keeps the credentials."""
    return replace(settings, server=master)
