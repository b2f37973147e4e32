package shard

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// recordingPool is a Pool that remembers which clusters it holds.
type recordingPool struct {
	mu   sync.Mutex
	held map[client.ObjectKey]bool
}

func (p *recordingPool) Warm(k client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[client.ObjectKey]bool{}
	}
	p.held[k] = true
}

func (p *recordingPool) Remove(k client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, k)
}

func (p *recordingPool) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// loopReplica is a Sharder on a shared fake apiserver whose requests hang
// while cut is set.
type loopReplica struct {
	s    *Sharder
	cut  atomic.Bool
	pool recordingPool
	stop context.CancelFunc
	done chan error
}

func startLoopReplica(t *testing.T, base client.WithWatch, name string, keys []client.ObjectKey) *loopReplica {
	r := &loopReplica{done: make(chan error, 1)}
	hold := func(ctx context.Context) error {
		if r.cut.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if err := hold(ctx); err != nil {
				return err
			}
			return c.Get(ctx, k, o, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			if err := hold(ctx); err != nil {
				return err
			}
			return c.List(ctx, l, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := hold(ctx); err != nil {
				return err
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if err := hold(ctx); err != nil {
				return err
			}
			return c.Update(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if err := hold(ctx); err != nil {
				return err
			}
			return c.Delete(ctx, o, opts...)
		},
	})
	s, err := New(c, Options{Identity: name, Namespace: "ns", LeaseDuration: tD, RenewDeadline: tRD, RenewInterval: simRI,
		Clusters: func(context.Context) ([]client.ObjectKey, error) { return keys, nil }, Pool: &r.pool})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- s.Start(ctx) }()
	return r
}

func (r *loopReplica) owned(keys []client.ObjectKey) int {
	n := 0
	for _, k := range keys {
		if r.s.Owns(k) {
			n++
		}
	}
	return n
}

// The Sharder's loop in virtual time: two replicas split the keys after the
// hand-over; a replica whose requests hang stops owning (and empties its
// pool) by RenewDeadline, and the other owns everything LeaseDuration
// after it last saw the cut replica's Lease change; a graceful stop deletes
// the Lease, a stop while cut off leaves it.
func TestSharderLoopInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := fake.NewClientBuilder().Build()
		keys := testKeys(30)
		a := startLoopReplica(t, base, "a", keys)
		b := startLoopReplica(t, base, "b", keys)

		time.Sleep(tD - 100*time.Millisecond)
		synctest.Wait()
		if a.owned(keys)+b.owned(keys) != 0 {
			t.Fatal("owned before the hand-over delay")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		na, nb := a.owned(keys), b.owned(keys)
		if na == 0 || nb == 0 || na+nb != len(keys) || a.pool.count() != na || b.pool.count() != nb {
			t.Fatalf("steady: a owns %d (pool %d), b owns %d (pool %d), of %d", na, a.pool.count(), nb, b.pool.count(), len(keys))
		}

		b.cut.Store(true)
		time.Sleep(tRD)
		synctest.Wait()
		if n := b.owned(keys); n != 0 || b.pool.count() != 0 {
			t.Fatalf("cut off for RenewDeadline: b owns %d, its pool holds %d", n, b.pool.count())
		}
		if a.owned(keys) != na {
			t.Fatal("a took b's clusters before b's Lease expired")
		}
		time.Sleep(tD - tRD + 2*simRI)
		synctest.Wait()
		if n := a.owned(keys); n != len(keys) || a.pool.count() != len(keys) {
			t.Fatalf("after b's Lease expired: a owns %d, pool %d", n, a.pool.count())
		}

		a.stop()
		if err := <-a.done; err != nil {
			t.Fatalf("a: %v", err)
		}
		if a.owned(keys) != 0 || a.pool.count() != 0 {
			t.Fatal("a still owns after Start returned")
		}
		b.stop()
		if err := <-b.done; err == nil {
			t.Fatal("b deleted its Lease while cut off")
		}
		var l coordinationv1.Lease
		if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "default-a"}, &l); !apierrors.IsNotFound(err) {
			t.Fatalf("a's Lease after a graceful stop: %v", err)
		}
		if err := base.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "default-b"}, &l); err != nil {
			t.Fatalf("b's Lease should stay behind: %v", err)
		}
	})
}
