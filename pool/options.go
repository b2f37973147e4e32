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
	// DefaultMaxTotalDials is Cluster API's --clustercache-concurrency
	// default: ClusterCache connects with 100 workers.
	DefaultMaxTotalDials = 100
	// DefaultMaxSlowDials is the default of Options.MaxSlowDials. Dials of
	// clusters known to fail hold at most half of the normal lane, so at
	// most 90 of them hang at once, fewer than ClusterCache's 100 workers:
	// a fleet with more dead clusters than that capacity is dialed less
	// often than ClusterCache dials it, and every healthy cluster is still
	// connected sooner. bench/sim scenario 2 measures both, with the other
	// values tried (bench/README.md).
	DefaultMaxSlowDials = 40
)

// MaxDuration bounds every duration of Options and Overrides: a longer one
// is refused by New rather than overflowing a deadline.
const MaxDuration = breaker.MaxDuration

// Options configures a [Pool]. The zero value is valid: every zero field
// means its documented default.
type Options[K comparable, C any] struct {
	// MaxWait is the longest a Get waits for a dial in flight. A Get waits
	// only for a dial that is expected to end within the bound, judging by
	// the dials the pool has seen: it does not wait for a dial queued for a
	// permit, for a cluster whose last dial or reported use failed, or for a
	// dial already slower than healthy dials. A caller's earlier deadline
	// wins. Zero means DefaultMaxWait (50ms). While a SubscribeRequeue
	// subscription is open, a Get never waits blindly (see there).
	MaxWait time.Duration

	// DialTimeout bounds one dial. The pool enforces it whatever the dialer
	// does: at the deadline the dial is settled as a timeout failure and its
	// permits are returned, even if the dialer ignores its context (its
	// client, should it ever return one, goes to OnClose). A dial that runs
	// until the deadline, or fails with a timeout error (context's, or a
	// net.Error's Timeout) after at least half of it, hung: it is a
	// breaker.Trip. Zero means DefaultDialTimeout (10s).
	DialTimeout time.Duration

	// MaxConcurrentDials is how many dials of one cluster may run at once
	// (a dial canceled by Remove runs until it returns or its deadline).
	// Zero means 1.
	MaxConcurrentDials int64

	// MaxTotalDials is the normal lane: how many dials may run at once
	// across all clusters while they are not known to hang. Zero means
	// DefaultMaxTotalDials (100).
	// It must not be below MaxConcurrentDials. Dials of clusters that
	// failed their last dial or reported use, and half-open probes, hold at
	// most half of it (at least one). Pending dials wait in one FIFO queue;
	// no goroutine waits for a permit.
	MaxTotalDials int64

	// MaxSlowDials is the slow lane: a dial that has run much longer than
	// the pool's healthy dials (4 times their 90th percentile, at least
	// MaxWait; 4×MaxWait before any dial succeeded) moves out of the normal
	// lane into this one, where it goes on until its deadline without
	// holding up first dials of other clusters. Zero means
	// DefaultMaxSlowDials (40); when the slow lane is full, slow dials stay
	// in the normal lane.
	MaxSlowDials int64

	// Breaker configures each cluster's circuit breaker; see
	// breaker.Settings for its defaults (3 failures, 5s open, 30s cap).
	// Breaker.IsFailure is called without any pool lock held; a panic in
	// it is recovered and counts the error as a failure.
	Breaker breaker.Settings

	// ForKey, if set, gives per-cluster overrides (a known-slow edge
	// cluster, say). It is called once each time the pool starts holding
	// state for a key (again only after Remove forgot it), without
	// any lock held, by the first Get or Probe of the key; a Get of the same
	// key that comes while it runs waits for its answer (at most MaxWait,
	// or until its ctx ends: ErrWaitTimeout) instead of calling it again.
	// Gets of other keys are not held up. Invalid overrides, or a panic,
	// make the Get (and those that waited for the answer) fail with an
	// error matching ErrInvalidOptions that names the cluster and the
	// field; nothing is kept for the key, so the next Get calls ForKey
	// again.
	ForKey func(key K) Overrides

	// OnClose is called exactly once for every client that leaves the pool
	// or that a dial returned but the pool did not keep (also a non-nil
	// client returned together with an error). It is never called with a
	// pool lock held; a panic in it is recovered and counted. nil means
	// nothing is done.
	OnClose func(key K, client C)

	// FormatKey turns a key into the string used in errors, span attributes
	// and logs. It must not reveal credentials. nil means fmt.Sprint; a
	// panic in it is recovered and the key is shown as "<unprintable>".
	FormatKey func(key K) string

	// TracerProvider and MeterProvider receive the pool's spans and metrics;
	// nil means the otel globals.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Overrides are one cluster's settings that differ from the pool's
// (Options.ForKey). Zero fields mean the pool's value.
type Overrides struct {
	MaxWait     time.Duration
	DialTimeout time.Duration
	// Breaker, if not nil, replaces Options.Breaker for the cluster; its
	// own zero fields mean the breaker package's defaults.
	Breaker *breaker.Settings
}

// ErrInvalidOptions is matched (errors.Is) by every configuration error New
// returns, and by a Get whose ForKey overrides are invalid.
var ErrInvalidOptions = errors.New("pool: invalid options")

func invalid(field string, v any, why string) error {
	return fmt.Errorf("%w: %s=%v %s", ErrInvalidOptions, field, v, why)
}

// validate reports the first invalid field by name; o has no defaults yet.
func (o *Options[K, C]) validate() error {
	if err := opt.FirstNegative("", opt.F("MaxWait", o.MaxWait), opt.F("DialTimeout", o.DialTimeout),
		opt.F("MaxConcurrentDials", o.MaxConcurrentDials), opt.F("MaxTotalDials", o.MaxTotalDials),
		opt.F("MaxSlowDials", o.MaxSlowDials)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := tooLong("", o.MaxWait, o.DialTimeout); err != nil {
		return err
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

// tooLong refuses a MaxWait or DialTimeout above MaxDuration.
func tooLong(prefix string, maxWait, dialTimeout time.Duration) error {
	if maxWait > MaxDuration {
		return invalid(prefix+"MaxWait", maxWait, fmt.Sprintf("must not exceed %v", MaxDuration))
	}
	if dialTimeout > MaxDuration {
		return invalid(prefix+"DialTimeout", dialTimeout, fmt.Sprintf("must not exceed %v", MaxDuration))
	}
	return nil
}

func (o Options[K, C]) withDefaults() Options[K, C] {
	opt.Default(&o.MaxWait, DefaultMaxWait)
	opt.Default(&o.DialTimeout, DefaultDialTimeout)
	opt.Default(&o.MaxConcurrentDials, DefaultMaxConcurrentDials)
	opt.Default(&o.MaxTotalDials, DefaultMaxTotalDials)
	opt.Default(&o.MaxSlowDials, DefaultMaxSlowDials)
	if o.OnClose == nil {
		o.OnClose = func(K, C) {}
	}
	if o.FormatKey == nil {
		o.FormatKey = func(k K) string { return fmt.Sprint(k) }
	}
	return o
}

// keySettings are the settings in force for one cluster: the pool's, with
// the cluster's Overrides applied. Entries share them by pointer: every key
// without overrides points at the pool's.
type keySettings struct {
	maxWait     time.Duration
	dialTimeout time.Duration
	breaker     breaker.Settings
	isFailure   func(error) bool // breaker.IsFailure with its default applied
	maxDials    int64            // Options.MaxConcurrentDials
}

// settingsFor validates ov and applies it over the pool's options (whose
// defaults are applied).
func (o *Options[K, C]) settingsFor(ov Overrides) (*keySettings, error) {
	if err := opt.FirstNegative("ForKey.", opt.F("MaxWait", ov.MaxWait),
		opt.F("DialTimeout", ov.DialTimeout)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := tooLong("ForKey.", ov.MaxWait, ov.DialTimeout); err != nil {
		return nil, err
	}
	s := &keySettings{maxWait: o.MaxWait, dialTimeout: o.DialTimeout, breaker: o.Breaker, maxDials: o.MaxConcurrentDials}
	if ov.MaxWait != 0 {
		s.maxWait = ov.MaxWait
	}
	if ov.DialTimeout != 0 {
		s.dialTimeout = ov.DialTimeout
	}
	if ov.Breaker != nil {
		if err := ov.Breaker.Validate(); err != nil {
			return nil, fmt.Errorf("%w: ForKey.Breaker: %w", ErrInvalidOptions, err)
		}
		s.breaker = *ov.Breaker
	}
	s.isFailure = s.breaker.IsFailure
	if s.isFailure == nil {
		s.isFailure = breaker.DefaultIsFailure
	}
	return s, nil
}
