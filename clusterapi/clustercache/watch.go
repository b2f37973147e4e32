package clustercache

import (
	"context"
	"errors"
	"fmt"
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
// ctx), and a failed Watch is forgotten, so the next call tries again.
type watches struct {
	mu        sync.Mutex
	byCluster map[*kube.Cluster]map[string]*watchCall
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
		ws.byCluster = map[*kube.Cluster]map[string]*watchCall{}
	}
	set := ws.byCluster[c]
	if set == nil {
		set = map[string]*watchCall{}
		ws.byCluster[c] = set
	}
	call, found := set[name]
	if !found {
		call = &watchCall{done: make(chan struct{})}
		set[name] = call
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
	return ws.run(c, w, call)
}

// run calls w.Watch on c's cache and records its outcome in call; a failure
// (or a panic, which goes on) is forgotten so that a later call retries.
func (ws *watches) run(c *kube.Cluster, w Watcher, call *watchCall) error {
	panicked := true
	defer func() {
		if panicked {
			call.err = fmt.Errorf("clustercache: watch %s for %T panicked", w.Name(), w.Object())
		}
		if call.err != nil {
			ws.mu.Lock()
			if set := ws.byCluster[c]; set != nil && set[w.Name()] == call {
				delete(set, w.Name())
			}
			ws.mu.Unlock()
		}
		close(call.done)
	}()
	if err := w.Watch(c.Cache); err != nil {
		call.err = fmt.Errorf("clustercache: error creating watch %s for %T: %w", w.Name(), w.Object(), err)
	}
	panicked = false
	return call.err
}

// forget drops what was recorded for c: its connection closed.
func (ws *watches) forget(c *kube.Cluster) {
	ws.mu.Lock()
	delete(ws.byCluster, c)
	ws.mu.Unlock()
}
