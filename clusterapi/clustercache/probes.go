package clustercache

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keySet is a set of cluster keys that one goroutine drains: adding never
// blocks, a key added twice before the drain is there once, and a key
// added while the drainer is busy is there at its next drain, so that
// nothing is lost. It takes no lock of its own: add stores the key before
// it signals ready, and take deletes each key it returns, so a key that
// take's walk missed is still stored, and ready is signalled after it.
type keySet struct {
	keys  sync.Map      // client.ObjectKey → struct{}
	ready chan struct{} // capacity 1: "keys may not be empty"
}

func newKeySet() *keySet { return &keySet{ready: make(chan struct{}, 1)} }

// add puts key in the set.
func (s *keySet) add(key client.ObjectKey) {
	s.keys.Store(key, struct{}{})
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// take empties the set of what it holds now, and returns that.
func (s *keySet) take() []client.ObjectKey {
	var out []client.ObjectKey
	s.keys.Range(func(k, _ any) bool {
		if _, ok := s.keys.LoadAndDelete(k); ok {
			out = append(out, k.(client.ObjectKey))
		}
		return true
	})
	return out
}

// probeListeners are the started GetClusterSource sources that watch for
// probe failures: each gets the keys of the probes made, in its keySet.
// The zero value has none; it takes no lock of its own.
type probeListeners struct {
	sets sync.Map // *keySet → struct{}
}

// listen adds s; the returned func removes it.
func (l *probeListeners) listen(s *keySet) (stop func()) {
	l.sets.Store(s, struct{}{})
	return func() { l.sets.Delete(s) }
}

// probed tells every listener that key was probed.
func (l *probeListeners) probed(key client.ObjectKey) {
	l.sets.Range(func(s, _ any) bool {
		s.(*keySet).add(key)
		return true
	})
}
