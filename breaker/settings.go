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
	DefaultMaxOpenTimeout      = 5 * time.Minute
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
	// probe. Zero means DefaultMaxOpenTimeout (5m). It must not be below
	// OpenTimeout.
	MaxOpenTimeout time.Duration

	// Jitter is the fraction by which every open period is randomly
	// lengthened or shortened, so that clusters that failed together do not
	// probe together. Zero means DefaultJitter (0.2, that is ±20 %); it must
	// be below 1. Set DisableJitter for exact periods.
	Jitter float64

	// DisableJitter makes every open period exact (Jitter is ignored).
	DisableJitter bool

	// IsFailure reports whether an outcome counts as a failure. Outcomes for
	// which it returns false are neither failures nor successes: they do not
	// change the counts. nil means DefaultIsFailure.
	IsFailure func(err error) bool
}

// DefaultIsFailure counts every non-nil error as a failure except
// [context.Canceled], which says the caller gave up, not that the far end is
// unhealthy. A deadline exceeded (a dial timeout) is a failure.
func DefaultIsFailure(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled)
}

// ErrInvalidSettings is matched (errors.Is) by every error [New] and
// [Settings.Validate] return.
var ErrInvalidSettings = errors.New("breaker: invalid settings")

// Validate reports the first invalid field, by name. It does not apply
// defaults.
func (s Settings) Validate() error {
	if err := opt.FirstNegative("", opt.F("OpenTimeout", s.OpenTimeout), opt.F("MaxOpenTimeout", s.MaxOpenTimeout)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSettings, err)
	}
	if s.Jitter < 0 || s.Jitter >= 1 {
		return invalid("Jitter", s.Jitter, "must be in [0, 1)")
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
