package clustercache_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// TestOnlyProbesDisconnect: as in Cluster API, only failed health probes
// count toward a disconnect, one per probe interval. A cluster whose
// connections are dropped and whose new ones hang (its informers' relists
// fail at the TLS handshake timeout) stays connected through 3 probe
// intervals: at most 3 probes fail in them, fewer than
// ProbeFailureThreshold. So does a cluster whose apiserver is killed (every
// connection reset, each new one too): its informers' relists lose a
// connection every second or so, and each may bring a probe forward, but
// failed probes count at most once per interval, so the 5th comes no
// sooner than 4 intervals after the first (the chaos run's
// apiserver-restart, 5-20 s, must not disconnect, as it does not with
// Cluster API).
func TestOnlyProbesDisconnect(t *testing.T) {
	e := newEnv(t, "disconnect")
	cc := e.setup(t, 10, nil)
	e.start(t, cc)
	ctx := context.Background()
	// The failed probes counted at most through 3 intervals and a timeout:
	// one per interval, and for the killed one also one at once (a lost
	// connection brings a probe forward).
	modes := map[string]faultproxy.Mode{"hung": faultproxy.Hold, "killed": faultproxy.Reset}
	most := map[string]int{"hung": 3, "killed": 4}
	proxies := map[string]*faultproxy.Proxy{}
	for name := range modes {
		proxies[name] = e.proxy(t, faultproxy.Pass)
		if err := e.createCluster(ctx, name, e.kubeconfig(t, proxies[name].Addr()), true); err != nil {
			t.Fatal(err)
		}
	}
	for name := range modes {
		waitConnected(t, cc, client.ObjectKey{Namespace: e.ns, Name: name})
	}
	for name, mode := range modes {
		proxies[name].SetMode(mode)
	}
	start := time.Now()
	for end := start.Add(3*clustercache.ProbeInterval + clustercache.ProbeTimeout); time.Now().Before(end); time.Sleep(time.Second) {
		// Failures at least an interval apart: by t, at most t/interval + 1,
		// and one more for a probe in flight at the switch.
		paced := int(time.Since(start)/clustercache.ProbeInterval) + 2
		for name := range modes {
			key := client.ObjectKey{Namespace: e.ns, Name: name}
			st := cc.GetHealthCheckingState(ctx, key)
			if _, err := cc.GetClient(ctx, key); err != nil || st.ConsecutiveFailures > min(most[name], paced) {
				t.Fatalf("%s: %v after the switch: disconnected (%v), or more than %d failures counted (%+v)",
					name, time.Since(start).Round(time.Second), err, min(most[name], paced), st)
			}
		}
	}
}
