package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// statusServer answers /readyz with 200 and /status/<code> with code;
// /hang/ waits until the request or the server ends.
func statusServer(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
			n, _ := strconv.Atoi(code)
			w.WriteHeader(n)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/hang/") {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

// dialFake dials a Cluster of srv with a Dialer attached to a fake pool.
func dialFake(t *testing.T, srv *httptest.Server, ropts RequestOptions) (*Cluster, *fakePool) {
	t.Helper()
	d, err := NewDialer(ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return &rest.Config{Host: srv.URL}, nil
	}), DialerOptions{Requests: ropts})
	if err != nil {
		t.Fatal(err)
	}
	fp := newFakePool()
	d.pool.set(fp)
	c, err := d.Dial(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if got := fp.reportsOf(c.Key); len(got) != 0 {
		t.Fatalf("the dial's own requests were reported: %v", got)
	}
	return c, fp
}

func send(t *testing.T, c *Cluster, path string) error {
	t.Helper()
	resp, err := c.HTTPClient().Get(c.config.Host + path)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// 5xx answers and transport errors are failures; 4xx answers are the
// cluster working; a 429 (back-pressure) is not reported; nothing is
// reported after Stop.
func TestPassiveHealthVerdicts(t *testing.T) {
	srv := statusServer(t)
	c, fp := dialFake(t, srv, RequestOptions{})
	for _, tc := range []struct {
		code    int
		failure bool
	}{{200, false}, {404, false}, {409, false}, {403, false}, {500, true}, {503, true}, {429, false}} {
		n := len(fp.reportsOf(c.Key))
		if err := send(t, c, "/status/"+strconv.Itoa(tc.code)); err != nil {
			t.Fatal(err)
		}
		got := fp.reportsOf(c.Key)
		if tc.code == http.StatusTooManyRequests {
			if len(got) != n {
				t.Errorf("HTTP 429 reported %v", got[n:])
			}
			continue
		}
		if len(got) != n+1 {
			t.Fatalf("HTTP %d: %d reports, want one", tc.code, len(got)-n)
		}
		if last := got[len(got)-1]; (last != nil) != tc.failure {
			t.Errorf("HTTP %d reported %v; failure=%v wanted", tc.code, last, tc.failure)
		}
	}
	n := len(fp.reportsOf(c.Key))
	c.Stop()
	if err := send(t, c, "/status/200"); !errors.Is(err, ErrClusterStopped) {
		t.Fatalf("after Stop: %v, want ErrClusterStopped", err)
	}
	if got := fp.reportsOf(c.Key); len(got) != n {
		t.Errorf("reported after Stop: %v", got[n:])
	}
}

// Watches and the informers' requests hold no bulkhead slot and have no
// first-byte deadline; probes are not reported.
func TestExemptRequests(t *testing.T) {
	srv := statusServer(t)
	c, fp := dialFake(t, srv, RequestOptions{MaxInFlight: 1, MinFirstByte: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 3)
	for _, path := range []string{"/hang/api/v1/pods?watch=true", "/hang/api/v1/namespaces/a/pods/b/log"} {
		go func() { done <- send(t, c, path) }()
	}
	go func() { // an informer's list
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.config.Host+"/hang/api/v1/pods", nil)
		_, err := informerClient(c.HTTPClient()).Do(req)
		done <- err
	}()
	waitUntil(t, 10*time.Second, "3 exempt requests in flight", func() bool { n, _ := c.guard.InFlight(); return n == 3 })
	if err := send(t, c, "/status/200"); err != nil {
		t.Fatalf("counted request beside 3 exempt ones with a cap of 1: %v", err)
	}
	fp.mu.Lock()
	fp.reports = map[client.ObjectKey][]error{}
	fp.mu.Unlock()
	if err := c.Readyz(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fp.reportsOf(c.Key); len(got) != 0 {
		t.Errorf("a probe was reported: %v", got)
	}
	start := time.Now()
	err := send(t, c, "/hang/api/v1/namespaces/a/configmaps/b")
	if !errors.Is(err, ErrFirstByteTimeout) || time.Since(start) > 5*time.Second {
		t.Errorf("counted hanging request: %v after %v, want ErrFirstByteTimeout", err, time.Since(start))
	}
	if all, _ := c.guard.InFlight(); all != 3 {
		t.Errorf("in flight %d, want the 3 exempt requests, uncut", all)
	}
	c.Stop() // cancels them
	for range 3 {
		if err := <-done; !errors.Is(err, ErrClusterStopped) {
			t.Errorf("exempt request after Stop: %v, want ErrClusterStopped", err)
		}
	}
	if d, ok := pool.RetryAfter(err); ok {
		t.Errorf("ErrFirstByteTimeout has a RetryAfter (%v): it is a failure, not a rejection", d)
	}
}
