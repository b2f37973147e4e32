package tracing

// Outcome is how a Get that was not a hit ended.
type Outcome uint8

// The outcomes of a wait, the values of the clusterpool.outcome attribute.
const (
	// Acquired: a client was returned after a wait.
	Acquired Outcome = iota
	// Timeout: the wait bound passed before the dial ended.
	Timeout
	// Canceled: the caller's context was canceled.
	Canceled
	// Rejected: the cluster's breaker was not closed.
	Rejected
	// Closed: the pool was closed.
	Closed
	// Failed: the dial ended with an error within the wait.
	Failed
	// Removed: the cluster was removed from the pool during the wait.
	Removed
	// Queued: the dial had to queue for a pool-wide permit
	// (Options.MaxTotalDials), so the caller did not wait for it.
	Queued
	// Skipped: the dial runs, but the pool did not wait for it because it
	// was not expected to end within the wait bound (a cluster that failed
	// its last dial, a dial slower than the dials the pool has seen).
	Skipped
	// Invalid: Options.ForKey gave invalid settings for the cluster.
	Invalid
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"acquired", "timeout", "canceled", "rejected", "closed", "failed", "removed",
	"queued", "skipped", "invalid"}

// String returns the attribute value: "acquired", "timeout", "canceled",
// "rejected", "closed", "failed", "removed", "queued", "skipped" or
// "invalid".
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// DialResult is how a dial ended, the value of clusterpool.dial.result.
type DialResult uint8

// The results of a dial.
const (
	DialSuccess DialResult = iota
	DialError
	DialPanic
	// DialCanceled: the pool canceled the dial (Close or Remove).
	DialCanceled
	// DialAbandoned: the dialer did not return by the dial's deadline (it
	// ignored its context); the pool settled the dial as a timeout and
	// went on without it.
	DialAbandoned
	numDialResults
)

var dialResultNames = [numDialResults]string{"success", "error", "panic", "canceled", "abandoned"}

// String returns "success", "error", "panic", "canceled" or "abandoned".
func (r DialResult) String() string {
	if r < numDialResults {
		return dialResultNames[r]
	}
	return "unknown"
}
