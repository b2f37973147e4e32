package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/grayproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// slowWorkers is the controller's worker count in the slow-cluster tests:
// controller-runtime's usual MaxConcurrentReconciles for a busy controller.
const slowWorkers = 10

// grayProxies starts one grayproxy per name in front of the workload
// envtest apiserver (accepting its client certificates) and returns them
// by name; they close at the end of the test.
func grayProxies(t *testing.T, names ...string) map[string]*grayproxy.Proxy {
	t.Helper()
	needEnvtest(t)
	file := suite.Envs[1].ControlPlane.GetAPIServer().Configure().Get("client-ca-file").Get(nil)
	if len(file) != 1 {
		t.Fatalf("client-ca-file: %q", file)
	}
	cas, err := os.ReadFile(file[0])
	if err != nil {
		t.Fatal(err)
	}
	proxies := map[string]*grayproxy.Proxy{}
	for _, name := range names {
		p, err := grayproxy.New(grayproxy.Config{Target: workCfg, ClientCAs: cas})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		proxies[name] = p
	}
	return proxies
}

// grayCluster is a Cluster of the pool reached through a grayproxy, and
// a clientset on its guarded transport.
type grayCluster struct {
	*Cluster
	cs kubernetes.Interface
}

// grayFleet returns a pool (kube.NewPool, opts with no client-side rate
// limit) whose cluster fleet/<name> is the workload apiserver behind
// proxies[name], and each cluster, connected.
func grayFleet(t *testing.T, proxies map[string]*grayproxy.Proxy, opts DialerOptions) (*pool.Pool[client.ObjectKey, *Cluster], map[string]grayCluster) {
	t.Helper()
	src := ConfigFunc(func(_ context.Context, key client.ObjectKey) (*rest.Config, error) {
		p, ok := proxies[key.Name]
		if !ok {
			return nil, errors.New("no such cluster")
		}
		return p.ClientConfig(workCfg), nil
	})
	opts.QPS, opts.Burst = 1e6, 1e6 // the workers, not client-go's limiter, set the load
	p := newPoolWith(t, src, opts, pool.Options[client.ObjectKey, *Cluster]{MaxWait: time.Minute})
	clusters := map[string]grayCluster{}
	for name := range proxies {
		c, err := p.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), c.HTTPClient())
		if err != nil {
			t.Fatal(err)
		}
		clusters[name] = grayCluster{Cluster: c, cs: cs}
	}
	return p, clusters
}

// getNS is a counted read: a GET of the default namespace.
func getNS(cs kubernetes.Interface) error {
	_, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	return err
}

// workers runs slowWorkers goroutines, each calling step until stop.
type workers struct {
	stop, done chan struct{}
}

// startWorkers starts slowWorkers goroutines, each calling step until the
// workers are stopped; step is given the channel closed then.
func startWorkers(step func(stop <-chan struct{})) *workers {
	w := &workers{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var wg sync.WaitGroup
		for range slowWorkers {
			wg.Go(func() {
				for {
					select {
					case <-w.stop:
						return
					default:
					}
					step(w.stop)
				}
			})
		}
		wg.Wait()
	}()
	return w
}

// halt stops the workers and waits for them; it is idempotent.
func (w *workers) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// heldBack reports whether a cluster's adaptive limit l would refuse some
// of the workers' requests (0: the rule is off).
func heldBack(l int) bool { return l != 0 && l <= slowWorkers }

// firstError keeps the first error set; its zero value is empty.
type firstError struct{ p atomic.Pointer[error] }

func (f *firstError) set(err error) { f.p.CompareAndSwap(nil, &err) }

// get returns the first error set, or nil.
func (f *firstError) get() error {
	if e := f.p.Load(); e != nil {
		return *e
	}
	return nil
}

// shareRun is what the workers saw while the slow cluster was slow. Its
// sampling of the slow cluster's requests in flight (settled) starts once
// its limit reached its floor, and ends when the workers are halted.
type shareRun struct {
	healthyBad   atomic.Int64 // healthy requests that failed or were refused
	firstBad     firstError   // the first failure
	slowBad      atomic.Int64 // slow requests that failed but by the limit
	slowRefused  atomic.Int64 // slow requests refused with ErrBulkheadFull
	slowAnswered atomic.Int64
	settled      atomic.Bool  // the slow cluster's limit and requests in flight reached its floor
	maxSettled   atomic.Int64 // the most slow requests in flight seen once settled
	settledTries atomic.Int64 // slow attempts once settled
	refusedOnce  atomic.Int64 // of them, refused with ErrBulkheadFull
}

// bad records a failure that fails the test.
func (r *shareRun) bad(n *atomic.Int64, err error) {
	n.Add(1)
	r.firstBad.set(err)
}

// round is one worker's step: a read of the healthy cluster, then one of
// the slow cluster, as a controller's workers reconcile objects of both.
func (r *shareRun) round(healthy, slow grayCluster) {
	if err := getNS(healthy.cs); err != nil {
		r.bad(&r.healthyBad, err)
	}
	settled := r.settled.Load()
	err := getNS(slow.cs)
	switch {
	case err == nil:
		r.slowAnswered.Add(1)
	case errors.Is(err, ErrBulkheadFull):
		r.slowRefused.Add(1)
		if settled {
			r.refusedOnce.Add(1)
		}
	default:
		r.bad(&r.slowBad, err)
	}
	if settled {
		r.settledTries.Add(1)
		_, counted := slow.guard.InFlight()
		for m := r.maxSettled.Load(); int64(counted) > m && !r.maxSettled.CompareAndSwap(m, int64(counted)); m = r.maxSettled.Load() {
		}
	}
}

// failed reports whether a request failed other than by the slow
// cluster's limit.
func (r *shareRun) failed() bool { return r.healthyBad.Load() > 0 || r.slowBad.Load() > 0 }

// A cluster ten times slower holds only its share of the workers (issue
// 43): ten workers read a healthy cluster and a slow one in turn, both the
// workload apiserver behind a grayproxy. Once the slow cluster answers ten
// times slower than its usual latency, its adaptive limit falls to its
// floor (MinLimit, 3) and holds its counted requests in flight there: the
// workers it would have held get ErrBulkheadFull at once and go on to the
// healthy cluster, whose requests all succeed and are never refused, and
// whose limit stays above the workers (the hang bulkhead is off, so every
// refusal is the limit's). When the slow cluster answers as usual again,
// its limit rises (the workers then read it alone: the two clusters are
// one apiserver, whose latency doubled load would raise). Neither breaker
// counts a failure.
func TestSlowClusterHoldsOnlyItsShare(t *testing.T) {
	proxies := grayProxies(t, "healthy", "slow")
	// The hang bulkhead (MaxInFlight) is off, so that every refusal is the
	// adaptive limit's: on a starved machine an apiserver that gets no CPU
	// past its retransmission timeout looks hung to it (the hang tests of
	// transport_test.go pin it).
	p, clusters := grayFleet(t, proxies, DialerOptions{Requests: RequestOptions{DisableBulkhead: true}})
	healthy, slow := clusters["healthy"], clusters["slow"]
	usual := warmUp(t, healthy, slow)

	if err := proxies["slow"].Set(grayproxy.SlowFor(9 * usual)); err != nil { // ten times the usual
		t.Fatal(err)
	}
	r := &shareRun{}
	w := startWorkers(func(<-chan struct{}) { r.round(healthy, slow) })
	defer w.halt()
	report := func() string {
		return fmt.Sprintf("limits %d healthy, %d slow; %d healthy failures, %d slow, first %v; %d slow refused, %d answered",
			healthy.guard.Limit(), slow.guard.Limit(), r.healthyBad.Load(), r.slowBad.Load(), r.firstBad.get(),
			r.slowRefused.Load(), r.slowAnswered.Load())
	}
	settle(t, "the slow cluster's limit and requests in flight at its floor", r.failed, report, func() bool {
		_, counted := slow.guard.InFlight() // requests admitted under a higher limit drain
		return slow.guard.Limit() <= DefaultMinLimit && counted <= DefaultMinLimit
	})
	r.settled.Store(true)
	settle(t, "300 rounds once settled", r.failed, report, func() bool { return r.settledTries.Load() >= 300 })
	w.halt()
	healthyLimit := healthy.guard.Limit()
	r.check(t, healthyLimit)
	recoverSlow(t, proxies["slow"], slow)
	for _, c := range []grayCluster{healthy, slow} {
		if s := p.State(c.Key); s.Breaker != breaker.StateClosed || s.WindowFailures != 0 || s.ConsecutiveFailures != 0 {
			t.Fatalf("%s: %+v, want its breaker closed with nothing counted", c.Key, s)
		}
	}
	t.Logf("slow cluster: %d answered, %d refused; settled max in flight %d; healthy limit %d", r.slowAnswered.Load(),
		r.slowRefused.Load(), r.maxSettled.Load(), healthyLimit)
}

// check fails t unless, while the slow cluster was slow, every request
// to the healthy cluster succeeded and its limit, healthyLimit, stayed
// above the workers, and the slow cluster's requests failed only by its
// limit, and held at most its floor of workers once settled.
func (r *shareRun) check(t *testing.T, healthyLimit int) {
	t.Helper()
	if n := r.healthyBad.Load(); n > 0 {
		t.Fatalf("%d requests to the healthy cluster failed or were refused; first: %v", n, r.firstBad.get())
	}
	if n := r.slowBad.Load(); n > 0 {
		t.Fatalf("%d requests to the slow cluster failed by other than its limit; first: %v", n, r.firstBad.get())
	}
	if m, refused := r.maxSettled.Load(), r.refusedOnce.Load(); m > DefaultMinLimit || refused == 0 {
		t.Fatalf("once settled the slow cluster held up to %d of %d workers (%d refused), want at most its floor %d and some refused",
			m, slowWorkers, refused, DefaultMinLimit)
	}
	if heldBack(healthyLimit) {
		t.Fatalf("the healthy cluster's limit is %d, want above the %d workers", healthyLimit, slowWorkers)
	}
}

// recoverSlow lifts proxy's fault and has the workers read the slow
// cluster alone until its limit is above twice its floor; every request
// must succeed but those refused by the limit, whose RetryAfter a worker
// waits out as a requeue would (a busy loop on refusals would starve the
// apiserver).
func recoverSlow(t *testing.T, proxy *grayproxy.Proxy, slow grayCluster) {
	t.Helper()
	if err := proxy.Set(grayproxy.PassFault()); err != nil {
		t.Fatal(err)
	}
	var bad atomic.Int64
	var first firstError
	w := startWorkers(func(stop <-chan struct{}) {
		err := getNS(slow.cs)
		if d, ok := pool.RetryAfter(err); ok && errors.Is(err, ErrBulkheadFull) {
			select {
			case <-time.After(d):
			case <-stop:
			}
			return
		}
		if err != nil {
			bad.Add(1)
			first.set(err)
		}
	})
	defer w.halt()
	settle(t, "the slow cluster's limit rising once it answers as usual", func() bool { return bad.Load() > 0 },
		func() string {
			return fmt.Sprintf("limit %d; %d failures, first %v", slow.guard.Limit(), bad.Load(), first.get())
		},
		func() bool { return slow.guard.Limit() > 2*DefaultMinLimit })
	w.halt()
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d requests to the recovered cluster failed by other than its limit; first: %v", n, first.get())
	}
}

// warmUp has the workers read each cluster in turn, at the concurrency of
// what follows, 15 reads a worker (past the rule's warm-up: each cluster
// has a baseline), and returns the slow cluster's median latency. Both
// limits must then be above the workers: neither cluster is held back.
func warmUp(t *testing.T, healthy, slow grayCluster) time.Duration {
	t.Helper()
	var took []time.Duration
	for _, c := range []grayCluster{healthy, slow} {
		var mu sync.Mutex
		took = nil
		var failed firstError
		w := startWorkers(func(<-chan struct{}) {
			start := time.Now()
			if err := getNS(c.cs); err != nil {
				failed.set(err)
				return
			}
			mu.Lock()
			took = append(took, time.Since(start))
			mu.Unlock()
		})
		waitUntil(t, 2*time.Minute, "the warm-up reads", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(took) >= 15*slowWorkers || failed.get() != nil
		})
		w.halt()
		if err := failed.get(); err != nil {
			t.Fatalf("warm-up read of %s: %v", c.Key, err)
		}
	}
	if heldBack(healthy.guard.Limit()) || heldBack(slow.guard.Limit()) {
		t.Fatalf("after the warm-up: limits %d and %d, want above the %d workers", healthy.guard.Limit(), slow.guard.Limit(), slowWorkers)
	}
	t.Logf("after the warm-up: limits %d and %d", healthy.guard.Limit(), slow.guard.Limit())
	slices.Sort(took)
	return took[len(took)/2]
}

// settle waits until cond holds, a bound on a failure rather than a goal;
// it fails the test with report if it does not, or if failed does first.
func settle(t *testing.T, what string, failed func() bool, report func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() && !failed() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !cond() {
		t.Fatalf("%s: not reached (%s)", what, report())
	}
	t.Logf("%s: reached (%s)", what, report())
}
