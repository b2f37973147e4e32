package grayproxy

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Switching modes while eight clients send requests over HTTP/2: every
// answer is one a mode gives (200, 500, 503, 429), none is lost or broken,
// and the proxy counts every request exactly once.
func TestSwitchUnderLoad(t *testing.T) {
	p := start(t)
	rt, err := rest.TransportFor(p.ClientConfig(apiserver(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctxT(t))
	var (
		sent  atomic.Uint64
		codes sync.Map // status → *atomic.Uint64
		wg    sync.WaitGroup
		bad   = make(chan string, 8)
	)
	for range 8 {
		wg.Go(func() { hammer(ctx, rt, p.URL(), &sent, &codes, bad) })
	}
	faults := []Fault{SlowFor(5 * time.Millisecond), ErrorRate(0.4, 3), Throttle(0.5, time.Second), PassFault(), SlowBy(2), Throttle(1, time.Second)}
	for range 3 {
		for _, f := range faults {
			target := p.Total().Received() + 20
			if err := p.Set(f); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return p.Total().Received() >= target || len(bad) > 0 })
		}
	}
	stop()
	wg.Wait()
	close(bad)
	for e := range bad {
		t.Fatalf("a request failed under switches: %s", e)
	}
	codes.Range(func(k, _ any) bool {
		switch k.(int) {
		case 200, 500, 503, 429:
		default:
			t.Errorf("status %d under switches", k)
		}
		return true
	})
	for _, m := range []Mode{Slow, Errors, Throttled} {
		if c := p.Counts(m); c.Received() < 20 {
			t.Errorf("%v received %d requests, want ≥ 20 per round", m, c.Received())
		}
	}
	if tot := p.Total(); tot.Received() < sent.Load() || tot.Received() > sent.Load()+8 {
		t.Fatalf("proxy received %d, clients had %d answered (+ up to 8 stopped)", tot.Received(), sent.Load())
	}
}

// hammer gets url's default namespace over rt until ctx ends, counting
// the answers in sent and codes by status; a request that fails goes to
// bad and ends it.
func hammer(ctx context.Context, rt http.RoundTripper, url string, sent *atomic.Uint64, codes *sync.Map, bad chan<- string) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/namespaces/default", nil)
		resp, err := rt.RoundTrip(req)
		if ctx.Err() != nil {
			return // the answer to a request the test stopped may be lost
		}
		sent.Add(1)
		if err != nil {
			bad <- err.Error()
			return
		}
		resp.Body.Close()
		n, _ := codes.LoadOrStore(resp.StatusCode, new(atomic.Uint64))
		n.(*atomic.Uint64).Add(1)
	}
}

// Close returns with requests in flight (a watch streaming and a get
// held by Slow), and both end.
func TestCloseWithRequestsInFlight(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := p.Set(SlowFor(time.Hour)); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- getRaw(t, cs) }()
	waitFor(t, func() bool { return p.Counts(Slow).Slowed == 1 })
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not return with requests in flight")
	}
	if err := <-held; err == nil {
		t.Fatal("the held get succeeded through a closed proxy")
	}
	for range w.ResultChan() { // ends: the stream is cut
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
