"""Where cluster state comes from: the mutable ClusterCache, Kubernetes object files,
the list/watch reflectors and the ClusterState protocol the server reads."""
