// Command estclient calls accurate scheduler estimators the way Karmada's control plane does:
// through Karmada's own pkg/estimator/client (service resolution, gRPC dial and TLS options,
// per-call timeout, the concurrent fan-out over clusters and its aggregate error). It reads one
// JSON request on stdin and writes one JSON report on stdout; the schema is in ../../README.md.
//
// Exit status: 0 when the report was written (RPC errors are data, not failures), 2 on bad input.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	estimatorclient "github.com/karmada-io/karmada/pkg/estimator/client"
	"github.com/karmada-io/karmada/pkg/util"

	"github.com/karmada-accurate-estimator/e2e/karmada/internal/estconn"
)

const (
	// karmada-descheduler's default --unschedulable-threshold.
	defaultUnschedThreshold  = 5 * time.Minute
	maxDifferingRunsReported = 10
)

type call struct {
	ID       string   `json:"id"`
	Method   string   `json:"method"`
	Clusters []string `json:"clusters"`
	// Each runs the call once per cluster (a one-cluster fan-out each), so every latency
	// belongs to a single estimator.
	Each bool `json:"each"`
	// Object, when set, is sent as the "object" gRPC metadata (the descheduler sets it for
	// GetUnschedulableReplicas; the scheduler sends none).
	Object *string `json:"object"`

	Namespace           string                            `json:"namespace"`
	Components          []workv1alpha2.Component          `json:"components"`
	ReplicaRequirements *workv1alpha2.ReplicaRequirements `json:"replicaRequirements"`
	Resource            *workv1alpha2.ObjectReference     `json:"resource"`
	Threshold           *estconn.Duration                 `json:"threshold"`
}

type request struct {
	Estimators map[string]estconn.Estimator `json:"estimators"`
	TLS        estconn.TLS                  `json:"tls"`
	Timeout    *estconn.Duration            `json:"timeout"`
	Repeat     int                          `json:"repeat"`
	Calls      []call                       `json:"calls"`
}

type clusterAnswer struct {
	Name  string `json:"name"`
	Value *int32 `json:"value"`
	Error string `json:"error,omitempty"`
}

type run struct {
	Run      int             `json:"run"`
	Clusters []clusterAnswer `json:"clusters"`
	Error    string          `json:"error,omitempty"`
}

type summary struct {
	Count int   `json:"count"`
	Min   int64 `json:"min"`
	P50   int64 `json:"p50"`
	P90   int64 `json:"p90"`
	P99   int64 `json:"p99"`
	Max   int64 `json:"max"`
}

type callResult struct {
	ID       string          `json:"id,omitempty"`
	Method   string          `json:"method"`
	Clusters []clusterAnswer `json:"clusters"`
	// Error is the fan-out's aggregate error text of the first run ("" when every cluster answered).
	Error string `json:"error,omitempty"`
	// LatencyNs holds one entry per repeat (fan-out mode) or per repeat and cluster (each mode,
	// in cluster order within a repeat).
	LatencyNs      []int64 `json:"latencyNs"`
	LatencySummary summary `json:"latencySummaryNs"`
	DifferingRuns  []run   `json:"differingRuns,omitempty"`
	Differing      int     `json:"differingRunCount"`
}

type report struct {
	KarmadaVersion string                        `json:"karmadaVersion"`
	TimeoutNs      int64                         `json:"timeoutNs"`
	Connections    map[string]estconn.Connection `json:"connections"`
	Results        []callResult                  `json:"results"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "estclient: "+format+"\n", args...)
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
	if len(req.Estimators) == 0 {
		fail("estimators: at least one cluster -> {\"address\": \"host:port\"} is required")
	}
	if err := estconn.Validate(req.Estimators, req.TLS); err != nil {
		fail("%v", err)
	}
	if req.Repeat < 0 {
		fail("repeat: must be >= 1 (got %d)", req.Repeat)
	}
	if req.Repeat == 0 {
		req.Repeat = 1
	}
	if len(req.Calls) == 0 {
		fail("calls: at least one call is required")
	}
	for i := range req.Calls {
		c := &req.Calls[i]
		where := fmt.Sprintf("calls[%d]", i)
		switch c.Method {
		case "MaxAvailableComponentSets":
			if len(c.Components) == 0 {
				fail("%s.components: required for MaxAvailableComponentSets", where)
			}
		case "MaxAvailableReplicas":
			// nil requirements are legal: Karmada then sends a request without them.
		case "GetUnschedulableReplicas":
			if c.Resource == nil {
				fail("%s.resource: required for GetUnschedulableReplicas", where)
			}
		default:
			fail("%s.method: want MaxAvailableComponentSets, MaxAvailableReplicas or GetUnschedulableReplicas, got %q", where, c.Method)
		}
		if len(c.Clusters) == 0 {
			// Default: every configured estimator, in name order.
			for name := range req.Estimators {
				c.Clusters = append(c.Clusters, name)
			}
			sort.Strings(c.Clusters)
		}
	}
	return req
}

// flatten lists the messages inside Karmada's aggregate error (or the error itself).
func flatten(err error) []string {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range agg.Errors() {
		out = append(out, e.Error())
	}
	return out
}

// attribute maps each error of Karmada's aggregate to the cluster it names. Karmada's client
// formats every per-cluster error with the cluster name ("cluster(NAME)" or "cluster NAME does
// not exist"); errors that name no requested cluster stay at call level only.
func attribute(err error, clusters []string) map[string]string {
	out := map[string]string{}
	if err == nil {
		return out
	}
	for _, msg := range flatten(err) {
		for _, c := range clusters {
			if strings.Contains(msg, "cluster("+c+")") || strings.Contains(msg, "cluster "+c+" ") {
				out[c] = msg
				break
			}
		}
	}
	return out
}

func answers(clusters []string, names []string, values []int32, err error) []clusterAnswer {
	errs := attribute(err, clusters)
	got := map[string]int32{}
	for i, n := range names {
		if n != "" {
			got[n] = values[i]
		}
	}
	out := make([]clusterAnswer, len(clusters))
	for i, c := range clusters {
		out[i] = clusterAnswer{Name: c}
		if v, ok := got[c]; ok {
			v := v
			out[i].Value = &v
		} else if msg, ok := errs[c]; ok {
			out[i].Error = msg
		} else if err != nil {
			out[i].Error = "no answer (see the call's error)"
		}
	}
	return out
}

func invoke(ctx context.Context, se *estimatorclient.SchedulerEstimator, c call, clusters []string) ([]clusterAnswer, error) {
	objs := make([]*clusterv1alpha1.Cluster, len(clusters))
	for i, n := range clusters {
		objs[i] = &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: n}}
	}
	var names []string
	var values []int32
	var err error
	switch c.Method {
	case "MaxAvailableComponentSets":
		var res []estimatorclient.ComponentSetEstimationResponse
		res, err = se.MaxAvailableComponentSets(ctx, componentSetRequest(objs, c))
		for _, r := range res {
			names, values = append(names, r.Name), append(values, r.Sets)
		}
	case "MaxAvailableReplicas":
		var res []workv1alpha2.TargetCluster
		res, err = maxAvailableReplicas(ctx, se, objs, c.ReplicaRequirements)
		for _, r := range res {
			names, values = append(names, r.Name), append(values, r.Replicas)
		}
	case "GetUnschedulableReplicas":
		threshold := defaultUnschedThreshold
		if c.Threshold != nil {
			threshold = c.Threshold.Duration
		}
		var res []workv1alpha2.TargetCluster
		res, err = se.GetUnschedulableReplicas(ctx, clusters, c.Resource, threshold)
		for _, r := range res {
			names, values = append(names, r.Name), append(values, r.Replicas)
		}
	}
	return answers(clusters, names, values, err), err
}

func sameAnswers(a, b []clusterAnswer) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Error != b[i].Error || (a[i].Value == nil) != (b[i].Value == nil) {
			return false
		}
		if a[i].Value != nil && *a[i].Value != *b[i].Value {
			return false
		}
	}
	return true
}

func summarize(ns []int64) summary {
	if len(ns) == 0 {
		return summary{}
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	// Nearest-rank percentiles.
	rank := func(p float64) int64 {
		k := int(p*float64(len(s))+0.999999) - 1
		if k < 0 {
			k = 0
		}
		if k >= len(s) {
			k = len(s) - 1
		}
		return s[k]
	}
	return summary{Count: len(s), Min: s[0], P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: s[len(s)-1]}
}

func runCall(se *estimatorclient.SchedulerEstimator, c call, repeat int) callResult {
	ctx := context.Background()
	object := c.Object
	if object == nil && c.Method == "GetUnschedulableReplicas" {
		// karmada-descheduler's FillUnschedulableReplicas sets this metadata.
		o := fmt.Sprintf("kind=%s, name=%s/%s", c.Resource.Kind, c.Resource.Namespace, c.Resource.Name)
		object = &o
	}
	if object != nil {
		ctx = context.WithValue(ctx, util.ContextKeyObject, *object)
	}
	res := callResult{ID: c.ID, Method: c.Method}
	groups := [][]string{c.Clusters}
	if c.Each {
		groups = groups[:0]
		for _, n := range c.Clusters {
			groups = append(groups, []string{n})
		}
	}
	// Karmada's aggregate error lists clusters in completion order, so runs are compared on the
	// sorted messages, not on the text.
	var firstKey string
	for r := 0; r < repeat; r++ {
		var all []clusterAnswer
		var texts, parts []string
		for _, g := range groups {
			start := time.Now()
			ans, err := invoke(ctx, se, c, g)
			res.LatencyNs = append(res.LatencyNs, time.Since(start).Nanoseconds())
			all = append(all, ans...)
			if err != nil {
				texts = append(texts, err.Error())
				parts = append(parts, flatten(err)...)
			}
		}
		sort.Strings(parts)
		key := strings.Join(parts, "\n")
		msg := strings.Join(texts, "; ")
		if r == 0 {
			res.Clusters, res.Error, firstKey = all, msg, key
		} else if !sameAnswers(res.Clusters, all) || key != firstKey {
			res.Differing++
			if len(res.DifferingRuns) < maxDifferingRunsReported {
				res.DifferingRuns = append(res.DifferingRuns, run{Run: r, Clusters: all, Error: msg})
			}
		}
	}
	res.LatencySummary = summarize(res.LatencyNs)
	return res
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: estclient < request.json > report.json   (schema: e2e/karmada/README.md)")
		os.Exit(2)
	}
	req := readRequest(os.Stdin)
	timeout := estconn.DefaultTimeout
	if req.Timeout != nil {
		timeout = req.Timeout.Duration
	}
	cache := estimatorclient.NewSchedulerEstimatorCache()
	rep := report{KarmadaVersion: estconn.KarmadaVersion(), TimeoutNs: timeout.Nanoseconds()}
	conns, err := estconn.Connect(req.Estimators, req.TLS, cache)
	if err != nil {
		fail("%v", err)
	}
	rep.Connections = conns
	se := estimatorclient.NewSchedulerEstimator(cache, timeout)
	for _, c := range req.Calls {
		rep.Results = append(rep.Results, runCall(se, c, req.Repeat))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintf(os.Stderr, "estclient: writing the report: %v\n", err)
		os.Exit(1)
	}
}
