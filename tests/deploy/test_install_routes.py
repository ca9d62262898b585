"""e2e/harness/install.py's emulation of a pod (pod_argv): what make e2e uses to start our
estimator exactly as a Deployment of Karmada's chart, karmadactl or ours would."""

from __future__ import annotations

import pytest

from e2e.harness import install
from estimator.deploy import manifests as m

# The container of Karmada v1.18.2's chart for member-b (templates/karmada-scheduler-estimator.yaml).
CHART_DEPLOYMENT = {
    "metadata": {"name": "karmada-scheduler-estimator-member-b"},
    "spec": {"template": {"spec": {
        "containers": [{
            "name": "karmada-scheduler-estimator",
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "command": ["/bin/karmada-scheduler-estimator", "--kubeconfig=/etc/member-b-kubeconfig",
                        "--cluster-name=member-b", "--grpc-auth-cert-file=/etc/karmada/pki/karmada.crt",
                        "--grpc-auth-key-file=/etc/karmada/pki/karmada.key",
                        "--grpc-client-ca-file=/etc/karmada/pki/server-ca.crt",
                        "--metrics-bind-address=$(POD_IP):8080", "--health-probe-bind-address=$(POD_IP):10351", "--v=2"],
            "volumeMounts": [{"name": "karmada-certs", "mountPath": "/etc/karmada/pki", "readOnly": True},
                             {"name": "member-kubeconfig", "subPath": "member-b-kubeconfig",
                              "mountPath": "/etc/member-b-kubeconfig"}]}],
        "volumes": [{"name": "karmada-certs", "secret": {"secretName": "karmada-cert"}},
                    {"name": "member-kubeconfig", "secret": {"secretName": "member-b-kubeconfig"}}]}}},
}
CHART_SECRETS = {
    "karmada-cert": {"karmada.crt": b"CRT", "karmada.key": b"KEY", "server-ca.crt": b"CA", "server-ca.key": b"CAKEY"},
    "member-b-kubeconfig": {"member-b-kubeconfig": b"apiVersion: v1\nkind: Config\n"},
}


@pytest.mark.parametrize("text,expected", [
    ("$(POD_IP):8080", "10.1.2.3:8080"), ("$$(POD_IP)", "$(POD_IP)"), ("$(NOPE)", "$(NOPE)"), ("a$$b", "a$b"),
], ids=["a defined variable is replaced", "$$ escapes a reference", "an undefined one stays as written",
        "$$ alone is one dollar"])
def test_variables_expand_as_the_kubelet_expands_them(text, expected):
    assert install.expand(text, {"POD_IP": "10.1.2.3"}) == expected


def test_the_charts_command_runs_with_its_secrets_as_files_and_the_pods_address(tmp_path):
    words, env = install.pod_argv(CHART_DEPLOYMENT, CHART_SECRETS, tmp_path, "127.7.7.7")
    assert words == [
        "/bin/karmada-scheduler-estimator", f"--kubeconfig={tmp_path}/etc/member-b-kubeconfig", "--cluster-name=member-b",
        f"--grpc-auth-cert-file={tmp_path}/etc/karmada/pki/karmada.crt",
        f"--grpc-auth-key-file={tmp_path}/etc/karmada/pki/karmada.key",
        f"--grpc-client-ca-file={tmp_path}/etc/karmada/pki/server-ca.crt",
        "--metrics-bind-address=127.7.7.7:8080", "--health-probe-bind-address=127.7.7.7:10351", "--v=2",
        "--server-bind-address=127.7.7.7"]
    assert env == {"POD_IP": "127.7.7.7"}
    assert (tmp_path / "etc/member-b-kubeconfig").read_bytes().startswith(b"apiVersion")  # subPath: a file
    assert (tmp_path / "etc/karmada/pki/server-ca.key").read_bytes() == b"CAKEY"  # no items: every key
    assert install.process_argv(words)[:2] == ["sh", str(install.ENTRYPOINT)]


def test_our_deployment_sees_only_the_projected_keys_and_binds_the_pods_addresses(tmp_path):
    deployment = m.deployment(m.Options(cluster_name="member-b"))
    words, env = install.pod_argv(deployment, CHART_SECRETS, tmp_path, "127.7.7.7")
    assert sorted(p.name for p in (tmp_path / "etc/karmada/pki").iterdir()) == ["karmada.crt", "karmada.key",
                                                                                 "server-ca.crt"]
    assert "--health-probe-bind-address=127.7.7.7:10351" in words and "--metrics-bind-address=127.7.7.7:8080" in words
    assert env["NUMBA_CACHE_DIR"] == f"{tmp_path}{m.NUMBA_CACHE_DIR}"
    assert words[0] == m.ENTRYPOINT and install.process_argv(words)[0] == "sh"


@pytest.mark.parametrize("secrets,message", [
    ({"member-b-kubeconfig": CHART_SECRETS["member-b-kubeconfig"]}, "Secret karmada-cert"),
    ({**CHART_SECRETS, "karmada-cert": {"karmada.crt": b"x"}}, "no key karmada.key"),
], ids=["a missing Secret is refused", "a Secret without a projected key is refused"])
def test_what_a_kubelet_would_refuse_is_refused(tmp_path, secrets, message):
    with pytest.raises(install.PodError, match=message):
        install.pod_argv(m.deployment(m.Options(cluster_name="member-b")), secrets, tmp_path, "127.7.7.7")


def test_a_command_our_image_does_not_have_is_refused():
    with pytest.raises(install.PodError, match="not one our image provides"):
        install.process_argv(["/bin/karmada-scheduler-estimator-go", "--v=2"])
