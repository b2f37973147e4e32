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
// count toward a disconnect. A cluster whose connections are dropped and
// whose new ones hang (its informers' relists fail at the TLS handshake
// timeout) stays connected through 3 probe intervals: at most 3 probes
// fail in them, fewer than ProbeFailureThreshold.
func TestOnlyProbesDisconnect(t *testing.T) {
	e := newEnv(t, "disconnect")
	proxy := e.proxy(t, faultproxy.Pass)
	cc := e.setup(t, 10, nil)
	e.start(t, cc)
	ctx := context.Background()
	if err := e.createCluster(ctx, "hung", e.kubeconfig(t, proxy.Addr()), true); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: e.ns, Name: "hung"}
	eventually(t, time.Minute, func() error { _, err := cc.GetClient(ctx, key); return err })
	proxy.SetMode(faultproxy.Hold)
	for end := time.Now().Add(3*clustercache.ProbeInterval + clustercache.ProbeTimeout); time.Now().Before(end); time.Sleep(time.Second) {
		st := cc.GetHealthCheckingState(ctx, key)
		if _, err := cc.GetClient(ctx, key); err != nil || st.ConsecutiveFailures > 3 {
			t.Fatalf("%v before the end: disconnected (%v), or more than 3 failures counted (%+v)", time.Until(end).Round(time.Second), err, st)
		}
	}
}
