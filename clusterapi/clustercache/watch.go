package clustercache

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"

	"github.com/clusterpool/clusterpool/kube"
)

// watches remembers, per connection (*kube.Cluster), the watches added to
// its cache, by Watcher name, as ClusterCache's accessor does: a name is
// added once per connection, and forgotten with the connection (forget,
// called from the pool's OnClose), so that a controller calling Watch again
// after a reconnect adds its watch to the new cache.
//
// The Watcher's own Watch runs without watches' lock held: concurrent
// callers with the same name wait for the first one's outcome (or their
// ctx), and a failed Watch is forgotten, so the next call tries again. It
// gets the connection's cache bounded by the connection (connCache), so
// that no watch outlives its connection.
type watches struct {
	mu        sync.Mutex
	byCluster map[*kube.Cluster]*connWatches
}

// connWatches are one connection's watches, by name, and its context,
// canceled when forget drops them.
type connWatches struct {
	calls  map[string]*watchCall
	ctx    context.Context
	cancel context.CancelFunc
}

// watchCall is one Watch of a name on one connection: done is closed once
// err is set.
type watchCall struct {
	done chan struct{}
	err  error
}

// add starts w on c's cache unless a watch of its name was added (or is
// being added) on c. current reports whether c is still the pool's client
// of its cluster; if not, what add recorded for c is forgotten.
func (ws *watches) add(ctx context.Context, c *kube.Cluster, w Watcher, current func() bool) error {
	name := w.Name()
	if name == "" {
		return errors.New("clustercache: Watcher.Name() must not be empty")
	}
	ws.mu.Lock()
	if ws.byCluster == nil {
		ws.byCluster = map[*kube.Cluster]*connWatches{}
	}
	conn := ws.byCluster[c]
	if conn == nil {
		cctx, cancel := context.WithCancel(context.Background())
		conn = &connWatches{calls: map[string]*watchCall{}, ctx: cctx, cancel: cancel}
		ws.byCluster[c] = conn
	}
	call, found := conn.calls[name]
	if !found {
		call = &watchCall{done: make(chan struct{})}
		conn.calls[name] = call
	}
	ws.mu.Unlock()
	// The pool swaps a client out before it calls OnClose: if c is still
	// current here, forget will run after the insertion above.
	if !current() {
		ws.forget(c)
	}
	if found {
		select {
		case <-call.done:
			return call.err
		case <-ctx.Done():
			return fmt.Errorf("clustercache: waiting for watch %s: %w", name, ctx.Err())
		}
	}
	return ws.run(c, w, call, conn.ctx)
}

// run calls w.Watch on c's cache, bounded by conn (the connection's
// context), and records its outcome in call; a failure (or a panic, which
// goes on) is forgotten so that a later call retries. The goroutines the
// watch starts (a source.Kind's, its informer's) carry the pprof label
// kube.GoroutineLabel with the cluster's key, as the Dialer's do.
func (ws *watches) run(c *kube.Cluster, w Watcher, call *watchCall, conn context.Context) error {
	panicked := true
	defer func() {
		if panicked {
			call.err = fmt.Errorf("clustercache: watch %s for %T panicked", w.Name(), w.Object())
		}
		if call.err != nil {
			ws.mu.Lock()
			if cw := ws.byCluster[c]; cw != nil && cw.calls[w.Name()] == call {
				delete(cw.calls, w.Name())
			}
			ws.mu.Unlock()
		}
		close(call.done)
	}()
	var err error
	pprof.Do(conn, pprof.Labels(kube.GoroutineLabel, c.Key.String()), func(context.Context) {
		err = w.Watch(connCache{Cache: c.Cache, conn: conn})
	})
	if err != nil {
		call.err = fmt.Errorf("clustercache: error creating watch %s for %T: %w", w.Name(), w.Object(), err)
	}
	panicked = false
	return call.err
}

// forget drops what was recorded for c, whose connection closed, and ends
// its watches' waits.
func (ws *watches) forget(c *kube.Cluster) {
	ws.mu.Lock()
	conn := ws.byCluster[c]
	delete(ws.byCluster, c)
	ws.mu.Unlock()
	if conn != nil {
		conn.cancel()
	}
}
