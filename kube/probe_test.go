package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// An Unauthorized probe answer removes the cluster at once (no waiting for
// the failure threshold) and re-dials it, which reads the credentials anew.
func TestProbeUnauthorizedRedials(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	var dials atomic.Int32
	dial := func(_ context.Context, key client.ObjectKey) (*Cluster, error) {
		dials.Add(1)
		done := make(chan struct{})
		close(done)
		return &Cluster{Key: key, config: &rest.Config{Host: srv.URL}, httpClient: srv.Client(),
			cancel: func() {}, done: done}, nil
	}
	p, err := pool.New(dial, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ev := watchEvents(t, p)
	key := client.ObjectKey{Namespace: "fleet", Name: "rotating-token"}
	if _, err := p.Get(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	startProber(t, p, ProberOptions{Interval: 20 * time.Millisecond, Timeout: time.Second})

	n := ev.waitFor(t, 0, key, connected(true), 10*time.Second)
	status.Store(http.StatusUnauthorized)
	n = ev.waitFor(t, n, key, func(e pool.Event[client.ObjectKey]) bool { return e.Type == pool.Disconnected }, 10*time.Second)
	if s := p.State(key); s.ConsecutiveFailures != 0 {
		t.Errorf("Unauthorized went through the breaker instead of a removal: %+v", s)
	}
	status.Store(http.StatusOK)
	ev.waitFor(t, n, key, connected(true), 10*time.Second)
	if d := dials.Load(); d < 2 {
		t.Fatalf("dials=%d, want a re-dial after Unauthorized", d)
	}
}
