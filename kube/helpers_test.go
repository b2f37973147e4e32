package kube

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// countingSource counts Config calls: one per dial.
type countingSource struct {
	ConfigSource
	n atomic.Int32
}

func (c *countingSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	c.n.Add(1)
	return c.ConfigSource.Config(ctx, key)
}

// newTestPool returns a pool over the management cluster's Secrets, closed
// at the end of the test.
func newTestPool(t *testing.T, dopts DialerOptions, opts pool.Options[client.ObjectKey, *Cluster]) (*pool.Pool[client.ObjectKey, *Cluster], *countingSource) {
	t.Helper()
	src := &countingSource{ConfigSource: SecretSource{Reader: mgmt}}
	return newPoolWith(t, src, dopts, opts), src
}

// newPoolWith returns a pool dialing with src, closed at the end of the
// test.
func newPoolWith(t *testing.T, src ConfigSource, dopts DialerOptions, opts pool.Options[client.ObjectKey, *Cluster]) *pool.Pool[client.ObjectKey, *Cluster] {
	t.Helper()
	d, err := NewDialer(src, dopts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// transportSource hands out src's configs with wrap around their transport.
type transportSource struct {
	ConfigSource
	wrap func(http.RoundTripper) http.RoundTripper
}

func (s transportSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	cfg, rev, err := s.ConfigSource.Config(ctx, key)
	if err != nil {
		return nil, "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(s.wrap)
	return cfg, rev, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// getEventually retries Get until it returns a client or the test's
// deadline (30s) passes; waits are bounded by the pool.
func getEventually(t *testing.T, p *pool.Pool[client.ObjectKey, *Cluster], key client.ObjectKey) *Cluster {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := p.Get(ctx, key)
		cancel()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get(%s): %v", key, err)
		}
		if d, ok := pool.RetryAfter(err); ok {
			time.Sleep(min(d, 200*time.Millisecond))
		} else if !errors.Is(err, pool.ErrDialFailed) {
			t.Fatalf("Get(%s): %v", key, err)
		}
	}
}

// eventLog collects a pool's events and lets a test wait for one.
type eventLog struct {
	mu   sync.Mutex
	got  []pool.Event[client.ObjectKey]
	more chan struct{}
}

func watchEvents(t *testing.T, p *pool.Pool[client.ObjectKey, *Cluster]) *eventLog {
	ctx, cancel := context.WithCancel(context.Background())
	ch := p.Subscribe(ctx)
	l := &eventLog{more: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			l.mu.Lock()
			l.got = append(l.got, ev)
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// waitFor blocks until an event for key that matches arrives after index
// from, and returns the index after it. Events of one key may be
// coalesced: match on the state an event carries, not only on its type.
func (l *eventLog) waitFor(t *testing.T, from int, key client.ObjectKey, match func(pool.Event[client.ObjectKey]) bool, within time.Duration) int {
	t.Helper()
	timeout := time.After(within)
	for {
		l.mu.Lock()
		for i := from; i < len(l.got); i++ {
			if l.got[i].Key == key && match(l.got[i]) {
				l.mu.Unlock()
				return i + 1
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-timeout:
			t.Fatalf("no matching event for %s within %v; got %+v", key, within, l.snapshot())
		}
	}
}

func (l *eventLog) snapshot() []pool.Event[client.ObjectKey] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]pool.Event[client.ObjectKey](nil), l.got...)
}

// connected matches an event after which the cluster is (or is not)
// connected.
func connected(want bool) func(pool.Event[client.ObjectKey]) bool {
	return func(ev pool.Event[client.ObjectKey]) bool { return ev.Connected == want }
}

// workProxy starts a fault proxy in front of the workload apiserver, closed
// at the end of the test.
func workProxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	proxy, err := faultproxy.New(workAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return proxy
}

// startProber runs a Prober of p until the end of the test.
func startProber(t *testing.T, p *pool.Pool[client.ObjectKey, *Cluster], opts ProberOptions) {
	t.Helper()
	pr, err := NewProber(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
