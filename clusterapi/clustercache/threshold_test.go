package clustercache

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

var errProbe = errors.New("probe: connection refused")

// TestProbeFailureThreshold: SetupWithManager's pool disconnects a
// cluster after 5 failed probes in a row, as Cluster API does, not after
// the library's 3; also for clusters under
// SetConnectionCreationRetryInterval's open periods.
func TestProbeFailureThreshold(t *testing.T) {
	for _, retry := range []time.Duration{0, time.Minute} {
		cc := &clusterCache{}
		cc.SetConnectionCreationRetryInterval(retry)
		p, err := pool.New(func(context.Context, client.ObjectKey) (*kube.Cluster, error) { return &kube.Cluster{}, nil },
			cc.poolOptions(0, telemetry{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Get(context.Background(), testKey); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= ProbeFailureThreshold; i++ {
			p.Report(testKey, errProbe)
			if _, connected := p.Peek(testKey); connected != (i < ProbeFailureThreshold) {
				t.Errorf("retry interval %v: connected = %v after %d failed probes, want a disconnect after %d",
					retry, connected, i, ProbeFailureThreshold)
			}
		}
		p.Close()
	}
}
