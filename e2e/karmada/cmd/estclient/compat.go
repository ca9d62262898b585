package main

import (
	"context"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	estimatorclient "github.com/karmada-io/karmada/pkg/estimator/client"
)

// The request types of Karmada's client changed between releases; this file holds the only
// version-specific calls (Karmada v1.18: request structs; the scheduler sends no assumed
// workloads for a binding with nothing in flight).

func componentSetRequest(clusters []*clusterv1alpha1.Cluster, c call) estimatorclient.ComponentSetEstimationRequest {
	return estimatorclient.ComponentSetEstimationRequest{Clusters: clusters, Components: c.Components, Namespace: c.Namespace}
}

func maxAvailableReplicas(ctx context.Context, se *estimatorclient.SchedulerEstimator, clusters []*clusterv1alpha1.Cluster, rr *workv1alpha2.ReplicaRequirements) ([]workv1alpha2.TargetCluster, error) {
	return se.MaxAvailableReplicas(ctx, estimatorclient.ReplicaEstimationRequest{Clusters: clusters, ReplicaRequirements: rr})
}
