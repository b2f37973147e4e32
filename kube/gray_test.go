package kube

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// name, and counts the requests of each name and the connections opened.
//   - throttled: 429 with Retry-After: 1 to its first 3 requests, then 200;
//   - busy-*: 429 with Retry-After: 1 to the first request of each name,
//     then 200 (half of the answers 429);
//   - always: 429 with Retry-After: 30, every time;
//   - slow: 200 after 300 ms;
//   - half: 500 to the requests i with i%5 in {0, 1, 3} (60 %, never 3 in a
//     row), else 200;
//   - fifth: 500 to 20 % of the requests, three in a row out of every 15,
//     else 200;
//   - anything else: 200.
type grayServer struct {
	*httptest.Server
	conns atomic.Int64 // connections opened
	mu    sync.Mutex
	seen  map[string]int
}

func newGrayServer(t *testing.T) *grayServer {
	t.Helper()
	s := &grayServer{seen: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
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
	case name == "throttled" && i < 3, strings.HasPrefix(name, "busy-") && i == 0, name == "always":
		retry := 1
		if name == "always" {
			retry = 30
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":%d}}`, retry)
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
	return grayPoolWith(t, srv, DialerOptions{})
}

// grayPoolWith is grayPool with the Dialer's options dopts.
func grayPoolWith(t *testing.T, srv *grayServer, dopts DialerOptions) (*pool.Pool[client.ObjectKey, *Cluster], *Cluster, kubernetes.Interface) {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	src := ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, nil
	})
	p := newPoolWith(t, src, dopts, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
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
