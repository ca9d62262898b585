// Command gogo writes wire vectors with Karmada v1.16/v1.17's generated estimator types
// (go-to-protobuf, proto2), filling them as those versions' scheduler does: requirements
// only in the original Kubernetes-message fields (resourceRequest = 2, nodeAffinity = 1,
// tolerations = 3), every ReplicaRequirements embedded by value, so always present.
//
//	go run -modfile=go.v1.16.0.mod ./gogo -karmada v1.16.0 -out DIR
package main

import (
	"flag"
	"os"
	"reflect"
	"time"

	"github.com/karmada-io/karmada/pkg/estimator/pb"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"

	"wirevectors/scenario"
)

// The package generated.proto declares. v1.17's go-to-protobuf output registers no message
// names (reflection would invent one from the Go import path), so name them from it.
const protoPackage = "github.com.karmada_io.karmada.pkg.estimator.pb."

// marshal encodes as the scheduler's gRPC client does, through grpc's proto codec.
func marshal(message any) ([]byte, string) {
	buffers, err := encoding.GetCodecV2(grpcproto.Name).Marshal(message)
	if err != nil {
		panic(err)
	}
	return buffers.Materialize(), protoPackage + reflect.TypeOf(message).Elem().Name()
}

func claim(c *scenario.Claim) *pb.NodeClaim {
	if c == nil {
		return nil
	}
	return &pb.NodeClaim{NodeAffinity: c.HardNodeAffinity, NodeSelector: c.NodeSelector, Tolerations: c.Tolerations}
}

func componentRequirements(r *scenario.Requirements) pb.ComponentReplicaRequirements {
	var out pb.ComponentReplicaRequirements
	if r == nil {
		return out
	}
	out.ResourceRequest = r.ResourceRequest
	out.PriorityClassName = r.PriorityClassName
	out.NodeClaim = claim(r.NodeClaim)
	return out
}

func request(r scenario.Request) any {
	switch r.Method {
	case scenario.MaxAvailableComponentSets:
		out := &pb.MaxAvailableComponentSetsRequest{Cluster: r.Cluster, Namespace: r.Namespace, Components: make([]pb.Component, 0, len(r.Components))}
		for _, c := range r.Components {
			out.Components = append(out.Components, pb.Component{Name: c.Name, Replicas: c.Replicas, ReplicaRequirements: componentRequirements(c.Requirements)})
		}
		return out
	case scenario.MaxAvailableReplicas:
		out := &pb.MaxAvailableReplicasRequest{Cluster: r.Cluster, ReplicaRequirements: pb.ReplicaRequirements{}}
		if q := r.Replica; q != nil {
			out.ReplicaRequirements.ResourceRequest = q.ResourceRequest
			out.ReplicaRequirements.Namespace = q.Namespace
			out.ReplicaRequirements.PriorityClassName = q.PriorityClassName
			out.ReplicaRequirements.NodeClaim = claim(q.NodeClaim)
		}
		return out
	default:
		return &pb.UnschedulableReplicasRequest{
			Cluster: r.Cluster,
			Resource: pb.ObjectReference{APIVersion: r.Resource.APIVersion, Kind: r.Resource.Kind,
				Namespace: r.Resource.Namespace, Name: r.Resource.Name},
			UnschedulableThreshold: time.Duration(r.Threshold),
		}
	}
}

func response(r scenario.Response) any {
	switch r.Method {
	case scenario.MaxAvailableComponentSets:
		return &pb.MaxAvailableComponentSetsResponse{MaxSets: r.Value}
	case scenario.MaxAvailableReplicas:
		return &pb.MaxAvailableReplicasResponse{MaxReplicas: r.Value}
	default:
		return &pb.UnschedulableReplicasResponse{UnschedulableReplicas: r.Value}
	}
}

func main() {
	karmada := flag.String("karmada", "", "Karmada version this binary is built against (checked)")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if *karmada == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		panic(err)
	}
	w := &scenario.Writer{Dir: *out, Karmada: *karmada, Form: "old",
		Note: "requirements only in the original fields, as the " + *karmada + " scheduler writes them"}
	for _, r := range scenario.Requests() {
		raw, name := marshal(request(r))
		fields := ""
		if r.Method != scenario.GetUnschedulableReplicas {
			fields = "old"
		}
		w.Add(r.Name, r.Method, name, fields, r.Description, raw, r)
	}
	for _, r := range scenario.Responses() {
		raw, name := marshal(response(r))
		w.Add(r.Name, r.Method, name, "", "", raw, map[string]int32{"value": r.Value})
	}
	w.Close()
}
