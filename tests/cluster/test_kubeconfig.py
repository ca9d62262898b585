"""The kubeconfig loader (estimator/cluster/watch/kubeconfig.py, kubecredentials.py): which
cluster and user a kubeconfig selects, what their fields become, and what is refused. The
expected values are written out here from client-go's documented behaviour (clientcmd's
merge and relative paths, rest.InClusterConfig, the exec credential protocol), not derived
from the loader; the loaded configurations are used against servers in
test_kubeconfig_live.py."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import pytest

from estimator.cluster.watch.apierrors import KubeConfigError
from estimator.cluster.watch.kubeconfig import environment_proxy
from estimator.cluster.watch.kubecredentials import load_configuration
from tests.service.test_mtls import CA


def write_kubeconfig(path: Path, cluster: dict, user: dict | None = None, *, name: str = "m",
                     extra_contexts: list | None = None, current: str | None = None) -> Path:
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": f"{name}-user", "user": user}] if user is not None else [],
        "contexts": [{"name": name, "context": {"cluster": name, **({"user": f"{name}-user"} if user is not None
                                                                     else {})}}] + (extra_contexts or []),
        "current-context": name if current is None else current,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_yaml(config))
    return path


def _yaml(value, indent: int = 0) -> str:
    """Block-style YAML (what kubectl writes), so the loader's YAML path is exercised."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        out = ""
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out += f"{pad}{key}:\n{_yaml(item, indent + 2)}"
            else:
                out += f"{pad}{key}: {json.dumps(item)}\n"
        return out
    if isinstance(value, list):
        if not value:
            return pad + "[]\n"
        out = ""
        for item in value:
            text = _yaml(item, indent + 2)
            out += f"{pad}- {text.lstrip()}"
        return out
    return f"{pad}{json.dumps(value)}\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- selection and fields ------------------------------------------------------------------


def test_the_current_context_selects_cluster_and_user_and_a_token_becomes_a_bearer_header(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://10.0.0.5:6443/"}, {"token": "abc\n"})
    config = load_configuration(str(path))
    assert config.host == "https://10.0.0.5:6443"
    assert config.authorization == "Bearer abc"  # trailing newline trimmed, as client-go does
    assert config.verify and config.ca_pem is None  # the system's roots
    assert not config.uses_plugin


def test_a_named_context_wins_over_the_current_one_and_a_missing_context_is_an_error_naming_it(tmp_path):
    path = tmp_path / "config"
    write_kubeconfig(path, {"server": "https://a:6443"}, {"token": "t"},
                     extra_contexts=[{"name": "other", "context": {"cluster": "m"}}])
    assert load_configuration(str(path), context="other").authorization == ""  # that context has no user
    with pytest.raises(KubeConfigError, match="context 'nope' is not defined"):
        load_configuration(str(path), context="nope")


def test_a_current_context_that_does_not_exist_is_an_error(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443"}, {"token": "t"}, current="gone")
    with pytest.raises(KubeConfigError, match="'gone'"):
        load_configuration(str(path))


def test_a_context_naming_an_undefined_user_is_an_error_not_an_anonymous_client(tmp_path):
    path = tmp_path / "config"
    write_kubeconfig(path, {"server": "https://a:6443"}, {"token": "t"},
                     extra_contexts=[{"name": "typo", "context": {"cluster": "m", "user": "m-usr"}}])
    with pytest.raises(KubeConfigError, match="user 'm-usr'"):
        load_configuration(str(path), context="typo")


def test_data_fields_are_decoded_and_both_file_and_data_are_refused(tmp_path):
    ca = CA("member-ca")
    client = ca.issue("estimator", server=False)
    path = write_kubeconfig(tmp_path / "config",
                            {"server": "https://a:6443", "certificate-authority-data": b64(ca.pem),
                             "tls-server-name": "kubernetes.default.svc"},
                            {"client-certificate-data": b64(client.cert), "client-key-data": b64(client.key)})
    config = load_configuration(str(path))
    assert (config.ca_pem, config.cert_pem, config.key_pem) == (ca.pem, client.cert, client.key)
    assert config.tls_server_name == "kubernetes.default.svc"
    assert config.ssl_context is not None and config.authorization == ""

    (tmp_path / "ca.crt").write_bytes(ca.pem)
    both = write_kubeconfig(tmp_path / "both", {"server": "https://a:6443", "certificate-authority": "ca.crt",
                                                "certificate-authority-data": b64(ca.pem)}, {"token": "t"})
    with pytest.raises(KubeConfigError, match="certificate-authority and certificate-authority-data"):
        load_configuration(str(both))


def test_relative_paths_are_relative_to_the_kubeconfig_file_not_the_working_directory(tmp_path, monkeypatch):
    ca = CA("member-ca")
    client = ca.issue("estimator", server=False)
    home = tmp_path / "home" / ".kube"
    (home / "pki").mkdir(parents=True)
    (home / "pki" / "ca.crt").write_bytes(ca.pem)
    (home / "pki" / "client.crt").write_bytes(client.cert)
    (home / "pki" / "client.key").write_bytes(client.key)
    path = write_kubeconfig(home / "config", {"server": "https://a:6443", "certificate-authority": "pki/ca.crt"},
                            {"client-certificate": "pki/client.crt", "client-key": "./pki/client.key"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_configuration(str(path))
    assert (config.ca_pem, config.cert_pem, config.key_pem) == (ca.pem, client.cert, client.key)


def test_a_token_file_is_read_at_every_load_and_wins_over_an_inline_token(tmp_path):
    (tmp_path / "token").write_text("first\n")
    path = write_kubeconfig(tmp_path / "config", {"server": "http://a:8080"}, {"tokenFile": "token", "token": "inline"})
    assert load_configuration(str(path)).authorization == "Bearer first"
    (tmp_path / "token").write_text("second")
    assert load_configuration(str(path)).authorization == "Bearer second"
    (tmp_path / "token").unlink()  # unreadable: client-go falls back to the inline token
    assert load_configuration(str(path)).authorization == "Bearer inline"
    alone = write_kubeconfig(tmp_path / "alone", {"server": "http://a:8080"}, {"tokenFile": "missing"})
    with pytest.raises(KubeConfigError, match="tokenFile"):
        load_configuration(str(alone))


def test_username_and_password_become_basic_auth_and_cannot_be_combined_with_a_token(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443"}, {"username": "admin", "password": "s3cret"})
    assert load_configuration(str(path)).authorization == "Basic " + b64(b"admin:s3cret")
    both = write_kubeconfig(tmp_path / "both", {"server": "https://a:6443"},
                            {"username": "admin", "password": "x", "token": "t"})
    with pytest.raises(KubeConfigError, match="only one authentication method"):
        load_configuration(str(both))


def test_insecure_skip_tls_verify_turns_verification_off_and_refuses_a_ca_beside_it(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443", "insecure-skip-tls-verify": True},
                            {"token": "t"})
    assert load_configuration(str(path)).verify is False
    both = write_kubeconfig(tmp_path / "both", {"server": "https://a:6443", "insecure-skip-tls-verify": True,
                                                "certificate-authority-data": b64(CA("x").pem)}, {"token": "t"})
    with pytest.raises(KubeConfigError, match="insecure-skip-tls-verify"):
        load_configuration(str(both))


def test_a_certificate_without_its_key_is_refused(tmp_path):
    client = CA("x").issue("estimator", server=False)
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443"},
                            {"client-certificate-data": b64(client.cert)})
    with pytest.raises(KubeConfigError, match="needs its key"):
        load_configuration(str(path))


def test_a_server_without_a_scheme_gets_https_when_tls_is_configured_else_http(tmp_path):
    tls = write_kubeconfig(tmp_path / "tls", {"server": "a:6443", "insecure-skip-tls-verify": True}, {"token": "t"})
    plain = write_kubeconfig(tmp_path / "plain", {"server": "a:8080"}, {"token": "t"})
    assert load_configuration(str(tls)).host == "https://a:6443"
    assert load_configuration(str(plain)).host == "http://a:8080"


def test_master_replaces_the_server_and_keeps_the_credentials_and_alone_has_none(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443"}, {"token": "t"})
    config = load_configuration(str(path), master="https://10.9.9.9:443/")
    assert (config.host, config.authorization) == ("https://10.9.9.9:443", "Bearer t")
    bare = load_configuration(master="http://127.0.0.1:8001")
    assert (bare.host, bare.authorization, bare.cert_pem) == ("http://127.0.0.1:8001", "", None)


def test_several_files_merge_with_the_first_definition_and_current_context_winning(tmp_path):
    first = write_kubeconfig(tmp_path / "first", {"server": "https://first:6443"}, {"token": "from-first"})
    second = tmp_path / "second"
    second.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "m", "cluster": {"server": "https://second:6443"}},
                     {"name": "o", "cluster": {"server": "https://other:6443"}}],
        "users": [{"name": "m-user", "user": {"token": "from-second"}}],
        "contexts": [{"name": "other", "context": {"cluster": "o", "user": "m-user"}}],
    }))
    merged = load_configuration(f"{first}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{second}")
    assert (merged.host, merged.authorization) == ("https://first:6443", "Bearer from-first")
    other = load_configuration(f"{first}{os.pathsep}{second}", context="other")
    assert (other.host, other.authorization) == ("https://other:6443", "Bearer from-first")  # m-user: first file's


def test_a_single_missing_file_and_an_unparsable_file_are_errors_naming_the_file(tmp_path):
    with pytest.raises(KubeConfigError, match="no such file"):
        load_configuration(str(tmp_path / "nope"))
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n")
    with pytest.raises(KubeConfigError, match="broken"):
        load_configuration(str(broken))


@pytest.mark.parametrize("provider", ["gcp", "azure", "oidc"])
def test_an_auth_provider_user_is_refused_with_a_message_naming_the_user(tmp_path, provider):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443"},
                            {"auth-provider": {"name": provider, "config": {"access-token": "x"}}})
    with pytest.raises(KubeConfigError) as refused:
        load_configuration(str(path))
    message = str(refused.value)
    assert "user 'm-user'" in message and f"auth-provider '{provider}'" in message
    assert "dropped the gcp and azure providers" in message and "exec plugin" in message


def test_impersonation_is_refused_rather_than_ignored(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443"}, {"token": "t", "as": "someone"})
    with pytest.raises(KubeConfigError, match="impersonation"):
        load_configuration(str(path))


def test_a_proxy_url_is_used_and_must_be_http_https_or_socks5(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "https://a:6443", "proxy-url": "http://proxy:3128"},
                            {"token": "t"})
    assert load_configuration(str(path)).proxy_url == "http://proxy:3128"
    bad = write_kubeconfig(tmp_path / "bad", {"server": "https://a:6443", "proxy-url": "ftp://proxy"}, {"token": "t"})
    with pytest.raises(KubeConfigError, match="proxy-url"):
        load_configuration(str(bad))


@pytest.mark.parametrize("server, environ, expected", [
    ("https://api.example.com:6443", {"HTTPS_PROXY": "proxy:3128"}, "http://proxy:3128"),
    ("https://api.example.com:6443", {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, "http://lower:1"),
    ("http://api.example.com", {"HTTPS_PROXY": "http://p:1"}, ""),  # http goes by HTTP_PROXY only
    ("https://api.example.com", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, ""),
    ("https://example.com", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, "http://p:1"),
    ("https://api.example.com", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, ""),
    ("https://10.1.2.3:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, ""),
    ("https://11.1.2.3:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "http://p:1"),
    ("https://api.example.com:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "api.example.com:443"}, "http://p:1"),
    ("https://127.0.0.1:6443", {"HTTPS_PROXY": "http://p:1"}, ""),
    ("https://localhost:6443", {"HTTPS_PROXY": "http://p:1"}, ""),
    ("https://api.example.com", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, ""),
])
def test_proxy_from_the_environment_follows_go(server, environ, expected):
    assert environment_proxy(server, environ) == expected


# --- in-cluster ----------------------------------------------------------------------------


def service_account(directory: Path, token: str = "sa-token-1", ca: bytes | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    if ca is not None:
        (directory / "ca.crt").write_bytes(ca)
    return directory


def test_in_cluster_reads_the_service_address_token_and_ca_and_rereads_the_rotating_token(tmp_path):
    ca = CA("cluster-ca")
    sa = service_account(tmp_path / "sa", ca=ca.pem)
    environ = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = load_configuration(environ=environ, service_account_dir=str(sa))
    assert (config.host, config.authorization, config.ca_pem) == ("https://10.96.0.1:443", "Bearer sa-token-1", ca.pem)
    (sa / "token").write_text("sa-token-2")
    assert load_configuration(environ=environ, service_account_dir=str(sa)).authorization == "Bearer sa-token-2"
    v6 = load_configuration(environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"},
                            service_account_dir=str(sa))
    assert v6.host == "https://[fd00::1]:6443"


def test_in_cluster_without_the_service_environment_says_so(tmp_path):
    with pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST") as refused:
        load_configuration(environ={}, service_account_dir=str(service_account(tmp_path / "sa")))
    assert "no --kubeconfig or --master given" in str(refused.value)


def test_in_cluster_without_a_token_is_an_error_and_without_a_ca_uses_the_system_roots(tmp_path):
    environ = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError, match="token"):
        load_configuration(environ=environ, service_account_dir=str(tmp_path / "empty"))
    config = load_configuration(environ=environ, service_account_dir=str(service_account(tmp_path / "sa")))
    assert config.ca_pem is None and config.verify


# --- exec plugins --------------------------------------------------------------------------

PLUGIN = r'''#!{python}
# A test exec credential plugin: prints an ExecCredential whose token is the content of
# TOKEN_FILE, counting its runs in COUNT_FILE and recording what it was given.
import json, os, sys
count_file = os.environ["COUNT_FILE"]
runs = int(open(count_file).read() or 0) + 1 if os.path.exists(count_file) else 1
open(count_file, "w").write(str(runs))
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
open(os.environ["COUNT_FILE"] + ".info", "w").write(json.dumps({{"info": info, "args": sys.argv[1:],
    "stdin_tty": os.isatty(0)}}))
if os.environ.get("FAIL"):
    sys.exit(int(os.environ["FAIL"]))
status = {{"token": open(os.environ["TOKEN_FILE"]).read().strip()}}
if os.environ.get("EXPIRES"):
    status["expirationTimestamp"] = os.environ["EXPIRES"]
if os.environ.get("CERT_FILE"):
    status = {{"clientCertificateData": open(os.environ["CERT_FILE"]).read(),
              "clientKeyData": open(os.environ["KEY_FILE"]).read()}}
print(json.dumps({{"apiVersion": os.environ.get("ANSWER_VERSION") or info["apiVersion"], "kind": "ExecCredential",
                  "status": status}}))
'''


def exec_plugin(directory: Path) -> Path:
    script = directory / "bin" / "plugin.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(PLUGIN.format(python=sys.executable))
    script.chmod(0o755)
    return script


def exec_kubeconfig(directory: Path, server: str, version: str, env: dict, *, interactive: str | None = "Never",
                    cluster_extra: dict | None = None, provide_cluster_info: bool = False, **user) -> Path:
    exec_plugin(directory)
    section: dict = {"apiVersion": version, "command": "./bin/plugin.py", "args": ["--cluster", "m"],
                     "env": [{"name": k, "value": str(v)} for k, v in env.items()]}
    if interactive:
        section["interactiveMode"] = interactive
    if provide_cluster_info:
        section["provideClusterInfo"] = True
    return write_kubeconfig(directory / "config", {"server": server, **(cluster_extra or {})},
                            {"exec": section, **user})


def plugin_env(directory: Path, token: str = "exec-token-1", **extra) -> dict:
    (directory / "plugin-token").write_text(token)
    return {"TOKEN_FILE": directory / "plugin-token", "COUNT_FILE": directory / "runs", **extra}


def runs(directory: Path) -> int:
    path = directory / "runs"
    return int(path.read_text()) if path.exists() else 0


@pytest.mark.parametrize("version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"])
def test_an_exec_plugin_runs_with_its_env_args_and_exec_info_and_its_token_is_used(tmp_path, version):
    path = exec_kubeconfig(tmp_path, "https://a:6443", version, plugin_env(tmp_path),
                           cluster_extra={"insecure-skip-tls-verify": True})
    config = load_configuration(str(path))
    assert config.authorization == "Bearer exec-token-1" and config.uses_plugin and config.expires_at is None
    seen = json.loads((tmp_path / "runs.info").read_text())
    assert seen["info"] == {"apiVersion": version, "kind": "ExecCredential", "spec": {"interactive": False}}
    assert seen["args"] == ["--cluster", "m"] and seen["stdin_tty"] is False
    assert runs(tmp_path) == 1


def test_an_exec_plugin_gets_the_cluster_when_it_asks_for_it(tmp_path):
    ca = CA("member-ca")
    path = exec_kubeconfig(tmp_path, "https://a:6443", "client.authentication.k8s.io/v1", plugin_env(tmp_path),
                           cluster_extra={"certificate-authority-data": b64(ca.pem), "tls-server-name": "api",
                                          "extensions": [{"name": "client.authentication.k8s.io/exec",
                                                          "extension": {"audience": "member"}}]},
                           provide_cluster_info=True)
    load_configuration(str(path))
    cluster = json.loads((tmp_path / "runs.info").read_text())["info"]["spec"]["cluster"]
    assert cluster == {"server": "https://a:6443", "tls-server-name": "api",
                       "certificate-authority-data": b64(ca.pem), "config": {"audience": "member"}}


def test_an_exec_credential_expiry_is_kept_as_epoch_seconds(tmp_path):
    env = plugin_env(tmp_path, EXPIRES="2031-02-03T04:05:06Z")
    path = exec_kubeconfig(tmp_path, "http://a:8080", "client.authentication.k8s.io/v1", env)
    assert load_configuration(str(path)).expires_at == 1927857906.0


def test_a_static_token_in_the_kubeconfig_wins_over_the_exec_plugin_as_in_client_go(tmp_path):
    path = exec_kubeconfig(tmp_path, "http://a:8080", "client.authentication.k8s.io/v1", plugin_env(tmp_path),
                           token="static")
    config = load_configuration(str(path))
    assert config.authorization == "Bearer static" and not config.uses_plugin and runs(tmp_path) == 0


@pytest.mark.parametrize("change, message", [
    ({"FAIL": "3"}, "failed with exit code 3"),
    ({"ANSWER_VERSION": "client.authentication.k8s.io/v1beta1"}, "configured for client.authentication.k8s.io/v1"),
])
def test_an_exec_plugin_that_fails_or_answers_another_version_is_an_error(tmp_path, change, message):
    path = exec_kubeconfig(tmp_path, "http://a:8080", "client.authentication.k8s.io/v1", plugin_env(tmp_path, **change))
    with pytest.raises(KubeConfigError, match=message):
        load_configuration(str(path))


def test_exec_plugin_settings_client_go_refuses_are_refused(tmp_path):
    env = plugin_env(tmp_path)
    v1_without_mode = exec_kubeconfig(tmp_path / "a", "http://a:8080", "client.authentication.k8s.io/v1", env,
                                      interactive=None)
    with pytest.raises(KubeConfigError, match="interactiveMode"):
        load_configuration(str(v1_without_mode))
    always = exec_kubeconfig(tmp_path / "b", "http://a:8080", "client.authentication.k8s.io/v1", env,
                             interactive="Always")
    with pytest.raises(KubeConfigError, match="terminal"):
        load_configuration(str(always))
    alpha = exec_kubeconfig(tmp_path / "c", "http://a:8080", "client.authentication.k8s.io/v1alpha1", env)
    with pytest.raises(KubeConfigError, match="v1alpha1"):
        load_configuration(str(alpha))


def test_a_missing_exec_command_is_an_error_with_its_install_hint(tmp_path):
    path = write_kubeconfig(tmp_path / "config", {"server": "http://a:8080"},
                            {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "no-such-plugin-xyz",
                                      "interactiveMode": "Never", "installHint": "install it with brew"}})
    with pytest.raises(KubeConfigError, match="no-such-plugin-xyz not found.*install it with brew"):
        load_configuration(str(path))
