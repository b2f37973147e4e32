package shard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/pool"
)

// owning returns a Sharder "a" (not started) that owns its share of keys
// among members a and b until the test ends.
func owning(t *testing.T, keys []client.ObjectKey) *Sharder {
	t.Helper()
	s, err := New(fake.NewClientBuilder().Build(), Options{Identity: "a", Clusters: noKeys})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.own = newOwnership("a", time.Hour, time.Second)
	r := round{start: now.Add(-2 * time.Second), listSent: now.Add(-2 * time.Second), end: now.Add(-2 * time.Second),
		leases: []leaseInfo{{holder: "a", version: "1", duration: time.Hour}, {holder: "b", version: "1", duration: time.Hour}},
		keys:   keys, keysOK: true}
	complete(s.own, r)
	s.own.advance(now)
	return s
}

func split(s *Sharder, keys []client.ObjectKey) (mine, theirs client.ObjectKey) {
	for _, k := range keys {
		if s.Owns(k) {
			mine = k
		} else {
			theirs = k
		}
	}
	return mine, theirs
}

func TestGetterRefusesClustersOwnedElsewhere(t *testing.T) {
	keys := testKeys(20)
	s := owning(t, keys)
	mine, theirs := split(s, keys)
	if mine.Name == "" || theirs.Name == "" {
		t.Fatal("want keys on both replicas")
	}
	p, err := pool.New(func(_ context.Context, k client.ObjectKey) (string, error) { return "client of " + k.Name, nil },
		pool.Options[client.ObjectKey, string]{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	g := NewGetter(s, p)
	if c, err := g.Get(context.Background(), mine); err != nil || c != "client of "+mine.Name {
		t.Fatalf("owned: %q, %v", c, err)
	}
	_, err = g.Get(context.Background(), theirs)
	if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), theirs.String()) {
		t.Fatalf("not owned: %v, want ErrNotOwned naming %v", err, theirs)
	}
	if _, ok := pool.RetryAfter(err); ok {
		t.Fatal("ErrNotOwned must carry no RetryAfter")
	}
	if len(p.Keys()) != 1 {
		t.Fatalf("the pool dialed %v; only the owned cluster may be dialed", p.Keys())
	}
}

func TestPredicateDropsClustersOwnedElsewhere(t *testing.T) {
	keys := testKeys(20)
	s := owning(t, keys)
	mine, theirs := split(s, keys)
	pred := s.Predicate(ObjectKeyOf)
	obj := func(k client.ObjectKey) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
	}
	if !pred.Create(event.CreateEvent{Object: obj(mine)}) || !pred.Update(event.UpdateEvent{ObjectOld: obj(mine), ObjectNew: obj(mine)}) ||
		!pred.Delete(event.DeleteEvent{Object: obj(mine)}) || !pred.Generic(event.GenericEvent{Object: obj(mine)}) {
		t.Fatal("dropped an event of an owned cluster")
	}
	if pred.Create(event.CreateEvent{Object: obj(theirs)}) || pred.Update(event.UpdateEvent{ObjectOld: obj(theirs), ObjectNew: obj(theirs)}) ||
		pred.Delete(event.DeleteEvent{Object: obj(theirs)}) || pred.Generic(event.GenericEvent{Object: obj(theirs)}) {
		t.Fatal("passed an event of a cluster owned elsewhere")
	}
}

func TestSourceEnqueuesGainedClustersInOrder(t *testing.T) {
	s := owning(t, testKeys(1))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Source(s, ClusterRequest).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	keys := testKeys(3)
	s.publish([]Event{{Type: Gained, Key: keys[0]}, {Type: Lost, Key: keys[1]}, {Type: Gained, Key: keys[2]}})
	for _, want := range []client.ObjectKey{keys[0], keys[2]} {
		r, _ := q.Get()
		if r.NamespacedName != want {
			t.Fatalf("enqueued %v, want %v", r.NamespacedName, want)
		}
		q.Done(r)
	}
}

func TestSubscribersSeeEveryEventInOrder(t *testing.T) {
	var h hub
	ctx, cancel := context.WithCancel(context.Background())
	a, b := h.subscribe(ctx), h.subscribe(ctx)
	keys := testKeys(50)
	for _, k := range keys { // a burst nobody reads yet: nothing is dropped
		h.publish([]Event{{Type: Gained, Key: k}, {Type: Lost, Key: k}})
	}
	var wg sync.WaitGroup
	for _, ch := range []<-chan Event{a, b} {
		wg.Go(func() {
			for _, k := range keys {
				for _, typ := range []EventType{Gained, Lost} {
					if ev := <-ch; ev.Key != k || ev.Type != typ {
						t.Errorf("got %v %v, want %v %v", ev.Type, ev.Key, typ, k)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	cancel()
	for _, ch := range []<-chan Event{a, b} {
		for range ch { // closed once ctx is done
		}
	}
}

// connectingPool records what PoolOf does to a pool with Connect.
type connectingPool struct {
	mu        sync.Mutex
	connected []client.ObjectKey
	gets      int
}

func (p *connectingPool) Get(context.Context, client.ObjectKey) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	return "", nil
}
func (p *connectingPool) Remove(client.ObjectKey) {}
func (p *connectingPool) Connect(k client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connected = append(p.connected, k)
}

// Warm calls Connect if the pool has it, and otherwise starts the dial
// with a short Get, which returns although the dial has not.
func TestPoolOfWarmsWithConnectOrAShortGet(t *testing.T) {
	k := testKeys(1)[0]
	cp := &connectingPool{}
	PoolOf[string](cp).Warm(k)
	if len(cp.connected) != 1 || cp.gets != 0 {
		t.Fatalf("with Connect: connected %v, gets %d", cp.connected, cp.gets)
	}
	for _, hide := range []bool{false, true} {
		connected := make(chan struct{})
		p, err := pool.New(func(context.Context, client.ObjectKey) (string, error) {
			<-connected // slower than the 1 ms Get
			return "c", nil
		}, pool.Options[client.ObjectKey, string]{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		events := p.Subscribe(ctx)
		var cl ClientPool[string] = p
		if hide {
			cl = struct{ ClientPool[string] }{p} // no Connect method: a short Get
		}
		PoolOf(cl).Warm(k) // returns although the dial has not
		close(connected)
		for ev := range events {
			if ev.Type == pool.Connected && ev.Key == k {
				break
			}
		}
		PoolOf(cl).Remove(k)
		if _, ok := p.Peek(k); ok {
			t.Fatal("Remove left the client")
		}
	}
}
