// Command protov2 writes wire vectors with Karmada v1.18's generated estimator types
// (protoc-gen-go, proto3). -fields old+bytes fills them as the v1.18 scheduler does, through
// the types' own Set* helpers (the original fields and the byte fields together);
// -fields bytes sets the byte fields alone, the form Karmada v1.19's scheduler writes
// (v1.19 is not on the module proxy; its messages keep the same numbers for every field
// it still has, so v1.18's types encode that form exactly).
//
//	go run ./protov2 -karmada v1.18.2 -fields old+bytes -out DIR
package main

import (
	"flag"
	"os"

	"github.com/karmada-io/karmada/pkg/estimator/pb"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"

	"wirevectors/scenario"
)

var bytesOnly bool

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func marshal(message proto.Message) ([]byte, string) {
	buffers, err := encoding.GetCodecV2(grpcproto.Name).Marshal(message)
	must(err)
	return buffers.Materialize(), string(message.ProtoReflect().Descriptor().FullName())
}

func claim(c *scenario.Claim) *pb.NodeClaim {
	if c == nil {
		return nil
	}
	out := &pb.NodeClaim{NodeSelector: c.NodeSelector}
	must(out.SetNodeAffinity(c.HardNodeAffinity))
	must(out.SetTolerations(c.Tolerations))
	if bytesOnly {
		out.NodeAffinity, out.Tolerations = nil, nil
	}
	return out
}

func componentRequirements(r *scenario.Requirements) *pb.ComponentReplicaRequirements {
	if r == nil {
		return nil
	}
	out := &pb.ComponentReplicaRequirements{PriorityClassName: r.PriorityClassName, NodeClaim: claim(r.NodeClaim)}
	must(out.SetResourceRequest(r.ResourceRequest))
	if bytesOnly {
		out.ResourceRequest = nil
	}
	return out
}

func request(r scenario.Request) proto.Message {
	switch r.Method {
	case scenario.MaxAvailableComponentSets:
		out := &pb.MaxAvailableComponentSetsRequest{Cluster: r.Cluster, Namespace: r.Namespace}
		for _, c := range r.Components {
			out.Components = append(out.Components, &pb.Component{Name: c.Name, Replicas: c.Replicas, ReplicaRequirements: componentRequirements(c.Requirements)})
		}
		return out
	case scenario.MaxAvailableReplicas:
		out := &pb.MaxAvailableReplicasRequest{Cluster: r.Cluster}
		if q := r.Replica; q != nil {
			out.ReplicaRequirements = &pb.ReplicaRequirements{Namespace: q.Namespace, PriorityClassName: q.PriorityClassName, NodeClaim: claim(q.NodeClaim)}
			must(out.ReplicaRequirements.SetResourceRequest(q.ResourceRequest))
			if bytesOnly {
				out.ReplicaRequirements.ResourceRequest = nil
			}
		}
		return out
	default:
		return &pb.UnschedulableReplicasRequest{
			Cluster: r.Cluster,
			Resource: &pb.ObjectReference{ApiVersion: r.Resource.APIVersion, Kind: r.Resource.Kind,
				Namespace: r.Resource.Namespace, Name: r.Resource.Name},
			UnschedulableThreshold: r.Threshold,
		}
	}
}

func response(r scenario.Response) proto.Message {
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
	fields := flag.String("fields", "", `"old+bytes" (as v1.18 writes) or "bytes" (as v1.19 writes)`)
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if *karmada == "" || *out == "" || (*fields != "old+bytes" && *fields != "bytes") {
		flag.Usage()
		os.Exit(2)
	}
	bytesOnly = *fields == "bytes"
	must(os.MkdirAll(*out, 0o755))
	note := "requirements in the original and the byte fields, as the " + *karmada + " scheduler writes them"
	form := "mixed"
	if bytesOnly {
		form = "bytes"
		note = "requirements only in the byte fields, as Karmada v1.19's scheduler writes them; encoded with " +
			*karmada + "'s types because v1.19 is not on the Go module proxy"
	}
	w := &scenario.Writer{Dir: *out, Karmada: *karmada, Form: form, Note: note}
	for _, r := range scenario.Requests() {
		raw, name := marshal(request(r))
		f := *fields
		if r.Method == scenario.GetUnschedulableReplicas {
			f = ""
		}
		w.Add(r.Name, r.Method, name, f, r.Description, raw, r)
	}
	for _, r := range scenario.Responses() {
		raw, name := marshal(response(r))
		w.Add(r.Name, r.Method, name, "", "", raw, map[string]int32{"value": r.Value})
	}
	w.Close()
}
