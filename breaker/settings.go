package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/internal/opt"
)

// Defaults used for zero fields of [Settings].
const (
	DefaultConsecutiveFailures = 3
	DefaultOpenTimeout         = 5 * time.Second
	DefaultMaxOpenTimeout      = 30 * time.Second
	DefaultJitter              = 0.2
	DefaultFailureRate         = 0.5
	DefaultMinRequests         = 20
	DefaultWindow              = 10 * time.Second
)

// windowBuckets is how many buckets the rate window rolls by: it forgets
// its oldest tenth at a time.
const windowBuckets = 10

// Settings configures a [Breaker]. The zero value means the defaults.
type Settings struct {
	// ConsecutiveFailures is how many Failure outcomes in a row (dials,
	// probes, Report; RateFailure outcomes neither count nor break a row,
	// a success breaks it), while closed, open the breaker. Zero means
	// DefaultConsecutiveFailures (3).
	ConsecutiveFailures uint32

	// FailureRate is the share of failures (Failure and RateFailure) among
	// the outcomes of the last Window at which a closed breaker opens, once
	// the window holds at least MinRequests of them. In (0, 1]; zero means
	// DefaultFailureRate (0.5).
	FailureRate float64

	// MinRequests is how many outcomes the window must hold before its
	// failure rate is judged. Zero means DefaultMinRequests (20).
	MinRequests uint32

	// Window is how far back the failure rate looks; it rolls by a tenth
	// of itself. A window starts at a closed breaker's first failure
	// (successes before it are not counted: a healthy breaker holds no
	// window) and is dropped once it holds no failure. Its tenth must be at
	// least a nanosecond; zero means DefaultWindow (10s).
	Window time.Duration

	// DisableFailureRate turns the rate rule off: only ConsecutiveFailures
	// and Trip open the breaker, and RateFailure outcomes count for
	// nothing.
	DisableFailureRate bool

	// OpenTimeout is the first open period, before one probe goes through.
	// Zero means DefaultOpenTimeout (5s).
	OpenTimeout time.Duration

	// MaxOpenTimeout caps the open period, which doubles after every failed
	// probe and never shrinks until the breaker closes. A period at the cap
	// is exact: the cap is the worst delay to notice a dead cluster's
	// return, and one probe per cap (plus its own hang) a dead cluster's
	// steady cost: 30s with a 10 s dial timeout is one dial per 40 s, as
	// ClusterCache (a 10 s connect timeout, then a fixed 30 s retry). Not
	// below OpenTimeout. Zero means DefaultMaxOpenTimeout (30s, or
	// OpenTimeout if longer).
	MaxOpenTimeout time.Duration

	// Jitter is the fraction by which every open period below the cap is
	// randomly lengthened or shortened, so that clusters that failed
	// together do not probe together. Below 1; zero means DefaultJitter
	// (±20 %).
	Jitter float64

	// DisableJitter makes every open period exact (Jitter is ignored).
	DisableJitter bool

	// DisableTrip makes Trip outcomes (a dial that hung until its deadline)
	// plain failures. By default a Trip opens a closed breaker at once, and
	// every Trip opens it for MaxOpenTimeout.
	DisableTrip bool

	// IsFailure reports whether an error counts as a failure; others are
	// neither failure nor success (but re-open a half-open breaker: the
	// probe ends in a decision). Called with no lock held; nil means
	// DefaultIsFailure.
	IsFailure func(err error) bool
}

// DefaultIsFailure counts every non-nil error as a failure except
// [context.Canceled] (the caller gave up); a deadline exceeded is one.
func DefaultIsFailure(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled)
}

// MaxDuration bounds every duration of Settings (and the pool's options):
// a longer one is refused rather than overflowing a deadline.
const MaxDuration = 365 * 24 * time.Hour

// ErrInvalidSettings is matched (errors.Is) by every error [New] and
// [Settings.Validate] return.
var ErrInvalidSettings = errors.New("breaker: invalid settings")

// Validate reports the first invalid field, by name. It does not apply
// defaults.
func (s Settings) Validate() error {
	if err := opt.FirstNegative("", opt.F("OpenTimeout", s.OpenTimeout), opt.F("MaxOpenTimeout", s.MaxOpenTimeout)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSettings, err)
	}
	if !(s.Jitter >= 0 && s.Jitter < 1) { // also refuses NaN
		return invalid("Jitter", s.Jitter, "must be in [0, 1)")
	}
	if !(s.FailureRate >= 0 && s.FailureRate <= 1) { // also refuses NaN
		return invalid("FailureRate", s.FailureRate, "must be in (0, 1] (0: the default)")
	}
	if s.Window < 0 || (s.Window > 0 && s.Window < windowBuckets) {
		return invalid("Window", s.Window, "must be at least 10ns (0: the default)")
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"OpenTimeout", s.OpenTimeout}, {"MaxOpenTimeout", s.MaxOpenTimeout}, {"Window", s.Window}} {
		if f.d > MaxDuration {
			return invalid(f.name, f.d, fmt.Sprintf("must not exceed %v", MaxDuration))
		}
	}
	d := s.withDefaults()
	if d.MaxOpenTimeout < d.OpenTimeout {
		return invalid("MaxOpenTimeout", d.MaxOpenTimeout, fmt.Sprintf("must not be below OpenTimeout (%v)", d.OpenTimeout))
	}
	return nil
}

func invalid(field string, v any, why string) error {
	return fmt.Errorf("%w: %s=%v %s", ErrInvalidSettings, field, v, why)
}

// withDefaults returns s with every zero field set to its default.
func (s Settings) withDefaults() Settings {
	opt.Default(&s.ConsecutiveFailures, DefaultConsecutiveFailures)
	opt.Default(&s.OpenTimeout, DefaultOpenTimeout)
	if s.MaxOpenTimeout == 0 {
		s.MaxOpenTimeout = max(DefaultMaxOpenTimeout, s.OpenTimeout)
	}
	opt.Default(&s.Jitter, DefaultJitter)
	opt.Default(&s.FailureRate, DefaultFailureRate)
	opt.Default(&s.MinRequests, DefaultMinRequests)
	opt.Default(&s.Window, DefaultWindow)
	if s.DisableJitter {
		s.Jitter = 0
	}
	if s.IsFailure == nil {
		s.IsFailure = DefaultIsFailure
	}
	return s
}
