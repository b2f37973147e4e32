package clustercache

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/kube"
)

// proberPool is the pool as the Prober sees it: every call goes to the
// pool, and each probe's outcome is then handed to probed. The Prober
// reports every probe (Report: nil for a success), except an Unauthorized
// one, on which it replaces the client by a new dial with fresh
// credentials (Redial): a failed probe too.
type proberPool struct {
	kube.ClusterPool
	probed func(key client.ObjectKey, ok bool)
}

// Report feeds the probe's outcome to the pool, then to probed.
func (p proberPool) Report(key client.ObjectKey, err error) {
	p.ClusterPool.Report(key, err)
	p.probed(key, err == nil)
}

// Redial redials key after an Unauthorized probe, then tells probed.
func (p proberPool) Redial(key client.ObjectKey) {
	p.ClusterPool.Redial(key)
	p.probed(key, false)
}

// admissionPool is the pool as the admission controller sees it: it
// removes a cluster only when its Cluster is gone or filtered out, and
// removed is then told.
type admissionPool struct {
	kube.ClusterPool
	removed func(key client.ObjectKey)
}

// Remove removes key from the pool, then tells removed.
func (p admissionPool) Remove(key client.ObjectKey) {
	p.ClusterPool.Remove(key)
	p.removed(key)
}

// keySet is a set of cluster keys that one goroutine drains: adding never
// blocks, a key added twice before the drain is there once, and a key
// added while the drainer is busy is there at its next drain, so that
// nothing is lost.
type keySet struct {
	mu    sync.Mutex
	keys  map[client.ObjectKey]struct{}
	ready chan struct{} // capacity 1: "keys is not empty"
}

func newKeySet() *keySet {
	return &keySet{keys: map[client.ObjectKey]struct{}{}, ready: make(chan struct{}, 1)}
}

// add puts key in the set.
func (s *keySet) add(key client.ObjectKey) {
	s.mu.Lock()
	s.keys[key] = struct{}{}
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// take empties the set and returns what it held.
func (s *keySet) take() []client.ObjectKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]client.ObjectKey, 0, len(s.keys))
	for k := range s.keys {
		out = append(out, k)
	}
	clear(s.keys)
	return out
}

// probeListeners are the started GetClusterSource sources that watch for
// probe failures: each gets the keys of the probes made, in its keySet.
type probeListeners struct {
	mu   sync.Mutex
	sets map[*keySet]struct{}
}

// listen adds s; the returned func removes it.
func (l *probeListeners) listen(s *keySet) (stop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sets == nil {
		l.sets = map[*keySet]struct{}{}
	}
	l.sets[s] = struct{}{}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.sets, s)
	}
}

// probed tells every listener that key was probed.
func (l *probeListeners) probed(key client.ObjectKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.sets {
		s.add(key)
	}
}
