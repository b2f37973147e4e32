package pool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ErrAbandoned is matched by the error of Close or Shutdown when dialers
// did not return within the bound: their goroutines are left running, and
// a client one returns later goes to OnClose.
var ErrAbandoned = errors.New("pool: dialers abandoned")

// Close is Shutdown waiting at most Options.DialTimeout for dialers to
// return: it never hangs on a dialer that ignores its context.
func (p *Pool[K, C]) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
	defer cancel()
	return p.Shutdown(ctx)
}

// Shutdown cancels every dial (none starts once it began), wakes every
// waiter with ErrClosed, stops every probe and subscription, waits until
// every dialer has returned or ctx is done, then passes every cached client
// to OnClose. Dialers still running then are abandoned: the error matches
// ErrAbandoned and names their clusters. A second call waits for the
// first (or its own ctx) and returns the same error.
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
	// The lanes close before the dials' context is canceled: a dialer that
	// honours it frees its slot at once, which must not start a queued dial.
	p.closeLanes()
	p.cancel()
	canceledAt := time.Now()
	abandoned := p.awaitDialers(ctx)
	for _, c := range abandoned {
		p.finish(c, result[C]{end: endAbandoned, err: ErrAbandoned})
	}
	p.timers.close() // no probe, deadline or demotion fires any more
	p.wg.Wait()
	p.entries.Range(func(_, v any) bool { // every cached client to OnClose, the map emptied
		p.step(v.(*entry[K, C]), input[K, C]{kind: inClose})
		return true
	})
	p.shutdownErr = p.abandonedError(abandoned, time.Since(canceledAt))
	close(p.shutdownDone)
	return p.shutdownErr
}

// abandonedError is the error of a Shutdown that abandoned the dialers of
// calls waited after canceling them, or nil if there are none.
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
			return slices.Collect(maps.Keys(p.dialers))
		}
	}
}
