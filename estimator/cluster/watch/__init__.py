"""Live member cluster: list/watch Nodes, Pods, ResourceQuotas, ReplicaSets and Deployments
into a ClusterCache, with client-go informer semantics.

- state.py: `WatchClusterState`, the server's ClusterState for a live member (threads,
  readiness, health, staleness, the collector);
- reflector.py: one kind's list/watch loop; specs.py: the kinds and the loop's options;
  priority.py: estimates before event processing;
- kubeclient.py: the only module that imports `kubernetes` (apierrors.py: its errors);
  ratelimit.py: the shared request budget and backoff.
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
