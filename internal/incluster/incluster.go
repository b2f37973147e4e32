package incluster

import (
	"context"
	"encoding/json"
	"errors"
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
)

// The environment read: this controller's Pod (set with the downward API,
// as Cluster API's manifests do), and the in-cluster endpoint Kubernetes
// sets in every Pod.
const (
	EnvPodNamespace = "POD_NAMESPACE"
	EnvPodName      = "POD_NAME"
	EnvPodUID       = "POD_UID"
	EnvServiceHost  = "KUBERNETES_SERVICE_HOST"
	EnvServicePort  = "KUBERNETES_SERVICE_PORT"
	// CAFile is the CA of the in-cluster endpoint, as rest.InClusterConfig
	// reads it.
	CAFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// Pod is this controller's Pod, and where to find the endpoint of the
// cluster it runs on.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	// Endpoint returns the in-cluster host and CA file; read at each
	// switch, as ClusterCache reads ctrl.GetConfig at each connect.
	Endpoint func() (host, caFile string, err error)
}

// FromEnv reads this controller's Pod from POD_NAMESPACE, POD_NAME and
// POD_UID, or returns nil (and logs why) if one is unset: the dials then
// always use the kubeconfig's endpoint, as ClusterCache does.
func FromEnv(log logr.Logger) *Pod {
	ns, name, uid := os.Getenv(EnvPodNamespace), os.Getenv(EnvPodName), os.Getenv(EnvPodUID)
	if ns == "" || name == "" || uid == "" {
		log.Info("InCluster: POD_NAMESPACE, POD_NAME or POD_UID unset; the cluster this controller runs on is reached through its kubeconfig's endpoint")
		return nil
	}
	return &Pod{Namespace: ns, Name: name, UID: types.UID(uid), Endpoint: ServiceEndpoint}
}

// ServiceEndpoint is the in-cluster endpoint of rest.InClusterConfig,
// without its token: the kubeconfig's credentials are kept.
func ServiceEndpoint() (host, caFile string, err error) {
	h, p := os.Getenv(EnvServiceHost), os.Getenv(EnvServicePort)
	if h == "" || p == "" {
		return "", "", fmt.Errorf("kube: %s or %s unset: %w", EnvServiceHost, EnvServicePort, rest.ErrNotInCluster)
	}
	return "https://" + net.JoinHostPort(h, p), CAFile, nil
}

// RunsOn reports whether the cluster at host, read with hc under ctx,
// holds the Pod p (same UID). NotFound and Forbidden (credentials that may
// not read Pods there) mean it does not; another failure is an error, as
// in ClusterCache (runningOnWorkloadCluster), so that the choice is never
// made on a guess.
func (p *Pod) RunsOn(ctx context.Context, hc *http.Client, host string) (bool, error) {
	u, err := url.Parse(host)
	if err != nil {
		return false, errors.New("kube: server URL does not parse")
	}
	u = u.JoinPath("api", "v1", "namespaces", p.Namespace, "pods", p.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
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
		return false, errors.New("kube: looking for this controller's Pod: answer does not parse")
	}
	return pod.UID == p.UID, nil
}
