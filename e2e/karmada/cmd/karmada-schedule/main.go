// Command karmada-schedule runs Karmada's own scheduling decision for one workload on a fleet
// given as JSON and prints the targets Karmada chooses (or Karmada's error text) as JSON.
//
// What runs is Karmada's code, wired as karmada-scheduler wires it: the generic scheduler of
// pkg/scheduler/core with the in-tree plugin registry (--plugins=*), the general estimator, and
// the accurate estimator client registered through Karmada's estimator cache (connections made
// by Karmada's EstablishConnection). A PropagationPolicy is defaulted as Karmada's webhook and
// CRD defaults do and turned into a ResourceBinding by Karmada's detector (BuildResourceBinding,
// which asks the resource interpreters for replicas or components). Placements with
// clusterAffinities are tried term by term as the scheduler does. The schema is in
// ../../README.md. Exit status: 0 when a report was written (a scheduling failure is a
// result), 2 on bad input.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	configv1alpha1 "github.com/karmada-io/karmada/pkg/apis/config/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/detector"
	estimatorclient "github.com/karmada-io/karmada/pkg/estimator/client"
	"github.com/karmada-io/karmada/pkg/features"
	clusterlister "github.com/karmada-io/karmada/pkg/generated/listers/cluster/v1alpha1"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter/default/native"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter/default/thirdparty"
	schedulercache "github.com/karmada-io/karmada/pkg/scheduler/cache"
	"github.com/karmada-io/karmada/pkg/scheduler/core"
	"github.com/karmada-io/karmada/pkg/scheduler/framework"
	frameworkplugins "github.com/karmada-io/karmada/pkg/scheduler/framework/plugins"
	"github.com/karmada-io/karmada/pkg/util/helper"

	"github.com/karmada-accurate-estimator/e2e/karmada/internal/estconn"
)

type request struct {
	// FeatureGates as karmada-scheduler's and karmada-controller-manager's --feature-gates.
	FeatureGates map[string]bool `json:"featureGates"`
	// Clusters are Karmada Cluster objects (spec and status, including resourceSummary).
	Clusters []clusterv1alpha1.Cluster `json:"clusters"`
	// EnableSchedulerEstimator is --enable-scheduler-estimator (default true).
	EnableSchedulerEstimator *bool `json:"enableSchedulerEstimator"`
	// Estimators are the accurate estimators that exist; a cluster without one is "missing"
	// and one whose address does not answer is "down".
	Estimators map[string]estconn.Estimator `json:"estimators"`
	TLS        estconn.TLS                  `json:"tls"`
	Timeout    *estconn.Duration            `json:"timeout"`
	// EnableEmptyWorkloadPropagation is karmada-scheduler's flag of that name.
	EnableEmptyWorkloadPropagation bool `json:"enableEmptyWorkloadPropagation"`

	// Either a ResourceBinding ...
	Binding *workv1alpha2.ResourceBinding `json:"binding"`
	// ... or a PropagationPolicy and the workload it selects.
	Policy   *policyv1alpha1.PropagationPolicy `json:"policy"`
	Workload map[string]any                    `json:"workload"`

	// Repeat schedules the same binding this many times (default 1); Karmada's cluster lister
	// yields clusters in a different order each time, so repeats reveal order-dependent outcomes.
	Repeat int `json:"repeat"`
}

type target struct {
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
}

type outcome struct {
	Targets []target `json:"targets"`
	// Error is Karmada's error text ("" on success).
	Error string `json:"error,omitempty"`
	// FitError is true when Karmada found no feasible cluster (it then clears the targets).
	FitError bool `json:"fitError,omitempty"`
	// AffinityName is the clusterAffinities term that was used, when the placement has terms.
	AffinityName string `json:"affinityName,omitempty"`
	Count        int    `json:"count"`
}

type report struct {
	KarmadaVersion string                        `json:"karmadaVersion"`
	Connections    map[string]estconn.Connection `json:"connections,omitempty"`
	// Binding is the ResourceBinding spec Karmada scheduled (after defaults and interpretation).
	Binding workv1alpha2.ResourceBindingSpec `json:"binding"`
	outcome
	// Outcomes lists every distinct outcome over the repeats, most frequent first.
	Outcomes []outcome `json:"outcomes"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "karmada-schedule: "+format+"\n", args...)
	os.Exit(2)
}

func readRequest(r io.Reader) request {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		fail("stdin: invalid request JSON: %v", err)
	}
	if dec.More() {
		fail("stdin: trailing data after the request object")
	}
	if len(req.Clusters) == 0 {
		fail("clusters: at least one Cluster is required")
	}
	seen := map[string]bool{}
	for i, c := range req.Clusters {
		if c.Name == "" {
			fail("clusters[%d].metadata.name: required", i)
		}
		if seen[c.Name] {
			fail("clusters[%d].metadata.name: duplicate %q", i, c.Name)
		}
		seen[c.Name] = true
	}
	if err := estconn.Validate(req.Estimators, req.TLS); err != nil {
		fail("%v", err)
	}
	switch {
	case req.Binding != nil && (req.Policy != nil || req.Workload != nil):
		fail("binding: give either binding or policy+workload, not both")
	case req.Binding == nil && (req.Policy == nil || req.Workload == nil):
		fail("policy, workload: both are required when no binding is given")
	case req.Binding != nil && req.Binding.Spec.Placement == nil:
		fail("binding.spec.placement: required")
	}
	if req.Repeat < 0 {
		fail("repeat: must be >= 1 (got %d)", req.Repeat)
	}
	if req.Repeat == 0 {
		req.Repeat = 1
	}
	if req.FeatureGates[string(features.WorkloadAffinity)] {
		// Its plugins look at other bindings, which a one-binding fleet does not have.
		fail("featureGates.WorkloadAffinity: not supported by karmada-schedule")
	}
	if err := features.FeatureGate.SetFromMap(req.FeatureGates); err != nil {
		fail("featureGates: %v", err)
	}
	return req
}

// interpreter answers as Karmada's resource interpreter does when no customization or webhook
// is installed: the third-party (bundled Lua) customizations first, then the native defaults.
// Only the operations the detector uses to build a binding are implemented.
type interpreter struct {
	resourceinterpreter.ResourceInterpreter
	thirdparty *thirdparty.ConfigurableInterpreter
	native     *native.DefaultInterpreter
}

func (i *interpreter) HookEnabled(gvk schema.GroupVersionKind, op configv1alpha1.InterpreterOperation) bool {
	return i.native.HookEnabled(gvk, op) || i.thirdparty.HookEnabled(gvk, op)
}

func (i *interpreter) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	replicas, reqs, enabled, err := i.thirdparty.GetReplicas(obj)
	if err != nil || enabled {
		return replicas, reqs, err
	}
	return i.native.GetReplicas(obj)
}

func (i *interpreter) GetComponents(obj *unstructured.Unstructured) ([]workv1alpha2.Component, error) {
	if obj == nil {
		return nil, errors.New("nil object")
	}
	components, enabled, err := i.thirdparty.GetComponents(obj)
	if err != nil || enabled {
		return components, err
	}
	// Karmada's combined interpreter ends here with this error (the native one has no components).
	return nil, errors.New("interface GetComponents not implemented yet")
}

// bindingFromPolicy applies the defaults Karmada's API server (CRD defaults) and mutating
// webhook give a PropagationPolicy, then builds the binding with Karmada's detector.
func bindingFromPolicy(policy *policyv1alpha1.PropagationPolicy, workload map[string]any) *workv1alpha2.ResourceBinding {
	obj := &unstructured.Unstructured{Object: workload}
	if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
		fail("workload: apiVersion, kind and metadata.name are required")
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	if policy.Spec.SchedulePriority != nil {
		fail("policy.spec.schedulePriority: not supported by karmada-schedule (needs PriorityClass lookups)")
	}
	placement := &policy.Spec.Placement
	if rs := placement.ReplicaScheduling; rs != nil && rs.ReplicaSchedulingType == "" {
		rs.ReplicaSchedulingType = policyv1alpha1.ReplicaSchedulingTypeDivided // CRD default
	}
	if policy.Spec.SchedulerName == "" {
		policy.Spec.SchedulerName = "default-scheduler" // CRD default
	}
	helper.SetDefaultSpreadConstraints(placement.SpreadConstraints)
	helper.SetReplicaDivisionPreferenceWeighted(placement)

	d := &detector.ResourceDetector{
		ResourceInterpreter: &interpreter{
			thirdparty: thirdparty.NewConfigurableInterpreter(),
			native:     native.NewDefaultInterpreter(),
		},
		EventRecorder: record.NewFakeRecorder(64),
	}
	rb, err := d.BuildResourceBinding(obj, &policy.Spec, "", policy.ObjectMeta, func(metav1.Object, string, metav1.ObjectMeta) {})
	if err != nil {
		fail("workload: Karmada's detector cannot build a binding: %v", err)
	}
	return rb
}

func toTargets(tcs []workv1alpha2.TargetCluster) []target {
	out := make([]target, 0, len(tcs))
	for _, t := range tcs {
		out = append(out, target{Name: t.Name, Replicas: t.Replicas})
	}
	return out
}

// schedule mirrors karmada-scheduler's scheduleResourceBinding: one Schedule call, or one per
// clusterAffinities term (from the observed term on) until a term succeeds.
func schedule(alg core.ScheduleAlgorithm, rb *workv1alpha2.ResourceBinding, opt *core.ScheduleAlgorithmOption) outcome {
	var fitErr *framework.FitError
	terms := rb.Spec.Placement.ClusterAffinities
	if terms == nil {
		res, err := alg.Schedule(context.TODO(), &rb.Spec, &rb.Status, opt)
		if err != nil {
			// On a FitError Karmada writes an empty result; on any other error it keeps the old one.
			return outcome{Targets: []target{}, Error: err.Error(), FitError: errors.As(err, &fitErr)}
		}
		return outcome{Targets: toTargets(res.SuggestedClusters)}
	}
	index := 0
	for i, t := range terms {
		if rb.Status.SchedulerObservedAffinityName != "" && t.AffinityName == rb.Status.SchedulerObservedAffinityName {
			index = i
			break
		}
	}
	status := rb.Status.DeepCopy()
	var firstErr error
	for ; index < len(terms); index++ {
		status.SchedulerObservedAffinityName = terms[index].AffinityName
		res, err := alg.Schedule(context.TODO(), &rb.Spec, status, opt)
		if err == nil {
			return outcome{Targets: toTargets(res.SuggestedClusters), AffinityName: terms[index].AffinityName}
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return outcome{Targets: []target{}, Error: firstErr.Error(), FitError: errors.As(firstErr, &fitErr)}
}

func key(o outcome) string {
	b, _ := json.Marshal(o.Targets)
	return string(b) + "\x00" + o.Error + "\x00" + o.AffinityName
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: karmada-schedule < fleet.json > decision.json   (schema: e2e/karmada/README.md)")
		os.Exit(2)
	}
	// Karmada logs through klog; keep stdout for the report.
	klog.SetOutput(os.Stderr)
	klog.LogToStderr(true)
	req := readRequest(os.Stdin)

	var rb *workv1alpha2.ResourceBinding
	if req.Binding != nil {
		rb = req.Binding
		if rb.Namespace == "" {
			rb.Namespace = rb.Spec.Resource.Namespace
		}
	} else {
		rb = bindingFromPolicy(req.Policy, req.Workload)
	}

	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range req.Clusters {
		if err := indexer.Add(&req.Clusters[i]); err != nil {
			fail("clusters[%d]: %v", i, err)
		}
	}
	bindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	schedCache := schedulercache.NewCache(clusterlister.NewClusterLister(indexer), bindings, schedulercache.DefaultAssumptionTTL)
	registry := frameworkplugins.NewInTreeRegistry().Filter([]string{"*"})
	alg, err := core.NewGenericScheduler(schedCache, registry)
	if err != nil {
		fail("cannot build Karmada's generic scheduler: %v", err)
	}

	rep := report{KarmadaVersion: estconn.KarmadaVersion()}
	if req.EnableSchedulerEstimator == nil || *req.EnableSchedulerEstimator {
		timeout := estconn.DefaultTimeout
		if req.Timeout != nil {
			timeout = req.Timeout.Duration
		}
		estCache := estimatorclient.NewSchedulerEstimatorCache()
		// The scheduler connects to the estimator of every Cluster object; a member with no
		// estimator given here has none to connect to.
		conns, err := estconn.Connect(req.Estimators, req.TLS, estCache)
		if err != nil {
			fail("%v", err)
		}
		rep.Connections = conns
		estimatorclient.RegisterSchedulerEstimator(estimatorclient.NewSchedulerEstimator(estCache, timeout))
	}

	opt := &core.ScheduleAlgorithmOption{EnableEmptyWorkloadPropagation: req.EnableEmptyWorkloadPropagation}
	counts := map[string]int{}
	byKey := map[string]outcome{}
	var order []string
	for r := 0; r < req.Repeat; r++ {
		o := schedule(alg, rb.DeepCopy(), opt)
		k := key(o)
		if _, ok := byKey[k]; !ok {
			byKey[k] = o
			order = append(order, k)
		}
		counts[k]++
		if r == 0 {
			rep.outcome = o
		}
	}
	for _, k := range order {
		o := byKey[k]
		o.Count = counts[k]
		rep.Outcomes = append(rep.Outcomes, o)
	}
	sort.SliceStable(rep.Outcomes, func(i, j int) bool { return rep.Outcomes[i].Count > rep.Outcomes[j].Count })
	rep.outcome.Count = counts[key(rep.outcome)]
	rep.Binding = rb.Spec

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintf(os.Stderr, "karmada-schedule: writing the report: %v\n", err)
		os.Exit(1)
	}
}
