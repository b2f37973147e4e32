package kube

import (
	"context"
	"sync"

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
	calls    []string // "remove <key>", "probe <key>"
	events   chan pool.Event[client.ObjectKey]
}

func newFakePool() *fakePool {
	return &fakePool{clusters: map[client.ObjectKey]*Cluster{}, states: map[client.ObjectKey]pool.ClusterState{},
		reports: map[client.ObjectKey][]error{},
		events:  make(chan pool.Event[client.ObjectKey])}
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
	f.calls = append(f.calls, "remove "+key.String())
}

func (f *fakePool) Probe(key client.ObjectKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "probe "+key.String())
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
