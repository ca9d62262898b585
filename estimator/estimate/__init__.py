"""One request's computation: the estimator, its plugin framework and plugins (node
resources, resource quota), over a ClusterSnapshot and the kernels."""
