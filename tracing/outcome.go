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
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"acquired", "timeout", "canceled", "rejected", "closed", "failed", "removed", "queued"}

// String returns the attribute value: "acquired", "timeout", "canceled",
// "rejected", "closed", "failed", "removed" or "queued".
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
	numDialResults
)

var dialResultNames = [numDialResults]string{"success", "error", "panic", "canceled"}

// String returns "success", "error", "panic" or "canceled".
func (r DialResult) String() string {
	if r < numDialResults {
		return dialResultNames[r]
	}
	return "unknown"
}
