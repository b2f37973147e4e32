package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterpool/clusterpool/internal/grayproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// countingTransport counts the requests sent through it: every attempt the
// caller's client makes, client-go's retries included.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(req)
}

// countingClientset is a clientset on c's clients whose every attempt is
// counted by the returned countingTransport.
func countingClientset(t *testing.T, c *Cluster) (kubernetes.Interface, *countingTransport) {
	t.Helper()
	counting := &countingTransport{next: c.HTTPClient().Transport}
	cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), &http.Client{Transport: counting, Timeout: c.HTTPClient().Timeout})
	if err != nil {
		t.Fatal(err)
	}
	return cs, counting
}

// requeueUntilAnswered is a reconciler's read in its requeue loop: read
// until it is answered, each ErrThrottled mapped by Requeue to a requeue
// within the server's 1 s Retry-After (not waited out here: the servers
// of these tests do not hold a client to it). It returns how many times
// the read was requeued; any other error, or more than max requeues, is
// an error.
func requeueUntilAnswered(read func() error, max int) (int, error) {
	for requeues := 0; ; requeues++ {
		err := read()
		if err == nil {
			return requeues, nil
		}
		res, rerr := Requeue(err)
		if !errors.Is(err, ErrThrottled) || rerr != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
			return requeues, fmt.Errorf("%w (Requeue %+v, %v), want answered or ErrThrottled requeued within 1s", err, res, rerr)
		}
		if requeues == max {
			return requeues, fmt.Errorf("still throttled after %d requeues: %w", max, err)
		}
	}
}

// A busy cluster is not cut off, and holds no worker (issue 43): each of
// three answers of 429 with Retry-After in a row ends its read at once
// with ErrThrottled, unretried by client-go, and the reconciler requeues
// it; a request sent within the Retry-After is answered. The breaker
// counts nothing and the pool keeps the client.
func TestThrottledClusterIsNotCutOff(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPool(t, srv)
	read := func() error { return getCM(context.Background(), cs, "throttled") }
	if err := read(); !errors.Is(err, ErrThrottled) {
		t.Fatalf("the first read: %v, want ErrThrottled at the 429", err)
	}
	if err := getCM(context.Background(), cs, "other"); err != nil {
		t.Fatalf("a request within another's Retry-After: %v, want it sent and answered", err)
	}
	requeues, err := requeueUntilAnswered(read, 5)
	if err != nil || requeues != 2 {
		t.Fatalf("the throttled read, requeued: %v after %d more requeues, want answered after 2", err, requeues)
	}
	if n := srv.count("throttled"); n != 4 {
		t.Fatalf("the throttled read was sent %d times, want 4 (three 429s, then 200)", n)
	}
	if n := srv.count("other"); n != 1 {
		t.Fatalf("the other request reached the cluster %d times, want 1", n)
	}
	stillServing(t, p, c, "after three 429s in a row")
}

// The throttled class of issue 43 (half the answers 429 with Retry-After:
// 1) is reached by the requests the controller makes to it: workers each
// reading in turn, each read answered 429 ends with ErrThrottled and is
// requeued once, then answered; every request made reaches the cluster
// (at least 95 %), client-go resends none, the breaker counts nothing and
// the client is kept. Several workers, because a 429 must not hold back
// the others' requests.
func TestHalfThrottledClusterIsReached(t *testing.T) {
	const workers, gets = 4, 5
	srv := newGrayServer(t)
	p, c, _ := grayPool(t, srv)
	cs, counting := countingClientset(t, c)
	var wg sync.WaitGroup
	errs := make(chan error, workers*gets)
	for w := range workers {
		wg.Go(func() {
			for i := range gets {
				name := fmt.Sprintf("busy-%d-%d", w, i)
				requeues, err := requeueUntilAnswered(func() error { return getCM(context.Background(), cs, name) }, 3)
				if err == nil && requeues != 1 {
					err = fmt.Errorf("%s requeued %d times, want once", name, requeues)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("half throttled: %v", err)
	}
	reached := 0
	for w := range workers {
		for i := range gets {
			reached += srv.count(fmt.Sprintf("busy-%d-%d", w, i))
		}
	}
	made := int(counting.n.Load())
	t.Logf("%d of the %d requests made reached the cluster", reached, made)
	if made != 2*workers*gets || float64(reached) < 0.95*float64(made) {
		t.Fatalf("half throttled: %d of %d requests reached the cluster; want %d made (one 429 and one answer per read), >= 95 %% reached",
			reached, made, 2*workers*gets)
	}
	stillServing(t, p, c, "at half the answers 429")
}

// The same on a real apiserver behind the fault of the gray bench
// (internal/grayproxy's Throttle: half the answers, at random, 429 with
// Retry-After: 1): the controller's workers each read the cluster in turn,
// requeueing each read that ends with ErrThrottled until it is answered;
// some are, at least 95 % of the requests sent into the cluster's client
// reach the proxy (the Prober's rare /readyz reaches it too, which the
// bound tolerates), the breaker counts nothing and the client is kept.
func TestThrottledFaultClassIsReached(t *testing.T) {
	const gets = 3
	px := grayProxies(t, "throttled")
	p, clusters := grayFleet(t, px, DialerOptions{})
	c := clusters["throttled"]
	cs, counting := countingClientset(t, c.Cluster)
	if err := px["throttled"].Set(grayproxy.Throttle(0.5, time.Second)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var requeued atomic.Int64
	errs := make(chan error, slowWorkers*gets)
	for range slowWorkers {
		wg.Go(func() {
			for range gets {
				n, err := requeueUntilAnswered(func() error { return getNS(cs) }, 30)
				requeued.Add(int64(n))
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a read of the throttled cluster: %v", err)
	}
	got, made := px["throttled"].Counts(grayproxy.Throttled), counting.n.Load()
	t.Logf("%d of the %d requests made reached the cluster's proxy (%d answered 429, %d reads requeued)",
		got.Received(), made, got.Faulted, requeued.Load())
	if requeued.Load() == 0 || float64(got.Received()) < 0.95*float64(made) {
		t.Fatalf("50 %% throttled: %+v received of %d made, %d requeues; want >= 95 %% reached, reads requeued on their 429s",
			got, made, requeued.Load())
	}
	stillServing(t, p, c.Cluster, "at half the answers 429, on a real apiserver")
}

// A counted read answered 429 with Retry-After: 30, whose RequestTimeout
// (a minute) would let client-go wait it out in the worker, ends at that
// answer with ErrThrottled: pool.RetryAfter gives the server's 30 s and
// Requeue requeues after it. The server saw exactly one request (client-go
// did not resend it, so it slept nothing), the 429's connection serves the
// next request, and nothing is counted against the cluster.
func TestThrottledReadEndsAtItsAnswer(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPoolWith(t, srv, DialerOptions{RequestTimeout: time.Minute})
	err := getCM(context.Background(), cs, "always")
	d, ok := pool.RetryAfter(err)
	if !errors.Is(err, ErrThrottled) || !ok || d <= 20*time.Second || d > 30*time.Second {
		t.Fatalf("answered 429, Retry-After 30: %v (RetryAfter %v, %v); want ErrThrottled after about 30s", err, d, ok)
	}
	if res, rerr := Requeue(err); rerr != nil || res.RequeueAfter <= 20*time.Second || res.RequeueAfter > 30*time.Second {
		t.Fatalf("Requeue = %+v, %v; want a requeue after about 30s", res, rerr)
	}
	if n := srv.count("always"); n != 1 {
		t.Fatalf("sent %d times, want once: client-go must not resend it", n)
	}
	conns := srv.conns.Load()
	if err := getCM(context.Background(), cs, "other"); err != nil {
		t.Fatal(err)
	}
	if n := srv.conns.Load(); n != conns {
		t.Fatalf("the request after the 429 opened a connection (%d, then %d): the 429's was not reused", conns, n)
	}
	stillServing(t, p, c, "after a read answered 429")
}

// An exempt request (the informer cache's: its client marks them so)
// answered 429 with Retry-After: 1 is client-go's: it waits out the
// Retry-After, sends it again, and it succeeds; no worker waits on it.
func TestThrottledExemptRequestIsRetriedByClientGo(t *testing.T) {
	srv := newGrayServer(t)
	p, c, _ := grayPool(t, srv)
	cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), informerClient(c.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	if err := getCM(context.Background(), cs, "busy-exempt"); err != nil {
		t.Fatalf("an exempt request answered 429: %v, want client-go's retry answered", err)
	}
	if n := srv.count("busy-exempt"); n != 2 {
		t.Fatalf("sent %d times, want twice (the 429, then client-go's retry)", n)
	}
	stillServing(t, p, c, "after an exempt request's 429")
}

// With passive health off (Cluster API's drop-in) a counted request's 429
// is client-go's alone, as before: it waits out the Retry-After, sends the
// request again, and it succeeds.
func TestThrottledWithPassiveHealthOffIsClientGos(t *testing.T) {
	srv := newGrayServer(t)
	_, _, cs := grayPoolWith(t, srv, DialerOptions{Requests: RequestOptions{DisablePassiveHealth: true}})
	if err := getCM(context.Background(), cs, "busy-passive"); err != nil {
		t.Fatalf("passive health off, a read answered 429: %v, want client-go's retry answered", err)
	}
	if n := srv.count("busy-passive"); n != 2 {
		t.Fatalf("sent %d times, want twice (the 429, then client-go's retry)", n)
	}
}

// Client-go's own retries running out on 429s: Requeue requeues after the
// server's Retry-After instead of returning the error.
func TestRequeueHonoursRetryAfterOfA429(t *testing.T) {
	err := apierrors.NewTooManyRequests("slow down", 7)
	if res, rerr := Requeue(err); rerr != nil || res.RequeueAfter != 7*time.Second {
		t.Fatalf("Requeue(429, Retry-After 7) = %+v, %v", res, rerr)
	}
	if _, rerr := Requeue(apierrors.NewTooManyRequests("no hint", 0)); rerr == nil {
		t.Fatal("a 429 with no Retry-After was swallowed")
	}
}
