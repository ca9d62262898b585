"""The pure model: requests, quantities, labels, filters, workloads and the immutable
ClusterSnapshot view. No I/O, no outside service; everything else builds on it."""
