package kube

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// fakePool is a ClusterPool for unit tests: a map of connected clusters and
// states, and a record of what was asked of it.
type fakePool struct {
	mu       sync.Mutex
	clusters map[client.ObjectKey]*Cluster
	states   map[client.ObjectKey]pool.ClusterState
	reports  map[client.ObjectKey][]error
	calls    []string // "remove <key>", "probe <key>", "connect <key>", "redial <key>"
	events   chan pool.Event[client.ObjectKey]
	called   chan struct{} // signalled (never blocking) after each call is recorded
}

func newFakePool() *fakePool {
	return &fakePool{clusters: map[client.ObjectKey]*Cluster{}, states: map[client.ObjectKey]pool.ClusterState{},
		reports: map[client.ObjectKey][]error{},
		events:  make(chan pool.Event[client.ObjectKey]), called: make(chan struct{}, 1)}
}

func (f *fakePool) connect(c *Cluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[c.Key] = c
	f.states[c.Key] = pool.ClusterState{Known: true, Connected: true}
}

func (f *fakePool) Peek(key client.ObjectKey) (*Cluster, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[key]
	return c, ok
}

func (f *fakePool) Keys() []client.ObjectKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []client.ObjectKey
	for k := range f.states {
		keys = append(keys, k)
	}
	return keys
}

func (f *fakePool) State(key client.ObjectKey) pool.ClusterState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states[key]
}

func (f *fakePool) Report(key client.ObjectKey, err error) {
	f.mu.Lock()
	f.reports[key] = append(f.reports[key], err)
	f.mu.Unlock()
}

func (f *fakePool) Remove(key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clusters, key)
	f.record("remove " + key.String())
}

func (f *fakePool) Probe(key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("probe " + key.String())
}

func (f *fakePool) Connect(key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("connect " + key.String())
}

func (f *fakePool) Redial(key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clusters, key)
	f.record("redial " + key.String())
}

// record appends a call; f.mu is held.
func (f *fakePool) record(call string) {
	f.calls = append(f.calls, call)
	select {
	case f.called <- struct{}{}:
	default:
	}
}

// waitCalls waits until the calls recorded since index from include want,
// and returns the index after it.
func (f *fakePool) waitCalls(t *testing.T, from int, want string, within time.Duration) int {
	t.Helper()
	timeout := time.After(within)
	for {
		calls := f.callLog()
		if i := slices.Index(calls[min(from, len(calls)):], want); i >= 0 {
			return from + i + 1
		}
		select {
		case <-f.called:
		case <-timeout:
			t.Fatalf("no call %q within %v; calls since %d: %v", want, within, from, calls[min(from, len(calls)):])
		}
	}
}

// Subscribe returns the fake's one event channel; it is never closed: the
// subscriber stops on ctx.
func (f *fakePool) Subscribe(context.Context) <-chan pool.Event[client.ObjectKey] { return f.events }

func (f *fakePool) SubscribeRequeue(ctx context.Context) <-chan pool.Event[client.ObjectKey] {
	return f.Subscribe(ctx)
}

func (f *fakePool) reportsOf(key client.ObjectKey) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.reports[key]...)
}

func (f *fakePool) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
