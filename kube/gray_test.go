package kube

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// grayServer is an apiserver's stand-in on 127.0.0.1 (TLS) for the gray
// failures of issue 43: GET of ConfigMap <name> in "default" answers by
// name, and counts the requests of each name.
//   - throttled: 429 with Retry-After: 1 to its first 3 requests, then 200;
//   - slow: 200 after 300 ms;
//   - half: 500 to the requests i with i%5 in {0, 1, 3} (60 %, never 3 in a
//     row), else 200;
//   - fifth: 500 to 20 % of the requests, three in a row out of every 15,
//     else 200;
//   - anything else: 200.
type grayServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int
}

func newGrayServer(t *testing.T) *grayServer {
	t.Helper()
	s := &grayServer{seen: map[string]int{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *grayServer) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[name]
}

func (s *grayServer) serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/default/configmaps/")
	if !ok {
		w.WriteHeader(http.StatusOK) // /readyz
		return
	}
	s.mu.Lock()
	i := s.seen[name]
	s.seen[name]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := http.StatusOK
	switch {
	case name == "throttled" && i < 3:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":1}}`)
		return
	case name == "slow":
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			// Abort: a 200 written after the client's cancel could reach
			// it before the cancel does (see promises_test's /hang).
			panic(http.ErrAbortHandler)
		}
	case name == "half" && (i%5 == 0 || i%5 == 1 || i%5 == 3), name == "fifth" && i%15 >= 12:
		status = http.StatusInternalServerError
	}
	w.WriteHeader(status)
	if status != http.StatusOK {
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":%d}`, status)
		return
	}
	fmt.Fprintf(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default"}}`, name)
}

// grayPool returns a pool of kube.NewPool (default options) whose one
// cluster is srv, the connected Cluster and a clientset on it.
func grayPool(t *testing.T, srv *grayServer) (*pool.Pool[client.ObjectKey, *Cluster], *Cluster, kubernetes.Interface) {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	src := ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, nil
	})
	p := newPoolWith(t, src, DialerOptions{}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	c, err := p.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "gray"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfigAndClient(c.RESTConfig(), c.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	return p, c, cs
}

func getCM(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	return err
}

// stillServing fails unless the cluster's breaker is closed with no
// failure counted and the pool still holds c.
func stillServing(t *testing.T, p *pool.Pool[client.ObjectKey, *Cluster], c *Cluster, what string) {
	t.Helper()
	s := p.State(c.Key)
	held, _ := p.Peek(c.Key)
	if s.Breaker != breaker.StateClosed || s.WindowFailures != 0 || s.ConsecutiveFailures != 0 || held != c {
		t.Fatalf("%s: %+v (same client held: %v), want closed, nothing counted, the client kept", what, s, held == c)
	}
}

// A busy cluster is not cut off (issue 43): three answers of 429 with
// Retry-After in a row are back-pressure. client-go waits each one out and
// sends the request again, which the guard admits, and it succeeds; a
// request that begins while a Retry-After runs is not sent: it fails with
// ErrThrottled, and Requeue requeues it after the rest of the Retry-After.
// The breaker counts nothing and the pool keeps the client.
func TestThrottledClusterIsNotCutOff(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPool(t, srv)
	done := make(chan error, 1)
	go func() { done <- getCM(context.Background(), cs, "throttled") }()
	var err error
	waitUntil(t, 10*time.Second, "a request rejected within a Retry-After", func() bool {
		err = getCM(context.Background(), cs, "other")
		return err != nil
	})
	res, rerr := Requeue(err)
	if !errors.Is(err, ErrThrottled) || rerr != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Fatalf("within a Retry-After: %v; Requeue = %+v, %v; want ErrThrottled, a requeue within the 1s Retry-After", err, res, rerr)
	}
	if err := <-done; err != nil {
		t.Fatalf("the throttled request, after client-go's retries: %v", err)
	}
	if n := srv.count("throttled"); n != 4 {
		t.Fatalf("the throttled request was sent %d times, want 4 (three 429s, then 200)", n)
	}
	stillServing(t, p, c, "after three 429s in a row")
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

// The caller's deadline is the caller's (issue 43): callers that give up
// after 50 ms on a cluster answering in 300 ms do not open its breaker,
// nor count as its failures.
func TestCallersGivingUpDoNotOpenTheBreaker(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPool(t, srv)
	for range 25 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := getCM(ctx, cs, "slow")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a caller giving up after 50 ms: %v, want its DeadlineExceeded", err)
		}
	}
	stillServing(t, p, c, "after 25 callers gave up")
	if err := getCM(context.Background(), cs, "slow"); err != nil {
		t.Fatalf("a caller that waits: %v", err)
	}
}

// A cluster answering 500 to 20 % of its requests is judged by that
// share, not by the three that come in a row now and then: its breaker
// never opens.
func TestTwentyPercentErrorsNeverOpen(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPool(t, srv)
	for range 200 {
		if err := getCM(context.Background(), cs, "fifth"); err != nil && !apierrors.IsInternalError(err) {
			t.Fatalf("20%% errors: %v", err)
		}
	}
	s := p.State(c.Key)
	if held, _ := p.Peek(c.Key); s.Breaker != breaker.StateClosed || s.WindowFailures == 0 || held != c {
		t.Fatalf("after 200 requests at 20%% errors: %+v, want closed, failures counted, the client kept", s)
	}
}

// A half-broken cluster is found (issue 43): when 60 % of its answers are
// 500, interleaved and never three in a row, its breaker opens once its
// window holds 20 requests, and later requests fail at once with
// ErrCircuitOpen.
func TestHalfBrokenClusterIsFound(t *testing.T) {
	srv := newGrayServer(t)
	p, c, cs := grayPool(t, srv)
	var err error
	n := 0
	for n = 1; n <= 40; n++ {
		if err = getCM(context.Background(), cs, "half"); errors.Is(err, pool.ErrCircuitOpen) {
			break
		}
	}
	if !errors.Is(err, pool.ErrCircuitOpen) || p.State(c.Key).Breaker == breaker.StateClosed {
		t.Fatalf("60%% errors, never 3 in a row: after %d requests %v, %+v; want the breaker open", n, err, p.State(c.Key))
	}
	if sent := srv.count("half"); sent > 25 {
		t.Fatalf("found after %d requests, want within the window's first 20 or so", sent)
	}
}
