package bench

import (
	"context"
	"errors"
	"sync"
)

// ErrClusterLocked is CCT's answer to a caller that asks for a client while
// another one is creating it. Cluster API's callers requeue after a minute.
var ErrClusterLocked = errors.New("cluster is locked already")

// CCT is a faithful model of ClusterCacheTracker.getClusterAccessor in
// Cluster API v1.8: read the accessor map under an RWMutex; on a miss take
// the cluster's keyed lock with TryLock (failing with ErrClusterLocked when
// it is held), look again, and create the client inside the caller's own
// goroutine, holding the lock for as long as the dial takes. A failed dial
// is not remembered: the next lock winner dials again.
type CCT[K comparable, C any] struct {
	dial func(ctx context.Context, key K) (C, error)

	mu        sync.RWMutex // clusterAccessorsLock
	accessors map[K]C

	locks keyedMutex[K] // clusterLock
}

// NewCCT returns a tracker that creates clients with dial.
func NewCCT[K comparable, C any](dial func(ctx context.Context, key K) (C, error)) *CCT[K, C] {
	return &CCT[K, C]{dial: dial, accessors: map[K]C{}, locks: keyedMutex[K]{locks: map[K]struct{}{}}}
}

// Get returns key's client, creating it in the calling goroutine if needed.
func (t *CCT[K, C]) Get(ctx context.Context, key K) (C, error) {
	if c, ok := t.load(key); ok {
		return c, nil
	}
	if !t.locks.TryLock(key) {
		var zero C
		return zero, ErrClusterLocked
	}
	defer t.locks.Unlock(key)
	if c, ok := t.load(key); ok { // created while we took the lock
		return c, nil
	}
	c, err := t.dial(ctx, key)
	if err != nil {
		return c, err
	}
	t.mu.Lock()
	t.accessors[key] = c
	t.mu.Unlock()
	return c, nil
}

// Delete drops key's client, as CCT's health check does after too many
// failed probes: the next Get dials again.
func (t *CCT[K, C]) Delete(key K) {
	t.mu.Lock()
	delete(t.accessors, key)
	t.mu.Unlock()
}

// Len returns the number of clients held.
func (t *CCT[K, C]) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.accessors)
}

func (t *CCT[K, C]) load(key K) (C, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c, ok := t.accessors[key]
	return c, ok
}

// keyedMutex is CCT's keyedMutex: one global mutex guarding a set of held
// keys; TryLock fails if the key is held.
type keyedMutex[K comparable] struct {
	mu    sync.Mutex
	locks map[K]struct{}
}

// TryLock takes key's lock if it is free.
func (k *keyedMutex[K]) TryLock(key K) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, held := k.locks[key]; held {
		return false
	}
	k.locks[key] = struct{}{}
	return true
}

// Unlock releases key's lock.
func (k *keyedMutex[K]) Unlock(key K) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.locks, key)
}
