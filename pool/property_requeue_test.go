package pool

import (
	"context"
	"errors"
	"time"

	"pgregory.net/rapid"
)

// eventLog records the events of a SubscribeRequeue subscription, when a
// property case opened one (ev is nil otherwise).
type eventLog struct{ ev *events }

func logRequeues(ctx context.Context, p *Pool[string, *client], on bool) eventLog {
	if !on {
		return eventLog{}
	}
	return eventLog{subscribeRequeue(ctx, p)}
}

// ctx is the context of the case's Gets: marked by Requeued when the
// subscription brings them back.
func (l eventLog) ctx() context.Context {
	if l.ev == nil {
		return context.Background()
	}
	return Requeued(context.Background())
}

// checkComesBack: while callers are requeued by events, the event brings a
// caller sent away with ErrWaitTimeout back no later than its RetryAfter
// would: some event of its key lies between the Get's start and its
// RetryAt. RetryAts from Close on are not checked: the pool sends nothing
// after Close.
func (l eventLog) checkComesBack(rt *rapid.T, gets []*getRecord, closeAt time.Time) {
	if l.ev == nil {
		return
	}
	l.ev.mu.Lock()
	defer l.ev.mu.Unlock()
	for _, g := range gets {
		if !g.done || g.retryAt.IsZero() || !g.retryAt.Before(closeAt) {
			continue
		}
		found := false
		for _, ev := range l.ev.got {
			if ev.Key == g.key && !ev.Time.Before(g.start) && !ev.Time.After(g.retryAt) {
				found = true
				break
			}
		}
		if !found {
			rt.Fatalf("Get(%s) at %v: ErrWaitTimeout with RetryAt %v, and no event of the key in between (events %v)",
				g.key, g.start, g.retryAt, l.ev.got)
		}
	}
}

// noteRetry records g's RetryAt if it ended with ErrWaitTimeout.
func (g *getRecord) noteRetry() {
	if d, ok := RetryAfter(g.err); ok && errors.Is(g.err, ErrWaitTimeout) {
		g.retryAt = time.Now().Add(d)
	}
}
