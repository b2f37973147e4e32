package pool

import "context"

// requeuedKey marks a context as Requeued's.
type requeuedKey struct{}

// Requeued marks a Get as made for a caller whom the pool's events bring
// back (a controller watching kube.Source). Such a Get never waits blindly
// (with no dial seen yet, it returns ErrWaitTimeout at once), and its
// RetryAfter is the latest the dial can end, a safety net behind the event:
// in controller-runtime's priority queue an event before the RequeueAfter
// keeps the object's place, a RequeueAfter first sends it to the back.
// Other callers of the pool are not affected.
func Requeued(ctx context.Context) context.Context {
	return context.WithValue(ctx, requeuedKey{}, true)
}

// isRequeued reports whether ctx was marked by Requeued.
func isRequeued(ctx context.Context) bool {
	v, _ := ctx.Value(requeuedKey{}).(bool)
	return v
}
