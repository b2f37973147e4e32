package pool

import "context"

// requeuedKey marks a context as Requeued's.
type requeuedKey struct{}

// Requeued returns a copy of ctx that marks a Get as made for a caller whom
// the pool's events bring back: a reconciler of a controller that watches
// the pool's events (kube.Source), whose Get is followed by a requeue.
// Such a Get never waits blindly (before the pool has seen a dial succeed
// it cannot tell how long one takes, and instead of waiting MaxWait it
// returns ErrWaitTimeout at once), and its ErrWaitTimeout's RetryAfter is
// the latest the dial can end, a safety net behind the Connected,
// BreakerOpened or DialFailed event that ends it, not its expected end.
// Both keep requeued objects in order: in controller-runtime's priority
// queue an event that comes before the RequeueAfter keeps the object's
// place in line, a RequeueAfter that fires first sends it to the back, and
// a worker waiting for a dial reconciles nothing else meanwhile.
//
// The choice is per call: other callers of the same pool (a controller
// that only retries, a webhook) keep the waits of MaxWait and a RetryAfter
// of the dial's expected end.
func Requeued(ctx context.Context) context.Context {
	return context.WithValue(ctx, requeuedKey{}, true)
}

// isRequeued reports whether ctx was marked by Requeued.
func isRequeued(ctx context.Context) bool {
	v, _ := ctx.Value(requeuedKey{}).(bool)
	return v
}
