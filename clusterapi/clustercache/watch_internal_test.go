package clustercache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/kube"
)

// countingWatcher counts its Watch calls; the first fail ones fail, and
// each waits for release if set.
type countingWatcher struct {
	calls   atomic.Int32
	fail    int32
	release chan struct{}
	got     connCache // the last cache Watch got
}

func (w *countingWatcher) Name() string          { return "w" }
func (w *countingWatcher) Object() client.Object { return nil }
func (w *countingWatcher) Watch(c ctrlcache.Cache) error {
	w.got, _ = c.(connCache)
	n := w.calls.Add(1)
	if w.release != nil {
		<-w.release
	}
	if n <= w.fail {
		return errors.New("boom")
	}
	return nil
}

func always() bool { return true }

// TestWatchesDedupe: one Watch per name and connection, also for callers
// that arrive while the first one runs (they wait for its outcome); a
// failed Watch is tried again; another connection gets its own.
func TestWatchesDedupe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ws watches
		c1, c2 := &kube.Cluster{}, &kube.Cluster{}
		w := &countingWatcher{fail: 1, release: make(chan struct{})}
		ctx := context.Background()
		errs := make(chan error, 5)
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { errs <- ws.add(ctx, c1, w, always) })
		}
		synctest.Wait()  // all 5 in: one runs Watch, four wait for it
		close(w.release) // the first call fails: every caller of that round sees it
		wg.Wait()
		close(errs)
		for err := range errs {
			if err == nil {
				t.Fatal("a caller did not see the failure of the Watch it waited for")
			}
		}
		if n := w.calls.Load(); n != 1 {
			t.Fatalf("5 concurrent calls ran Watch %d times, want 1", n)
		}
		for range 3 {
			if err := ws.add(ctx, c1, w, always); err != nil {
				t.Fatal(err)
			}
		}
		if n := w.calls.Load(); n != 2 {
			t.Fatalf("Watch ran %d times, want 2 (the failure retried once)", n)
		}
		if err := ws.add(ctx, c2, w, always); err != nil || w.calls.Load() != 3 {
			t.Fatalf("another connection: err %v, %d calls, want 3", err, w.calls.Load())
		}
	})
}

// TestWatchesForget: a closed connection's watches are forgotten, and the
// cache each Watch got ends its waits, whether OnClose (forget) runs
// before or after add records them.
func TestWatchesForget(t *testing.T) {
	var ws watches
	c := &kube.Cluster{}
	w := &countingWatcher{}
	if err := ws.add(context.Background(), c, w, always); err != nil {
		t.Fatal(err)
	}
	if w.got.conn.Err() != nil {
		t.Fatal("the cache of an open connection's watch is bounded already")
	}
	ws.forget(c)
	if n := len(ws.byCluster); n != 0 || w.got.conn.Err() == nil {
		t.Fatalf("after forget: %d connections remembered (want 0), the watch's cache bounded: %v", n, w.got.conn.Err() != nil)
	}
	// The connection closed between Peek and add: add forgets it itself.
	w2 := &countingWatcher{}
	if err := ws.add(context.Background(), c, w2, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if n := len(ws.byCluster); n != 0 || w2.got.conn.Err() == nil {
		t.Fatalf("a closed connection: %d connections remembered (want 0), the watch's cache bounded: %v", n, w2.got.conn.Err() != nil)
	}
}
