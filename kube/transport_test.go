package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// proxiedCluster connects key through a fault proxy in pass mode and
// returns the pool, the proxy and the connected Cluster.
func proxiedCluster(t *testing.T, name string, ropts RequestOptions, bs breaker.Settings) (*pool.Pool[client.ObjectKey, *Cluster], *faultproxy.Proxy, *Cluster) {
	t.Helper()
	needEnvtest(t)
	proxy := workProxy(t)
	key := client.ObjectKey{Namespace: "fleet", Name: name}
	putKubeconfig(t, key, kubeconfig(t, proxy.Addr(), ""))
	p, _ := newTestPool(t, DialerOptions{RequestTimeout: 30 * time.Second, Requests: ropts},
		pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second, Breaker: bs})
	c := getEventually(t, p, key)
	// Warm the REST mapper: its discovery would otherwise be the first
	// request of the tests, serialized by the mapper's lock.
	// A short first-byte deadline may cut it on a loaded machine: retry.
	var err error
	for range 5 {
		err = c.Uncached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "absent"}, &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return p, proxy, c
		}
	}
	t.Fatalf("warm-up Get: %v", err)
	return nil, nil, nil
}

// hold switches the proxy to hold and drops the client's connection, which
// the switch closed: requests sent after it hang in their TLS handshake
// (client-go's bound: 10s) instead of failing at once on the dead
// connection. A real black hole does not close connections.
func hold(proxy *faultproxy.Proxy, c *Cluster) {
	proxy.SetMode(faultproxy.Hold)
	closeIdle(c.HTTPClient())
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type outcome struct {
	err  error
	took time.Duration
	at   time.Time
}

// getConfigMaps sends n uncached Gets at once; their outcomes arrive on the
// returned channel as they end.
func getConfigMaps(c *Cluster, n int) <-chan outcome {
	out := make(chan outcome, n)
	for range n {
		go func() {
			start := time.Now()
			err := c.Uncached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "held"}, &corev1.ConfigMap{})
			out <- outcome{err: err, took: time.Since(start), at: time.Now()}
		}()
	}
	return out
}

// When the breaker opens, requests hung in flight on the cluster end at once
// with ErrCircuitOpen (not at the 30s REST timeout), and new ones are
// rejected without being sent.
func TestBreakerOpenCancelsRequestsInFlight(t *testing.T) {
	p, proxy, c := proxiedCluster(t, "trip-cancels", RequestOptions{DisableFirstByte: true, DisablePassiveHealth: true}, breaker.Settings{OpenTimeout: time.Hour})
	ev := watchEvents(t, p)
	hold(proxy, c)
	results := getConfigMaps(c, 3)
	waitUntil(t, 8*time.Second, "3 requests in flight", func() bool { _, n := c.guard.InFlight(); return n == 3 })

	for range 3 {
		p.Report(c.Key, errors.New("a reconciler saw the cluster fail"))
	}
	ev.waitFor(t, 0, c.Key, func(e pool.Event[client.ObjectKey]) bool { return e.Breaker == breaker.StateOpen }, 10*time.Second)
	opened := time.Now()
	for range 3 {
		r := <-results
		if !errors.Is(r.err, pool.ErrCircuitOpen) {
			t.Errorf("request in flight ended with %v, want ErrCircuitOpen", r.err)
		}
		if d, ok := pool.RetryAfter(r.err); !ok || d < 30*time.Minute {
			t.Errorf("RetryAfter = %v, %v; want the next probe, about 1h away", d, ok)
		}
		if late := r.at.Sub(opened); late > 2*time.Second { // generous: it is a cancel
			t.Errorf("request ended %v after the breaker opened", late)
		}
	}
	start := time.Now()
	err := c.Uncached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "x"}, &corev1.ConfigMap{})
	if !errors.Is(err, pool.ErrCircuitOpen) || time.Since(start) > time.Second {
		t.Fatalf("request on an open breaker: %v after %v, want an instant ErrCircuitOpen", err, time.Since(start))
	}
	if res, rerr := Requeue(err); rerr != nil || res.RequeueAfter <= 0 {
		t.Fatalf("Requeue(%v) = %+v, %v; want a requeue without error", err, res, rerr)
	}
}

// Passive health alone: requests to a cluster that stopped answering end at
// their first-byte deadline, count as failures, open the breaker and evict
// the client; the next request fails at once.
func TestHungRequestsOpenTheBreaker(t *testing.T) {
	p, proxy, c := proxiedCluster(t, "hung-requests", RequestOptions{MinFirstByte: 300 * time.Millisecond}, breaker.Settings{OpenTimeout: time.Hour})
	hold(proxy, c)
	var err error
	for i := 0; i < 10 && !errors.Is(err, pool.ErrCircuitOpen); i++ {
		start := time.Now()
		err = c.Uncached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "held"}, &corev1.ConfigMap{})
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("request %d took %v (%v): the first-byte deadline is 300ms", i, d, err)
		}
		if err == nil || !(errors.Is(err, ErrFirstByteTimeout) || errors.Is(err, pool.ErrCircuitOpen)) {
			t.Fatalf("request %d: %v, want ErrFirstByteTimeout or ErrCircuitOpen", i, err)
		}
	}
	if !errors.Is(err, pool.ErrCircuitOpen) {
		t.Fatalf("breaker never opened: %v (state %+v)", err, p.State(c.Key))
	}
	if _, ok := p.Peek(c.Key); ok {
		t.Fatal("client still cached after the breaker opened")
	}
}

// A hanging cluster: the bulkhead's cap (3) of requests hang, and once
// they are late (past the cluster's retransmission timeout) seven more
// fail at once with ErrBulkheadFull and a RetryAfter; removing the cluster
// ends the blocked ones with ErrClusterStopped.
func TestBulkheadCapsRequestsToAHangingCluster(t *testing.T) {
	p, proxy, c := proxiedCluster(t, "bulkhead", RequestOptions{DisableFirstByte: true, DisablePassiveHealth: true}, breaker.Settings{})
	hold(proxy, c)
	blocked := getConfigMaps(c, DefaultMaxInFlight)
	// Until the cap's requests are late the cluster still counts as
	// answering: a burst to a healthy cluster is not throttled.
	waitUntil(t, 10*time.Second, "the cap's requests to be late", func() bool { return !c.guard.Responsive() })
	results := getConfigMaps(c, 10-DefaultMaxInFlight)
	for range 10 - DefaultMaxInFlight {
		select {
		case r := <-results:
			if !errors.Is(r.err, ErrBulkheadFull) {
				t.Fatalf("over the cap: %v, want ErrBulkheadFull", r.err)
			}
			if d, ok := pool.RetryAfter(r.err); !ok || d < 0 {
				t.Errorf("RetryAfter = %v, %v", d, ok)
			}
			if r.took > 5*time.Second {
				t.Errorf("a rejection took %v", r.took)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("rejections did not come")
		}
	}
	if _, n := c.guard.InFlight(); n != DefaultMaxInFlight {
		t.Fatalf("%d counted requests in flight, want the cap %d", n, DefaultMaxInFlight)
	}
	select {
	case r := <-blocked:
		t.Fatalf("a request within the cap ended while the cluster hangs: %v", r.err)
	default:
	}
	p.Remove(c.Key)
	for range DefaultMaxInFlight {
		if r := <-blocked; !errors.Is(r.err, ErrClusterStopped) {
			t.Errorf("after Remove: %v, want ErrClusterStopped", r.err)
		}
	}
}

// 404 and 409 answers are the cluster working: they reset the breaker's
// failure count instead of adding to it.
func TestNotFoundAndConflictAreNotFailures(t *testing.T) {
	p, _, c := proxiedCluster(t, "answers", RequestOptions{}, breaker.Settings{})
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "conflict-me"}}
	if err := c.Uncached.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		is   func(error) bool
	}{
		{"404", func() error {
			return c.Uncached.Get(ctx, client.ObjectKey{Namespace: "default", Name: "absent"}, &corev1.ConfigMap{})
		}, apierrors.IsNotFound},
		{"409", func() error {
			return c.Uncached.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "conflict-me"}})
		}, apierrors.IsAlreadyExists},
	} {
		for range 2 {
			p.Report(c.Key, errors.New("some failure"))
		}
		if s := p.State(c.Key); s.ConsecutiveFailures != 2 {
			t.Fatalf("%s: setup: %+v", tc.name, s)
		}
		for range 3 {
			if err := tc.call(); !tc.is(err) {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if s := p.State(c.Key); s.ConsecutiveFailures != 0 || s.Breaker != breaker.StateClosed || !s.Connected {
			t.Fatalf("after %s answers: %+v, want a closed breaker with no failures", tc.name, s)
		}
	}
}

// A watch is exempt from the first-byte rule: with every read delayed past
// the deadline, a Get fails with ErrFirstByteTimeout while a watch on the
// same client opens and delivers its events.
func TestWatchIsNotCutByTheFirstByteRule(t *testing.T) {
	p, proxy, c := proxiedCluster(t, "watch", RequestOptions{MinFirstByte: 100 * time.Millisecond},
		breaker.Settings{ConsecutiveFailures: 1000})
	cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), c.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetDelay(time.Second)
	proxy.SetMode(faultproxy.Delay)
	ctx := context.Background()
	err = c.Uncached.Get(ctx, client.ObjectKey{Namespace: "default", Name: "absent"}, &corev1.ConfigMap{})
	if !errors.Is(err, ErrFirstByteTimeout) {
		t.Fatalf("Get through a 1s-per-read network: %v, want ErrFirstByteTimeout", err)
	}
	// The switch closed the client's connection: that may have counted too.
	failures := p.State(c.Key).ConsecutiveFailures
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=watched"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	direct, err := client.New(workCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "watched"}}
	if err := direct.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	defer direct.Delete(ctx, cm) //nolint:errcheck // cleanup
	select {
	case e, ok := <-w.ResultChan():
		if !ok || e.Type != watch.Added {
			t.Fatalf("watch event %v (open=%v), want ADDED", e.Type, ok)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event")
	}
	if s := p.State(c.Key); s.ConsecutiveFailures != failures {
		t.Errorf("failures = %d after the watch, want %d as before it", s.ConsecutiveFailures, failures)
	}
}
