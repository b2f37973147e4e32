package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrAbandoned is matched by the error of Close or Shutdown when dialers
// did not return within the bound: their goroutines are left running (the
// pool cannot stop a dialer that ignores its context). Any client such a
// dialer returns later is passed to OnClose.
var ErrAbandoned = errors.New("pool: dialers abandoned")

// Close shuts the pool down as Shutdown does, waiting at most
// Options.DialTimeout for dialers to return: a Close never hangs on a
// dialer that ignores its context. Its error, if any, matches ErrAbandoned
// and names the clusters whose dialers were abandoned.
func (p *Pool[K, C]) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
	defer cancel()
	return p.Shutdown(ctx)
}

// Shutdown cancels every dial, queued or running, wakes every waiter with
// ErrClosed, stops every probe and subscription, waits until every dialer
// has returned or ctx is done, then passes every cached client to OnClose.
// Dialers still running when ctx is done are abandoned: their dials end as
// ErrClosed, and the returned error matches ErrAbandoned and names their
// clusters. Get after Shutdown returns ErrClosed. A second call waits for
// the first one (or its own ctx) and returns the same error.
func (p *Pool[K, C]) Shutdown(ctx context.Context) error {
	first := false
	p.shutdownOnce.Do(func() { first = true })
	if !first {
		select {
		case <-p.shutdownDone:
			return p.shutdownErr
		case <-ctx.Done():
			return fmt.Errorf("pool: shutdown: %w", ctx.Err())
		}
	}
	p.mu.Lock()
	p.closed.Store(true)
	p.mu.Unlock()
	p.cancel()
	queued, _ := p.closeLanes()
	for _, c := range queued {
		p.finish(c, result[C]{canceled: true})
	}
	p.entries.Range(func(_, v any) bool {
		e := v.(*entry[K, C])
		e.mu.Lock()
		p.stopProbeLocked(e)
		e.mu.Unlock()
		return true
	})
	abandoned := p.awaitDialers(ctx)
	for _, c := range abandoned {
		p.finish(c, result[C]{abandoned: true, canceled: true, err: ErrAbandoned})
	}
	p.wg.Wait()
	p.entries.Range(func(k, v any) bool {
		e := v.(*entry[K, C])
		if c := e.client.Swap(nil); c != nil {
			p.closeClient(e.key, *c)
		}
		p.rec.ClusterRemoved(e.breakerState().String())
		p.entries.Delete(k)
		return true
	})
	if len(abandoned) > 0 {
		names := make([]string, len(abandoned))
		for i, c := range abandoned {
			names[i] = c.e.name
		}
		slices.Sort(names)
		p.shutdownErr = fmt.Errorf("%w: %d did not return (they ignore their context): %s",
			ErrAbandoned, len(names), strings.Join(names, ", "))
	}
	close(p.shutdownDone)
	return p.shutdownErr
}

// awaitDialers waits until every dial goroutine has returned or ctx is
// done, and returns the calls of those still running.
func (p *Pool[K, C]) awaitDialers(ctx context.Context) []*call[K, C] {
	for {
		p.mu.Lock()
		n, out := len(p.dialers), p.dialerOut
		p.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-out:
		case <-ctx.Done():
			p.mu.Lock()
			defer p.mu.Unlock()
			left := make([]*call[K, C], 0, len(p.dialers))
			for c := range p.dialers {
				left = append(left, c)
			}
			return left
		}
	}
}
