package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
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

// Shutdown cancels every dial, queued or running (no dial starts once it
// began), wakes every waiter with ErrClosed, stops every probe and
// subscription, waits until every dialer has returned or ctx is done, then
// passes every cached client to OnClose. Dialers still running when ctx is
// done are abandoned: their dials end as ErrClosed, and the returned error
// matches ErrAbandoned and names their clusters. A ctx that is already
// done waits for no dialer: every dialer still running is abandoned,
// including those that honour their context and would have returned at
// once; the error then says they were still running, and claims that they
// ignore their context only when they had DialTimeout to return (as with
// Close). Get after Shutdown returns ErrClosed. A second call waits for
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
	// The lanes close first: no dial starts once Shutdown began. Above all
	// not before the dials' context is canceled: a dialer that honours
	// ctx returns at once and frees its slot, which must not start a
	// queued dial (with a canceled context, or with a dialer that ignores
	// it and would outlive Close).
	p.closeLanes()
	p.cancel()
	canceledAt := time.Now()
	abandoned := p.awaitDialers(ctx)
	for _, c := range abandoned {
		p.finish(c, result[C]{end: endAbandoned, err: ErrAbandoned})
	}
	p.timers.close() // no probe, deadline or demotion fires any more
	p.wg.Wait()
	p.sweep()
	p.shutdownErr = p.abandonedError(abandoned, time.Since(canceledAt))
	close(p.shutdownDone)
	return p.shutdownErr
}

// sweep passes every cached client to OnClose and empties the map.
func (p *Pool[K, C]) sweep() {
	p.entries.Range(func(_, v any) bool {
		p.step(v.(*entry[K, C]), input[K, C]{kind: inClose})
		return true
	})
}

// abandonedError is the error of a Shutdown that abandoned the dialers of
// calls, waited after canceling their context, or nil if there are none.
// It says a dialer ignores its context only if it had DialTimeout to
// return (Close's bound): a Shutdown whose ctx was done at once, or soon,
// gave dialers that honour their context no time to do so.
func (p *Pool[K, C]) abandonedError(calls []*call[K, C], waited time.Duration) error {
	if len(calls) == 0 {
		return nil
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.e.name
	}
	slices.Sort(names)
	why := "still running when the shutdown's context ended"
	if waited >= p.opts.DialTimeout {
		why = fmt.Sprintf("did not return within %v of being canceled (they ignore their context)", p.opts.DialTimeout)
	}
	return fmt.Errorf("%w: %d %s: %s", ErrAbandoned, len(names), why, strings.Join(names, ", "))
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
