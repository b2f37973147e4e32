package grayproxy

import (
	"errors"
	"fmt"
	"time"
)

// Mode is what the proxy does with the requests it receives.
type Mode int32

// The modes.
const (
	// Pass forwards every request and answer untouched (the default).
	Pass Mode = iota
	// Slow forwards every request and holds each answer's headers (for a
	// watch, its first byte) before passing them on.
	Slow
	// Errors answers a fraction of the requests itself with 500 or 503 and
	// a Kubernetes Status body, and forwards the others.
	Errors
	// Throttled answers a fraction of the requests (or all) itself with 429,
	// a Retry-After header and a Kubernetes Status body of reason
	// TooManyRequests, as API Priority and Fairness does, and forwards the
	// others.
	Throttled
	numModes
)

// modeNames are the modes' String values.
var modeNames = [...]string{Pass: "pass", Slow: "slow", Errors: "errors", Throttled: "throttled"}

// String returns the mode's name ("pass", "slow", "errors", "throttled").
func (m Mode) String() string {
	if m < 0 || m >= numModes {
		return "unknown"
	}
	return modeNames[m]
}

// ErrInvalidFault is returned (wrapped, naming the field) by
// [Proxy.Set] for a Fault it cannot apply.
var ErrInvalidFault = errors.New("grayproxy: invalid fault")

// Fault is a mode and its settings. The zero Fault is Pass. Build one with
// [PassFault], [SlowBy], [SlowFor], [ErrorRate] or [Throttle], or set the
// fields directly.
type Fault struct {
	// Mode is the mode.
	Mode Mode
	// Latency (Slow) is added before each answer's headers.
	Latency time.Duration
	// Factor (Slow) holds each answer's headers until Factor times the
	// apiserver's own time to headers has passed since the proxy received
	// the request, Latency on top. Zero means 1 (no stretch); else at
	// least 1.
	Factor float64
	// Rate (Errors, Throttled) is the fraction of requests the proxy
	// answers itself, in (0, 1]. Zero means 1: every request.
	Rate float64
	// Code (Errors) is the status of the faulted answers: 500 or 503, or
	// zero for either, chosen for each answer from Seed.
	Code int
	// RetryAfter (Throttled) is the Retry-After the 429 answers carry, in
	// whole seconds (rounded up). Zero means one second.
	RetryAfter time.Duration
	// Seed (Errors, Throttled) seeds which requests are faulted and, for
	// Errors with a zero Code, which status each gets. The same seed and
	// the same sequence of requests fault the same requests.
	Seed uint64
}

// PassFault is the Fault of Pass mode.
func PassFault() Fault { return Fault{} }

// SlowFor is Slow mode with each answer's headers held d longer.
func SlowFor(d time.Duration) Fault { return Fault{Mode: Slow, Latency: d} }

// SlowBy is Slow mode with each answer's headers held until factor times
// the apiserver's own time to headers.
func SlowBy(factor float64) Fault { return Fault{Mode: Slow, Factor: factor} }

// ErrorRate is Errors mode: the fraction rate of the requests answered
// 500 or 503, chosen from seed.
func ErrorRate(rate float64, seed uint64) Fault { return Fault{Mode: Errors, Rate: rate, Seed: seed} }

// Throttle is Throttled mode: the fraction rate of the requests (1: all)
// answered 429 with Retry-After retryAfter.
func Throttle(rate float64, retryAfter time.Duration) Fault {
	return Fault{Mode: Throttled, Rate: rate, RetryAfter: retryAfter}
}

// validate returns an error naming the first field f cannot have.
func (f Fault) validate() error {
	switch {
	case f.Mode < 0 || f.Mode >= numModes:
		return fmt.Errorf("%w: Mode %d", ErrInvalidFault, f.Mode)
	case f.Latency < 0:
		return fmt.Errorf("%w: Latency %v is negative", ErrInvalidFault, f.Latency)
	case f.Factor != 0 && !(f.Factor >= 1): // NaN too
		return fmt.Errorf("%w: Factor %v is below 1", ErrInvalidFault, f.Factor)
	case f.Rate != 0 && !(f.Rate > 0 && f.Rate <= 1):
		return fmt.Errorf("%w: Rate %v is not in (0, 1]", ErrInvalidFault, f.Rate)
	case f.Code != 0 && f.Code != 500 && f.Code != 503:
		return fmt.Errorf("%w: Code %d is not 500 or 503", ErrInvalidFault, f.Code)
	case f.RetryAfter < 0:
		return fmt.Errorf("%w: RetryAfter %v is negative", ErrInvalidFault, f.RetryAfter)
	}
	return nil
}

// retryAfterSeconds is RetryAfter in whole seconds, rounded up, at least 1.
func (f Fault) retryAfterSeconds() int {
	s := int((f.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// rate is Rate with its default.
func (f Fault) rate() float64 {
	if f.Rate == 0 {
		return 1
	}
	return f.Rate
}
