package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// An Unauthorized probe answer replaces the client at once (no waiting for
// the failure threshold) by a new dial, which reads the credentials anew:
// a Redial, not a Remove (no Removed event).
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
	n = ev.waitFor(t, n, key, connected(false), 10*time.Second)
	if s := p.State(key); s.ConsecutiveFailures != 0 {
		t.Errorf("Unauthorized went through the breaker instead of a redial: %+v", s)
	}
	status.Store(http.StatusOK)
	ev.waitFor(t, n, key, connected(true), 10*time.Second)
	if d := dials.Load(); d < 2 {
		t.Fatalf("dials=%d, want a re-dial after Unauthorized", d)
	}
	if slices.ContainsFunc(ev.snapshot(), func(e pool.Event[client.ObjectKey]) bool { return e.Type == pool.Removed }) {
		t.Fatalf("the cluster was removed, not redialed: %+v", ev.snapshot())
	}
}

// fakeCluster is a Cluster whose probes go to srv.
func fakeCluster(key client.ObjectKey, srv *httptest.Server, rev string) *Cluster {
	done := make(chan struct{})
	close(done)
	return &Cluster{Key: key, revision: rev, config: &rest.Config{Host: srv.URL}, httpClient: srv.Client(),
		cancel: func() {}, done: done}
}

// The prober's workqueue probes every connected cluster again and again,
// reports each outcome, and forgets a cluster that left the pool.
func TestProberReportsEachConnectedCluster(t *testing.T) {
	srv := statusServer(t)
	fp := newFakePool()
	up, down := client.ObjectKey{Namespace: "f", Name: "up"}, client.ObjectKey{Namespace: "f", Name: "down"}
	fp.connect(fakeCluster(up, srv, ""))
	downSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer downSrv.Close()
	fp.connect(fakeCluster(down, downSrv, ""))
	pr, err := NewProber(fp, ProberOptions{Interval: 10 * time.Millisecond, Timeout: time.Second, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- pr.Start(ctx) }()
	waitUntil(t, 10*time.Second, "3 probes of each cluster", func() bool {
		return len(fp.reportsOf(up)) >= 3 && len(fp.reportsOf(down)) >= 3
	})
	for _, err := range fp.reportsOf(up) {
		if err != nil {
			t.Fatalf("healthy cluster reported %v", err)
		}
	}
	for _, err := range fp.reportsOf(down) {
		if err == nil {
			t.Fatal("503 reported as a success")
		}
	}
	fp.Remove(down)
	n := len(fp.reportsOf(down))
	waitUntil(t, 10*time.Second, "3 more probes of the connected one", func() bool { return len(fp.reportsOf(up)) >= n+3 })
	if got := len(fp.reportsOf(down)); got > n+1 { // one may have been in flight
		t.Errorf("removed cluster probed %d more times", got-n)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
