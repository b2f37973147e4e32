package pool

import (
	"cmp"
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
	// default (ClusterCache connects with 100 workers).
	DefaultMaxTotalDials = 100
	// DefaultMaxSlowDials: with dials of clusters known to fail holding at
	// most half of the normal lane, at most 90 hang at once, fewer than
	// ClusterCache's 100 workers (bench/sim scenario 2, bench/README.md).
	DefaultMaxSlowDials = 40
)

// MaxDuration bounds every duration of Options and Overrides.
const MaxDuration = breaker.MaxDuration

// Options configures a [Pool]. The zero value is valid: every zero field
// means its documented default.
type Options[K comparable, C any] struct {
	// MaxWait is the longest a Get waits for a dial in flight. A Get waits
	// only for a dial expected to end within the bound, judging by the
	// dials the pool has seen: not for a queued dial, a dial already slower
	// than healthy ones, or a cluster whose last dial (whatever its
	// outcome) took longer than the bound. After a failed dial the next Get
	// dials again and waits by the same rule. A caller's earlier deadline
	// wins. A Get whose ctx is marked by Requeued never waits blindly (see
	// there). Zero means DefaultMaxWait (50ms).
	MaxWait time.Duration

	// DialTimeout bounds one dial, whatever the dialer does: at the deadline
	// the dial is a timeout failure and its slots are returned (a client
	// it returns later goes to OnClose). A dial that runs until the
	// deadline, or fails with a timeout error (context's, or a net.Error's)
	// after at least half of it, hung: a breaker.Trip. Zero means
	// DefaultDialTimeout (10s).
	DialTimeout time.Duration

	// MaxConcurrentDials is how many dials of one cluster may run at once
	// (a canceled dial runs until it returns or its deadline). Zero means 1.
	MaxConcurrentDials int64

	// MaxTotalDials is the normal lane: how many dials may run at once
	// across all clusters while they are not known to hang; not below
	// MaxConcurrentDials. Dials of clusters that failed their last dial or
	// use, and probes, hold at most half of it (at least one). Pending dials
	// wait in FIFO order, with no goroutine. Zero means
	// DefaultMaxTotalDials (100).
	MaxTotalDials int64

	// MaxSlowDials is the slow lane: a dial that has run 4 times the p90 of
	// the pool's healthy dials (at least MaxWait; 4×MaxWait before any
	// succeeded) moves into it and goes on until its deadline without
	// holding up other clusters' first dials; when it is full, slow dials
	// stay in the normal lane. Zero means DefaultMaxSlowDials (40).
	MaxSlowDials int64

	// Breaker configures each cluster's circuit breaker (breaker.Settings:
	// 3 failures in a row or 50 % of at least 20 outcomes within 10s, 5s
	// open, 30s cap). A panic in IsFailure counts the error as a failure.
	Breaker breaker.Settings

	// ForKey, if set, gives per-cluster overrides (a known-slow edge
	// cluster, say). It is called once each time the pool starts holding
	// state for a key (again only after Remove forgot it), with no lock
	// held, by the key's first Get or Connect; others of the key wait for
	// its answer (at most MaxWait, or until their ctx ends: ErrWaitTimeout).
	// Invalid overrides, or a panic, fail those Gets with an error matching
	// ErrInvalidOptions that names the cluster and the field; nothing is
	// kept, so the next Get calls ForKey again.
	ForKey func(key K) Overrides

	// OnClose is called exactly once for every client that leaves the pool
	// or that a dial returned but the pool did not keep (also one returned
	// with an error), with no pool lock held; a panic is recovered and
	// counted. nil means nothing is done.
	OnClose func(key K, client C)

	// FormatKey turns a key into the string of errors, spans and logs; it
	// must not reveal credentials. nil means fmt.Sprint; on a panic the key
	// is "<unprintable>".
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
	Breaker     *breaker.Settings // replaces Options.Breaker (its zero fields: breaker's defaults)
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

// keySettings are one cluster's settings: the pool's, with its Overrides
// applied; keys without overrides share the pool's.
type keySettings struct {
	maxWait     time.Duration
	dialTimeout time.Duration
	breaker     breaker.Settings
	isFailure   func(error) bool // breaker.IsFailure with its default applied
	maxDials    int64            // Options.MaxConcurrentDials
}

// settingsFor validates ov and applies it over o (defaults applied).
func (o *Options[K, C]) settingsFor(ov Overrides) (*keySettings, error) {
	if err := opt.FirstNegative("ForKey.", opt.F("MaxWait", ov.MaxWait),
		opt.F("DialTimeout", ov.DialTimeout)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := tooLong("ForKey.", ov.MaxWait, ov.DialTimeout); err != nil {
		return nil, err
	}
	s := &keySettings{maxWait: cmp.Or(ov.MaxWait, o.MaxWait), dialTimeout: cmp.Or(ov.DialTimeout, o.DialTimeout),
		breaker: o.Breaker, maxDials: o.MaxConcurrentDials}
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
