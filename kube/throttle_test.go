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

// A busy cluster is not cut off (issue 43): three answers of 429 with
// Retry-After in a row are back-pressure on that request. client-go waits
// each one out and sends it again, which the guard admits, and it
// succeeds; a request that begins while a Retry-After runs is sent and
// answered. The breaker counts nothing and the pool keeps the client.
func TestThrottledClusterIsNotCutOff(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPool(t, srv)
	done := make(chan error, 1)
	go func() { done <- getCM(context.Background(), cs, "throttled") }()
	waitUntil(t, 10*time.Second, "the first 429", func() bool { return srv.count("throttled") > 0 })
	if err := getCM(context.Background(), cs, "other"); err != nil {
		t.Fatalf("a request within another's Retry-After: %v, want it sent and answered", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the throttled request, after client-go's retries: %v", err)
	}
	if n := srv.count("throttled"); n != 4 {
		t.Fatalf("the throttled request was sent %d times, want 4 (three 429s, then 200)", n)
	}
	if n := srv.count("other"); n != 1 {
		t.Fatalf("the other request reached the cluster %d times, want 1", n)
	}
	stillServing(t, p, c, "after three 429s in a row")
}

// The throttled class of issue 43 (half the answers 429 with Retry-After:
// 1) is reached by the requests the controller makes to it: workers each
// sending Gets in turn, every Get succeeds after client-go waits out its
// 429, at least 95 % of the attempts sent into the cluster's client (its
// retries included) reach the server, the breaker counts nothing and the
// client is kept. Several workers, because a 429 must not hold back the
// others' requests: a lone caller waits out its own Retry-After anyway.
func TestHalfThrottledClusterIsReached(t *testing.T) {
	const workers, gets = 4, 5
	srv := newGrayServer(t)
	p, c, _ := grayPool(t, srv)
	counting := &countingTransport{next: c.HTTPClient().Transport}
	cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), &http.Client{Transport: counting, Timeout: c.HTTPClient().Timeout})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*gets)
	for w := range workers {
		wg.Go(func() {
			for i := range gets {
				if err := getCM(context.Background(), cs, fmt.Sprintf("busy-%d-%d", w, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	var first error
	for err := range errs {
		if first == nil {
			first = err
		}
		failed++
	}
	reached := 0
	for w := range workers {
		for i := range gets {
			reached += srv.count(fmt.Sprintf("busy-%d-%d", w, i))
		}
	}
	made := int(counting.n.Load())
	t.Logf("%d of the %d requests made reached the cluster; %d Gets failed", reached, made, failed)
	if failed > 0 || made == 0 || float64(reached) < 0.95*float64(made) {
		t.Fatalf("half throttled: %d of %d requests reached the cluster, %d of %d Gets failed (first: %v); want >= 95 %% and none",
			reached, made, failed, workers*gets, first)
	}
	stillServing(t, p, c, "at half the answers 429")
}

// The same on a real apiserver behind the fault of the gray bench
// (internal/grayproxy's Throttle: half the answers, at random, 429 with
// Retry-After: 1): the controller's workers each read the cluster in turn;
// every read is answered (or, if its retries meet its RequestTimeout, ends
// with ErrThrottled), at least 95 % of the requests sent into the cluster's
// client reach the proxy (the Prober's rare /readyz reaches it too, which
// the bound tolerates), the breaker counts nothing and the client is kept.
func TestThrottledFaultClassIsReached(t *testing.T) {
	const gets = 3
	px := grayProxies(t, "throttled")
	p, clusters := grayFleet(t, px, DialerOptions{})
	c := clusters["throttled"]
	counting := &countingTransport{next: c.HTTPClient().Transport}
	cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), &http.Client{Transport: counting, Timeout: c.HTTPClient().Timeout})
	if err != nil {
		t.Fatal(err)
	}
	if err := px["throttled"].Set(grayproxy.Throttle(0.5, time.Second)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, slowWorkers*gets)
	for range slowWorkers {
		wg.Go(func() {
			for range gets {
				if err := getNS(cs); err != nil && !errors.Is(err, ErrThrottled) {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a read of the throttled cluster: %v, want answered or ErrThrottled", err)
	}
	got, made := px["throttled"].Counts(grayproxy.Throttled), counting.n.Load()
	t.Logf("%d of the %d requests made reached the cluster's proxy (%d answered 429)", got.Received(), made, got.Faulted)
	if got.Faulted == 0 || float64(got.Received()) < 0.95*float64(made) {
		t.Fatalf("50 %% throttled: %+v received of %d made; want >= 95 %% reached, some 429s", got, made)
	}
	stillServing(t, p, c.Cluster, "at half the answers 429, on a real apiserver")
}

// A request answered 429 every time, whose next Retry-After would outlast
// its RequestTimeout, ends at that answer with ErrThrottled: pool.RetryAfter
// gives the server's Retry-After and Requeue requeues after it, where
// client-go alone would have waited into the timeout and ended with a bare
// deadline error. Its earlier 429s were retried by client-go; nothing is
// counted against the cluster.
func TestAlwaysThrottledRequestRequeuesAfterRetryAfter(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPoolWith(t, srv, DialerOptions{RequestTimeout: 2500 * time.Millisecond})
	err := getCM(context.Background(), cs, "always")
	d, ok := pool.RetryAfter(err)
	if !errors.Is(err, ErrThrottled) || !ok || d <= 500*time.Millisecond || d > time.Second {
		t.Fatalf("answered 429 every time: %v (RetryAfter %v, %v); want ErrThrottled after the server's 1s", err, d, ok)
	}
	if res, rerr := Requeue(err); rerr != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Fatalf("Requeue = %+v, %v; want a requeue within the 1s Retry-After", res, rerr)
	}
	if n := srv.count("always"); n < 2 {
		t.Fatalf("sent %d times, want client-go's retries within the timeout", n)
	}
	stillServing(t, p, c, "after a request answered 429 every time")
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
