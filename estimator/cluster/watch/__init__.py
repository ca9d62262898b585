"""Live member cluster: list/watch Nodes, Pods, ResourceQuotas, ReplicaSets and Deployments
into a ClusterCache, with client-go informer semantics.

- state.py: `WatchClusterState`, the server's ClusterState for a live member (threads,
  readiness, health, staleness, the collector);
- reflector.py: one kind's list/watch loop (events.py: what it makes of the server's bytes;
  failures.py: its failures in a row and backoff); specs.py: the kinds and the loop's options;
  priority.py: estimates before event processing;
- kubeclient.py: raw list and watch requests over urllib3 (the only importer of urllib3;
  apierrors.py: its errors); kubecredentials.py: the kubeconfig, --master or in-cluster
  configuration read (files, tokens, exec credential plugins), kubeconfig.py: what those
  settings mean, as client-go reads them (pure). No estimator module imports `kubernetes`;
- ratelimit.py: the shared request budget and backoff.
"""

from estimator.cluster.watch.apierrors import KubeConfigError
from estimator.cluster.watch.priority import EstimatePriority
from estimator.cluster.watch.ratelimit import Backoff, TokenBucket
from estimator.cluster.watch.specs import KIND_SPECS, POD_FIELD_SELECTOR, ReflectorOptions
from estimator.cluster.watch.state import WatchClusterState

__all__ = [
    "WatchClusterState",
    "KubeConfigError",
    "ReflectorOptions",
    "EstimatePriority",
    "TokenBucket",
    "Backoff",
    "POD_FIELD_SELECTOR",
    "KIND_SPECS",
]
