"""Karmada's general estimator counts a quantity by its written format (quantityAsInt64:
MilliValue for a decimal format, Value for a binary one), so a Cluster status or a request
written "the other way" is off by 1000 there. --karmada-compatible follows it; the default
mode keeps the true amounts. Expected values are worked out from that rule.

Requests come from Karmada's ResourceList: cpu in milli, memory in a binary format when a
multiple of 1Ki (a JSON round trip writes other amounts as plain numbers, read back as
decimal), extended resources decimal.
"""

from __future__ import annotations

import pytest

from scheduler_client.clusters import parse_cluster, to_cluster_object
from scheduler_client.karmada import summary_sets
from scheduler_client.interpreters import interpret


def summary(memory, gpu="8", cpu="100", pods="110"):
    obj = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m"},
           "status": {"resourceSummary": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods,
                                                          "nvidia.com/gpu": gpu}}}}
    return parse_cluster(obj).summary


def job(memory, gpu=None):
    requests = {"cpu": "1", "memory": memory, **({"nvidia.com/gpu": gpu} if gpu else {})}
    return interpret({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "t", "namespace": "n"},
                      "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
                          "containers": [{"name": "w", "resources": {"requests": requests}}]}}}}}}).components


CASES = [
    # 64Gi / 32Gi = 2 sets; cpu 100 / 1 = 100, pods 110.
    ("Binary on both sides agree", "64Gi", "32Gi", None, 2, 2),
    # "68719476736" is decimal: 68719476736000 thousandths / 34359738368 = 2000 -> cpu bound 100.
    ("A plain-number allocatable is read in thousandths", "68719476736", "32Gi", None, 2, 100),
    # 1000M = 10^9 bytes, not a multiple of 1Ki: decimal, 10^12 thousandths > 64Gi -> 0.
    ("A request that is not a multiple of 1Ki is read in thousandths", "64Gi", "1000M", None, 68, 0),
    # 64G is a decimal suffix: 64e12 thousandths / 1Gi = 59604 -> cpu bound 100.
    ("A decimal suffix on the allocatable is read in thousandths", "64G", "1Gi", None, 59, 100),
    # GPUs are decimal on both sides: 8000 / 3000 = 2, as the amounts say.
    ("Extended resources are decimal on both sides", "64Gi", "1Gi", "3", 2, 2),
]


@pytest.mark.parametrize("allocatable,asked,gpu,plain,karmada", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_karmada_counts_by_written_format(allocatable, asked, gpu, plain, karmada):
    components, status = job(asked, gpu), summary(allocatable)
    assert summary_sets(status, components).value == plain
    assert summary_sets(status, components, karmada_compatible=True).value == karmada


def test_summarize_writes_memory_in_a_binary_format_so_karmada_reads_the_same_amount():
    written = to_cluster_object("m", {}, (), summary("68719476736"), None)
    assert written["status"]["resourceSummary"]["allocatable"]["memory"] == "64Gi"
    reread = parse_cluster(written).summary
    assert summary_sets(reread, job("32Gi"), karmada_compatible=True).value == 2
