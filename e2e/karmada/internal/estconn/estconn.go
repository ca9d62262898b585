// Package estconn connects to accurate scheduler estimators through Karmada's own client code,
// the way karmada-scheduler does, for the e2e programs in this module.
package estconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	estimatorclient "github.com/karmada-io/karmada/pkg/estimator/client"
	"github.com/karmada-io/karmada/pkg/util/grpcconnection"
	"github.com/karmada-io/karmada/pkg/util/names"
)

// Defaults of karmada-scheduler's --scheduler-estimator-port, -timeout, -service-namespace
// and -service-prefix.
const (
	DefaultPort      = 10352
	DefaultTimeout   = 3 * time.Second
	ServiceNamespace = names.NamespaceKarmadaSystem
	ServicePrefix    = names.KarmadaSchedulerEstimatorComponentName
)

// Duration accepts Go duration strings ("3s", "250ms") in JSON.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a positive Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"3s\": %v", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("duration %q must be positive", s)
	}
	d.Duration = v
	return nil
}

// TLS mirrors karmada-scheduler's --scheduler-estimator-ca-file, -cert-file, -key-file and
// --insecure-skip-estimator-verify.
type TLS struct {
	CAFile             string `json:"caFile"`
	CertFile           string `json:"certFile"`
	KeyFile            string `json:"keyFile"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify"`
}

// Estimator is one member's estimator endpoint.
type Estimator struct {
	// Address is host:port.
	Address string `json:"address"`
}

// Connection reports how connecting to one member's estimator went.
type Connection struct {
	Connected bool   `json:"connected"`
	Target    string `json:"target,omitempty"`
	Error     string `json:"error,omitempty"`
	LatencyNs int64  `json:"latencyNs"`
}

// Validate checks the estimator map and TLS options; errors name the JSON field.
func Validate(estimators map[string]Estimator, tls TLS) error {
	for name, e := range estimators {
		if name == "" {
			return errors.New("estimators: empty cluster name")
		}
		if _, _, err := SplitHostPort(e.Address); err != nil {
			return fmt.Errorf("estimators.%s.address: %v", name, err)
		}
	}
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		return errors.New("tls: certFile and keyFile must be given together")
	}
	return nil
}

// SplitHostPort splits host:port (IPv6 hosts in brackets) and checks the port.
func SplitHostPort(addr string) (string, int32, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("want host:port, got %q", addr)
	}
	host, p := strings.Trim(addr[:i], "[]"), addr[i+1:]
	port, err := strconv.ParseInt(p, 10, 32)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q in %q", p, addr)
	}
	if host == "" {
		return "", 0, fmt.Errorf("empty host in %q", addr)
	}
	return host, int32(port), nil
}

// Connect registers one ExternalName Service per member in a fake Kubernetes client, so that
// Karmada's EstablishConnection resolves and dials each address exactly as the scheduler does
// when the estimator Services are not in its host cluster (same TLS options, same 5 s dial
// timeout). Members that fail to connect stay out of the cache, as in the scheduler.
func Connect(estimators map[string]Estimator, tls TLS, cache *estimatorclient.SchedulerEstimatorCache) (map[string]Connection, error) {
	kube := fake.NewSimpleClientset()
	cfg := &grpcconnection.ClientConfig{
		TargetPort:               DefaultPort,
		InsecureSkipServerVerify: tls.InsecureSkipVerify,
		ServerAuthCAFile:         tls.CAFile,
		CertFile:                 tls.CertFile,
		KeyFile:                  tls.KeyFile,
	}
	clusters := make([]string, 0, len(estimators))
	for name, e := range estimators {
		clusters = append(clusters, name)
		host, port, err := SplitHostPort(e.Address)
		if err != nil {
			return nil, fmt.Errorf("estimators.%s.address: %v", name, err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ServiceNamespace,
				Name:      names.GenerateEstimatorServiceName(ServicePrefix, name),
			},
			Spec: corev1.ServiceSpec{
				Type:         corev1.ServiceTypeExternalName,
				ExternalName: host,
				Ports:        []corev1.ServicePort{{Port: DefaultPort, TargetPort: intstr.FromInt32(port)}},
			},
		}
		if _, err := kube.CoreV1().Services(ServiceNamespace).Create(context.TODO(), svc, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("estimators.%s: cannot register its service: %v", name, err)
		}
	}
	sort.Strings(clusters)
	out := make(map[string]Connection, len(estimators))
	for _, name := range clusters {
		start := time.Now()
		err := estimatorclient.EstablishConnection(kube, estimatorclient.SchedulerEstimatorServiceInfo{
			Name: name, Namespace: ServiceNamespace, NamePrefix: ServicePrefix,
		}, cache, cfg)
		c := Connection{LatencyNs: time.Since(start).Nanoseconds(), Connected: err == nil}
		if err != nil {
			c.Error = err.Error()
		} else {
			c.Target = estimators[name].Address
		}
		out[name] = c
	}
	return out, nil
}

// KarmadaVersion reports the Karmada module version the running binary was built against.
func KarmadaVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/karmada-io/karmada" {
				return m.Version
			}
		}
	}
	return "unknown"
}
