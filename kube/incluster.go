package kube

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/incluster"
	"github.com/clusterpool/clusterpool/internal/reqguard"
)

// inClusterPod is this controller's Pod (DialerOptions.InCluster).
type inClusterPod = incluster.Pod

// podFromEnv reads this controller's Pod from POD_NAMESPACE, POD_NAME and
// POD_UID, or returns nil (and logs why) if one is unset.
func podFromEnv(log logr.Logger) *inClusterPod { return incluster.FromEnv(log) }

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
	ours, err := d.inCluster.RunsOn(withClass(ctx, reqguard.Unreported), hc, cfg.Host)
	if err != nil || !ours {
		return hc, err
	}
	host, caFile, err := d.inCluster.Endpoint()
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
