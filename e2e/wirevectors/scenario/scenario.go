// Package scenario holds the requests and responses the wire-vector generators encode,
// written once in Kubernetes' own types so that every Karmada version encodes the same
// content, and the writer of the vector files and their index.
package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Claim is what the scheduler knows about where a replica may run.
type Claim struct {
	NodeSelector     map[string]string    `json:"nodeSelector,omitempty"`
	HardNodeAffinity *corev1.NodeSelector `json:"nodeAffinity,omitempty"`
	Tolerations      []corev1.Toleration  `json:"tolerations,omitempty"`
}

// Requirements of one replica, as the scheduler holds them before encoding.
type Requirements struct {
	ResourceRequest   corev1.ResourceList `json:"resourceRequest,omitempty"`
	NodeClaim         *Claim              `json:"nodeClaim,omitempty"`
	Namespace         string              `json:"namespace,omitempty"`
	PriorityClassName string              `json:"priorityClassName,omitempty"`
}

type Component struct {
	Name         string        `json:"name"`
	Replicas     int32         `json:"replicas"`
	Requirements *Requirements `json:"replicaRequirements"`
}

type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

const (
	MaxAvailableReplicas      = "MaxAvailableReplicas"
	MaxAvailableComponentSets = "MaxAvailableComponentSets"
	GetUnschedulableReplicas  = "GetUnschedulableReplicas"
)

// Request is one RPC request; which fields apply depends on Method.
type Request struct {
	Name        string        `json:"-"`
	Method      string        `json:"-"`
	Description string        `json:"-"`
	Cluster     string        `json:"cluster"`
	Namespace   string        `json:"namespace,omitempty"`
	Components  []Component   `json:"components,omitempty"`
	Replica     *Requirements `json:"replicaRequirements,omitempty"`
	Resource    *ObjectRef    `json:"resource,omitempty"`
	Threshold   int64         `json:"unschedulableThreshold,omitempty"`
}

// Response is one RPC answer: its single int32 field.
type Response struct {
	Name   string
	Method string
	Value  int32
}

func quantities(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

var gpuToleration = corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

func seconds(s int64) *int64 { return &s }

// Requests returns fresh values each call: encoders may keep pointers into them.
func Requests() []Request {
	return []Request{
		{
			Name:        "sets_gpu_job",
			Method:      MaxAvailableComponentSets,
			Description: "training job: 1 master {1 cpu, 2Gi}; 2 workers per set {2 cpu, 4Gi, 4 GPUs} on accelerator=h100 nodes, tolerating the GPU taint",
			Cluster:     "member-w",
			Namespace:   "ml-team",
			Components: []Component{
				{Name: "master", Replicas: 1, Requirements: &Requirements{ResourceRequest: quantities("cpu", "1", "memory", "2Gi")}},
				{Name: "worker", Replicas: 2, Requirements: &Requirements{
					ResourceRequest:   quantities("cpu", "2", "memory", "4Gi", "nvidia.com/gpu", "4"),
					NodeClaim:         &Claim{NodeSelector: map[string]string{"accelerator": "h100"}, Tolerations: []corev1.Toleration{gpuToleration}},
					PriorityClassName: "high-priority",
				}},
			},
		},
		{
			Name:        "replicas_gpu_affinity",
			Method:      MaxAvailableReplicas,
			Description: "{3 cpu, 2 GPUs} per replica, required affinity zone In [zone-a, zone-b], two tolerations",
			Cluster:     "member-w",
			Replica: &Requirements{
				ResourceRequest: quantities("cpu", "3", "nvidia.com/gpu", "2"),
				NodeClaim: &Claim{
					HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"},
						}},
					}}},
					Tolerations: []corev1.Toleration{
						gpuToleration,
						{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(300)},
					},
				},
				Namespace: "web",
			},
		},
		{
			Name:        "replicas_affinity_terms",
			Method:      MaxAvailableReplicas,
			Description: "two ORed affinity terms (matchExpressions with In and Gt; matchFields on metadata.name), a node selector, priority class",
			Cluster:     "member-w",
			Replica: &Requirements{
				ResourceRequest: quantities("cpu", "500m", "memory", "1Gi"),
				NodeClaim: &Claim{
					NodeSelector: map[string]string{"accelerator": "h100", "disk": "ssd"},
					HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
						{MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"}},
							{Key: "gpu-count", Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}},
						}},
						{MatchFields: []corev1.NodeSelectorRequirement{
							{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-3"}},
						}},
					}},
				},
				Namespace:         "web",
				PriorityClassName: "critical",
			},
		},
		{
			Name:        "replicas_quantities",
			Method:      MaxAvailableReplicas,
			Description: "quantities in several forms: 1500m cpu, 1536Mi memory, 1G ephemeral-storage, 64Mi hugepages-2Mi, 0 of a GPU",
			Cluster:     "member-w",
			Replica: &Requirements{
				ResourceRequest: quantities("cpu", "1500m", "memory", "1536Mi", "ephemeral-storage", "1G", "hugepages-2Mi", "64Mi", "nvidia.com/gpu", "0"),
				Namespace:       "web",
			},
		},
		{
			Name:        "replicas_empty_claim",
			Method:      MaxAvailableReplicas,
			Description: "1 cpu, a node selector, an empty (zero-term) node affinity and an empty toleration list",
			Cluster:     "member-w",
			Replica: &Requirements{
				ResourceRequest: quantities("cpu", "1"),
				NodeClaim: &Claim{
					NodeSelector:     map[string]string{"disk": "ssd"},
					HardNodeAffinity: &corev1.NodeSelector{},
					Tolerations:      []corev1.Toleration{},
				},
				Namespace: "web",
			},
		},
		{
			Name:        "replicas_no_requirements",
			Method:      MaxAvailableReplicas,
			Description: "the scheduler has no replica requirements (nil)",
			Cluster:     "member-w",
		},
		{
			Name:        "sets_component_without_requirements",
			Method:      MaxAvailableComponentSets,
			Description: "one component without requirements (nil) beside one asking 500m cpu",
			Cluster:     "member-w",
			Namespace:   "apps",
			Components: []Component{
				{Name: "sidecar", Replicas: 1},
				{Name: "main", Replicas: 3, Requirements: &Requirements{ResourceRequest: quantities("cpu", "500m")}},
			},
		},
		{
			Name:        "unschedulable_deployment",
			Method:      GetUnschedulableReplicas,
			Description: "Deployment web/frontend, threshold 60 s",
			Cluster:     "member-w",
			Resource:    &ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "frontend"},
			Threshold:   60_000_000_000,
		},
	}
}

func Responses() []Response {
	return []Response{
		{"response_sets_0", MaxAvailableComponentSets, 0},
		{"response_sets_3", MaxAvailableComponentSets, 3},
		{"response_replicas_12", MaxAvailableReplicas, 12},
		{"response_replicas_unauthentic", MaxAvailableReplicas, -1},
		{"response_unschedulable_0", GetUnschedulableReplicas, 0},
		{"response_unschedulable_2", GetUnschedulableReplicas, 2},
	}
}

// Entry describes one written vector in index.json.
type Entry struct {
	File        string `json:"file"`
	Method      string `json:"method"`
	Message     string `json:"message"`
	Bytes       int    `json:"bytes"`
	Description string `json:"description,omitempty"`
	// Which requirement fields this version writes: "old", "old+bytes" or "bytes"; empty for responses.
	Fields  string `json:"fields,omitempty"`
	Content any    `json:"content"`
}

// Writer collects vectors into one directory and writes index.json last.
type Writer struct {
	Dir     string
	Karmada string
	Form    string
	Note    string
	entries []Entry
}

func (w *Writer) Add(name, method, message, fields, description string, raw []byte, content any) {
	file := name + ".bin"
	if err := os.WriteFile(filepath.Join(w.Dir, file), raw, 0o644); err != nil {
		panic(err)
	}
	w.entries = append(w.entries, Entry{File: file, Method: method, Message: message, Bytes: len(raw),
		Description: description, Fields: fields, Content: content})
}

// Close writes index.json: the generator's provenance and every entry, sorted by file.
func (w *Writer) Close() {
	sort.Slice(w.entries, func(i, j int) bool { return w.entries[i].File < w.entries[j].File })
	modules := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			switch dep.Path {
			case "github.com/karmada-io/karmada", "k8s.io/api", "k8s.io/apimachinery", "google.golang.org/grpc",
				"google.golang.org/protobuf", "github.com/gogo/protobuf":
				modules[dep.Path] = dep.Version
			}
		}
	}
	if modules["github.com/karmada-io/karmada"] != w.Karmada {
		panic(fmt.Sprintf("built against karmada %q, expected %q", modules["github.com/karmada-io/karmada"], w.Karmada))
	}
	index := map[string]any{
		"karmada":   w.Karmada,
		"form":      w.Form,
		"note":      w.Note,
		"encodedBy": "github.com/karmada-io/karmada/pkg/estimator/pb@" + w.Karmada + " types, marshalled by grpc's proto codec",
		"go":        runtime.Version(),
		"modules":   modules,
		"vectors":   w.entries,
	}
	raw, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir, "index.json"), append(raw, '\n'), 0o644); err != nil {
		panic(err)
	}
}
