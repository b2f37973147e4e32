package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/reqguard"
)

// The environment DialerOptions.InCluster reads: this controller's Pod
// (set with the downward API, as Cluster API's manifests do), and the
// in-cluster endpoint Kubernetes sets in every Pod.
const (
	envPodNamespace = "POD_NAMESPACE"
	envPodName      = "POD_NAME"
	envPodUID       = "POD_UID"
	envServiceHost  = "KUBERNETES_SERVICE_HOST"
	envServicePort  = "KUBERNETES_SERVICE_PORT"
	// inClusterCAFile is the CA of the in-cluster endpoint, as
	// rest.InClusterConfig reads it.
	inClusterCAFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// inClusterPod is this controller's Pod, and where to find the endpoint of
// the cluster it runs on.
type inClusterPod struct {
	namespace, name string
	uid             types.UID
	// endpoint returns the in-cluster host and CA file; read at each
	// switch, as ClusterCache reads ctrl.GetConfig at each connect.
	endpoint func() (host, caFile string, err error)
}

// podFromEnv reads this controller's Pod from POD_NAMESPACE, POD_NAME and
// POD_UID, or returns nil (and logs why) if one is unset: the dials then
// always use the kubeconfig's endpoint, as ClusterCache does.
func podFromEnv(log logr.Logger) *inClusterPod {
	ns, name, uid := os.Getenv(envPodNamespace), os.Getenv(envPodName), os.Getenv(envPodUID)
	if ns == "" || name == "" || uid == "" {
		log.Info("InCluster: POD_NAMESPACE, POD_NAME or POD_UID unset; the cluster this controller runs on is reached through its kubeconfig's endpoint")
		return nil
	}
	return &inClusterPod{namespace: ns, name: name, uid: types.UID(uid), endpoint: serviceEndpoint}
}

// serviceEndpoint is the in-cluster endpoint of rest.InClusterConfig,
// without its token: the kubeconfig's credentials are kept.
func serviceEndpoint() (host, caFile string, err error) {
	h, p := os.Getenv(envServiceHost), os.Getenv(envServicePort)
	if h == "" || p == "" {
		return "", "", fmt.Errorf("kube: %s or %s unset: %w", envServiceHost, envServicePort, rest.ErrNotInCluster)
	}
	return "https://" + net.JoinHostPort(h, p), inClusterCAFile, nil
}

// inClusterSwitch returns hc, or, when the cluster holds this controller's
// Pod (same UID), switches cfg to the in-cluster host and CA, as
// ClusterCache does (cluster_accessor_client.go:76-107), closes the
// connections dialed so far and returns the HTTP client of the new
// endpoint, once it answers /readyz. The credentials, timeouts and
// transport wrappers of cfg are kept.
func (d *Dialer) inClusterSwitch(ctx context.Context, key client.ObjectKey, cfg *rest.Config, hc *http.Client, conns connCloser, rot *rotator) (*http.Client, error) {
	if d.inCluster == nil {
		return hc, nil
	}
	ours, err := d.inCluster.runsOn(ctx, hc, cfg.Host)
	if err != nil || !ours {
		return hc, err
	}
	host, caFile, err := d.inCluster.endpoint()
	if err != nil {
		return nil, fmt.Errorf("kube: cluster %s runs this controller, but its in-cluster endpoint is unknown: %w", key, err)
	}
	d.opts.Logger.V(1).Info("cluster runs this controller: using the in-cluster endpoint", "cluster", key.String(), "host", host)
	cfg.Host = host
	if rot != nil { // cfg has no TLS settings of its own: rot holds them
		if err := rot.useCA(caFile); err != nil {
			return nil, fmt.Errorf("kube: cluster %s: in-cluster endpoint: %w", key, err)
		}
	} else {
		cfg.CAData, cfg.CAFile = nil, caFile
		conns.CloseAll()
	}
	return d.reach(ctx, key, cfg)
}

// runsOn reports whether the cluster at host, read with hc, holds the Pod
// p (same UID). NotFound and Forbidden (credentials that may not read Pods
// there) mean it does not; another failure fails the dial, as in
// ClusterCache (runningOnWorkloadCluster), so that the choice is never made
// on a guess.
func (p *inClusterPod) runsOn(ctx context.Context, hc *http.Client, host string) (bool, error) {
	u, err := url.Parse(host)
	if err != nil {
		return false, fmt.Errorf("kube: server URL does not parse")
	}
	u = u.JoinPath("api", "v1", "namespaces", p.namespace, "pods", p.name)
	req, err := http.NewRequestWithContext(withClass(ctx, reqguard.Unreported), http.MethodGet, u.String(), nil)
	if err != nil {
		return false, fmt.Errorf("kube: Pod request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("kube: looking for this controller's Pod: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusForbidden:
		return false, nil
	default:
		return false, fmt.Errorf("kube: looking for this controller's Pod: HTTP %d", resp.StatusCode)
	}
	var pod metav1.PartialObjectMetadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&pod); err != nil {
		return false, fmt.Errorf("kube: looking for this controller's Pod: answer does not parse")
	}
	return pod.UID == p.uid, nil
}
