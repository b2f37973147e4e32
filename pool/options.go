package pool

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/opt"
)

// Defaults used for zero fields of [Options].
const (
	DefaultMaxWait            = 50 * time.Millisecond
	DefaultDialTimeout        = 10 * time.Second
	DefaultMaxConcurrentDials = 1
	DefaultMaxTotalDials      = 16
)

// Options configures a [Pool]. The zero value is valid: every zero field
// means its documented default.
type Options[K comparable, C any] struct {
	// MaxWait is the longest a Get waits for a dial in flight, while the
	// cluster has no recent failures; each consecutive failure halves it.
	// A caller's earlier deadline wins. Zero means DefaultMaxWait (50ms).
	MaxWait time.Duration

	// DialTimeout bounds one call of the dialer. Zero means
	// DefaultDialTimeout (10s).
	DialTimeout time.Duration

	// MaxConcurrentDials is the weight of each cluster's semaphore: how many
	// dials of one cluster may run at once. Zero means 1.
	MaxConcurrentDials int64

	// MaxTotalDials is the weight of the pool-wide semaphore: how many dials
	// may run at once across all clusters. Zero means 16. It must not be
	// below MaxConcurrentDials. Dials of clusters that failed their last
	// dial or reported use, and half-open probes, hold at most half of it
	// (at least one). A Get does not wait for a dial queued for a permit.
	MaxTotalDials int64

	// Breaker configures each cluster's circuit breaker; see
	// breaker.Settings for its defaults (3 failures, 5s open, 5m cap).
	Breaker breaker.Settings

	// OnClose is called exactly once for every client that leaves the pool
	// or that a dial returned but the pool did not keep. It is never called
	// with a pool lock held. nil means nothing is done.
	OnClose func(key K, client C)

	// FormatKey turns a key into the string used in errors, span attributes
	// and logs. It must not reveal credentials. nil means fmt.Sprint.
	FormatKey func(key K) string

	// TracerProvider and MeterProvider receive the pool's spans and metrics;
	// nil means the otel globals.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// ErrInvalidOptions is matched (errors.Is) by every configuration error New
// returns.
var ErrInvalidOptions = errors.New("clusterpool: invalid options")

func invalid(field string, v any, why string) error {
	return fmt.Errorf("%w: %s=%v %s", ErrInvalidOptions, field, v, why)
}

// validate reports the first invalid field by name; o has no defaults yet.
func (o *Options[K, C]) validate() error {
	if err := opt.FirstNegative("", opt.F("MaxWait", o.MaxWait), opt.F("DialTimeout", o.DialTimeout),
		opt.F("MaxConcurrentDials", o.MaxConcurrentDials), opt.F("MaxTotalDials", o.MaxTotalDials)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	d := o.withDefaults()
	if d.MaxConcurrentDials > d.MaxTotalDials {
		return invalid("MaxConcurrentDials", d.MaxConcurrentDials,
			fmt.Sprintf("must not exceed MaxTotalDials (%d)", d.MaxTotalDials))
	}
	if err := o.Breaker.Validate(); err != nil {
		return fmt.Errorf("%w: Breaker: %w", ErrInvalidOptions, err)
	}
	return nil
}

func (o Options[K, C]) withDefaults() Options[K, C] {
	opt.Default(&o.MaxWait, DefaultMaxWait)
	opt.Default(&o.DialTimeout, DefaultDialTimeout)
	opt.Default(&o.MaxConcurrentDials, DefaultMaxConcurrentDials)
	opt.Default(&o.MaxTotalDials, DefaultMaxTotalDials)
	if o.OnClose == nil {
		o.OnClose = func(K, C) {}
	}
	if o.FormatKey == nil {
		o.FormatKey = func(k K) string { return fmt.Sprint(k) }
	}
	return o
}
