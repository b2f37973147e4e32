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
)

// Settings configures a [Breaker]. The zero value is valid and means the
// documented defaults.
type Settings struct {
	// ConsecutiveFailures is how many failures in a row, while closed, open
	// the breaker. Zero means DefaultConsecutiveFailures (3).
	ConsecutiveFailures uint32

	// OpenTimeout is the first open period: how long the breaker rejects
	// before it lets one probe through. Zero means DefaultOpenTimeout (5s).
	OpenTimeout time.Duration

	// MaxOpenTimeout caps the open period, which doubles after every failed
	// probe and is never shorter than the period before it until the
	// breaker closes (after a Trip's MaxOpenTimeout, every failed probe
	// keeps MaxOpenTimeout, whatever its error). Zero means DefaultMaxOpenTimeout (30s, or OpenTimeout if that is
	// longer). It must not be below OpenTimeout. A period at the cap is exact
	// (not jittered), so the cap is the worst-case delay between a dead
	// cluster coming back and the pool noticing, and one probe per cap (plus
	// the probe's own hang) is the steady cost of a dead cluster: 30s with a
	// 10 s dial timeout means one dial per 40 s, 90 per hour, as Cluster
	// API's ClusterCache (a 10 s connect timeout, then its fixed 30 s
	// retry).
	MaxOpenTimeout time.Duration

	// Jitter is the fraction by which every open period below
	// MaxOpenTimeout is randomly lengthened or shortened (and capped at
	// MaxOpenTimeout), so that clusters that failed together do not probe
	// together while their periods grow; periods at the cap are exact and
	// keep that spread. Zero means DefaultJitter (0.2, that is ±20 %); it
	// must be below 1. Set DisableJitter for exact periods.
	Jitter float64

	// DisableJitter makes every open period exact (Jitter is ignored).
	DisableJitter bool

	// DisableTrip makes Trip outcomes (a dial that hung until its
	// deadline) plain failures: they count toward ConsecutiveFailures and
	// open the breaker for the growing period. By default a Trip opens a
	// closed breaker at once, and every Trip opens it for MaxOpenTimeout:
	// repeating a request that hung for its whole timeout helps nobody,
	// and probing such a cluster every MaxOpenTimeout is the steady cost
	// named above.
	DisableTrip bool

	// IsFailure reports whether an outcome counts as a failure. Outcomes for
	// which it returns false are neither failures nor successes: they do not
	// change the counts, except for the half-open probe, which always ends
	// in a decision (an uncounted error re-opens the breaker). It is called
	// without any lock held; nil means DefaultIsFailure.
	IsFailure func(err error) bool
}

// DefaultIsFailure counts every non-nil error as a failure except
// [context.Canceled], which says the caller gave up, not that the far end is
// unhealthy. A deadline exceeded (a dial timeout) is a failure.
func DefaultIsFailure(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled)
}

// MaxDuration bounds every duration of Settings (and of the pool's options):
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
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"OpenTimeout", s.OpenTimeout}, {"MaxOpenTimeout", s.MaxOpenTimeout}} {
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
	if s.DisableJitter {
		s.Jitter = 0
	}
	if s.IsFailure == nil {
		s.IsFailure = DefaultIsFailure
	}
	return s
}
