package kube

import (
	"cmp"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/opt"
	"github.com/clusterpool/clusterpool/internal/reqguard"
	"github.com/clusterpool/clusterpool/pool"
)

// Defaults of RequestOptions.
const (
	// DefaultMaxInFlight caps a cluster's counted requests in flight: with
	// controller-runtime's usual 10 workers, one hanging cluster holds at
	// most 3 of them, and only until the first-byte deadline or the breaker
	// opens. It is the breaker's default ConsecutiveFailures: one wave of
	// hung requests is enough to open the breaker, and no more is let in.
	DefaultMaxInFlight = 3
	// DefaultMinFirstByte is the floor of the learned first-byte deadline.
	DefaultMinFirstByte = 2 * time.Second
	// DefaultMinLimit is the floor of a cluster's adaptive limit: a cluster
	// answering far slower than usual holds at most as many workers as one
	// that hangs (DefaultMaxInFlight).
	DefaultMinLimit = DefaultMaxInFlight
	// DefaultMaxLimit is the ceiling of a cluster's adaptive limit, where
	// it starts: above the workers a controller usually runs, so that a
	// cluster answering as usual is never held back.
	DefaultMaxLimit = 64
	// DefaultLatencyTolerance is how many times its usual latency a
	// cluster may answer in before its limit falls: a healthy apiserver's
	// latency varies by a few times with its load (the controller's own
	// bursts included), a gray failure's by ten.
	DefaultLatencyTolerance = 4.0
	// DefaultLatencyBaseline is how long a lasting change of a cluster's
	// latency takes to become its usual latency (the baseline's time
	// constant).
	DefaultLatencyBaseline = 10 * time.Minute
)

// Errors of requests on an established client (see RequestOptions); each is
// a *pool.Error, so pool.RetryAfter and Requeue work on them as on a Get's.
var (
	// ErrBulkheadFull: the cluster already has its cap of counted requests
	// in flight (RequestOptions.MaxInFlight once it stopped answering, or
	// its adaptive limit); the request was not sent. RetryAfter is when a
	// slot is sure to be free: the earliest first-byte deadline among the
	// requests holding the slots (RequestTimeout from its start for one
	// whose headers came); at the adaptive limit, no later than the
	// cluster's recent latency from now, when one has likely been answered.
	ErrBulkheadFull = reqguard.ErrBulkheadFull
	// ErrFirstByteTimeout: the cluster sent no response headers within the
	// request's first-byte deadline, and showed no sign of life meanwhile;
	// the request was canceled and counted as a failure of the cluster.
	ErrFirstByteTimeout = reqguard.ErrFirstByteTimeout
	// ErrClusterStopped: the Cluster was stopped (removed from the pool,
	// its credentials replaced, the pool closed) while its breaker is
	// closed; get a new client from the pool. A Cluster stopped because its
	// breaker opened answers pool.ErrCircuitOpen instead.
	ErrClusterStopped = reqguard.ErrClusterStopped
	// ErrThrottled: the cluster answered a counted request (a reconciler's,
	// through Client or Uncached) with 429 Too Many Requests (API Priority
	// and Fairness does, when the apiserver is overloaded) and a
	// Retry-After. The request ends at that answer, whatever its deadline,
	// and client-go does not retry it, so the reconciler's worker is free at
	// once: pool.RetryAfter gives the server's Retry-After (at most a
	// minute), after which Requeue requeues. A 429 holds back no other
	// request of the cluster, and back-pressure is not a failure: it never
	// counts toward opening the breaker. The informers' lists and watches
	// (exempt requests, on which no worker waits) are client-go's to wait
	// out and retry; a 429 without Retry-After is client-go's
	// TooManyRequests StatusError.
	//
	// ErrThrottled used to refuse, unsent, every counted request of the
	// cluster that began within a 429's Retry-After (it no longer does),
	// then to mean only a Retry-After that outlasted the request's deadline
	// (client-go slept the shorter ones in the worker; it no longer does).
	ErrThrottled = reqguard.ErrThrottled
)

// RequestOptions configures the protection of the requests sent on an
// established Cluster's clients, by a RoundTripper the Dialer installs in
// the cluster's REST config. It shares the cluster's breaker with the pool:
// once the breaker opens, the pool stops the Cluster (NewPool's OnClose),
// which cancels the requests in flight, and every later request fails at
// once with pool.ErrCircuitOpen and a RetryAfter of the next probe. Zero
// values are the defaults: every part on.
//
// Counted requests are those of Cluster.Client and Cluster.Uncached (and of
// any client built on Cluster.HTTPClient or Cluster.RESTConfig), except
// watches, logs, exec, attach, port-forward and proxy requests. The
// informers of Cluster.Cache and the Prober's probes are never counted nor
// given a first-byte deadline, so the bulkhead never starves the cache.
type RequestOptions struct {
	// Disable turns every part off: the transport is not installed.
	Disable bool
	// MaxInFlight caps the cluster's counted requests in flight once it
	// shows it is not answering (a first-byte timeout since its last
	// answer, or MaxInFlight requests late: docs/requests.md); one more
	// then fails at once with ErrBulkheadFull. A busy healthy cluster, or
	// one answering slower than usual but answering, is not throttled by
	// this cap (one answering far slower is by its adaptive limit,
	// MinLimit).
	// Zero means DefaultMaxInFlight (3).
	MaxInFlight int
	// DisableBulkhead removes the cap.
	DisableBulkhead bool
	// MinLimit and MaxLimit bound the cluster's adaptive limit on counted
	// requests in flight (a gradient limit, docs/requests.md): it starts
	// at MaxLimit and falls toward MinLimit while the cluster's reads
	// answer far slower than its usual latency (LatencyTolerance times
	// it), rising again once they answer as usual; one more request then
	// fails at once with ErrBulkheadFull. A cluster answering as usual
	// keeps MaxLimit. Zero means DefaultMinLimit (3) and DefaultMaxLimit
	// (64); MinLimit must not exceed MaxLimit.
	MinLimit, MaxLimit int
	// LatencyTolerance is how many times its usual latency a cluster's
	// reads may take before its limit falls; at least 1. Zero means
	// DefaultLatencyTolerance (4).
	LatencyTolerance float64
	// LatencyBaseline is how long a lasting change of the cluster's
	// latency takes to become its usual latency (the time constant of its
	// average). Zero means DefaultLatencyBaseline (10m).
	LatencyBaseline time.Duration
	// DisableLimit removes the adaptive limit.
	DisableLimit bool
	// MinFirstByte is the floor of a counted request's first-byte deadline
	// (four retransmission timeouts of the cluster's observed time to first
	// byte, at most DialerOptions.RequestTimeout). A request that waits
	// that long for its response headers while the cluster shows no sign of
	// life is canceled with ErrFirstByteTimeout (docs/requests.md). Zero
	// means DefaultMinFirstByte (2s).
	MinFirstByte time.Duration
	// DisableFirstByte removes the first-byte deadline (requests then end
	// at RequestTimeout, or when the breaker opens).
	DisableFirstByte bool
	// DisablePassiveHealth stops reporting outcomes to the breaker (only
	// dials, the Prober and pool.Report then feed it). Otherwise transport
	// errors, the guard's own deadlines (first byte, RequestTimeout) and
	// 5xx answers are failures, other answers successes (a 404, 409 or 403
	// is the cluster working); a 429 and a request its caller gave up on
	// (its cancel, its own shorter deadline) are not reported
	// (docs/requests.md). Off, a 429 is client-go's alone, which waits out
	// its Retry-After and retries it (no ErrThrottled).
	DisablePassiveHealth bool
	// MeterProvider receives the request metrics; nil means the otel
	// global.
	MeterProvider metric.MeterProvider
}

func (o *RequestOptions) validate() error {
	const prefix = "DialerOptions.Requests."
	if err := opt.FirstNegative(prefix, opt.F("MaxInFlight", o.MaxInFlight),
		opt.F("MinFirstByte", o.MinFirstByte), opt.F("MinLimit", o.MinLimit), opt.F("MaxLimit", o.MaxLimit),
		opt.F("LatencyTolerance", o.LatencyTolerance), opt.F("LatencyBaseline", o.LatencyBaseline)); err != nil {
		return err
	}
	if o.LatencyTolerance != 0 && !(o.LatencyTolerance >= 1) { // NaN too
		return fmt.Errorf("%sLatencyTolerance=%v must be at least 1", prefix, o.LatencyTolerance)
	}
	lo, hi := cmp.Or(o.MinLimit, DefaultMinLimit), cmp.Or(o.MaxLimit, DefaultMaxLimit)
	if lo > hi {
		return fmt.Errorf("%sMinLimit=%d must not exceed MaxLimit=%d", prefix, lo, hi)
	}
	return nil
}

func (o *RequestOptions) withDefaults() {
	opt.Default(&o.MaxInFlight, DefaultMaxInFlight)
	opt.Default(&o.MinFirstByte, DefaultMinFirstByte)
	opt.Default(&o.MinLimit, DefaultMinLimit)
	opt.Default(&o.MaxLimit, DefaultMaxLimit)
	opt.Default(&o.LatencyTolerance, DefaultLatencyTolerance)
	opt.Default(&o.LatencyBaseline, DefaultLatencyBaseline)
}

// guardSettings returns the reqguard settings of cluster key; report and
// state reach the pool the Dialer serves (nil before NewPool attached it).
func (o *RequestOptions) guardSettings(key client.ObjectKey, requestTimeout time.Duration, h *poolRef, m *reqguard.Metrics) reqguard.Settings {
	s := reqguard.Settings{Cluster: key.String(), MaxFirstByte: requestTimeout, Metrics: m,
		Stopped: func() error { return stoppedError(key, h.get()) }}
	if !o.DisableBulkhead {
		s.MaxInFlight = o.MaxInFlight
	}
	if !o.DisableLimit {
		s.Slow = reqguard.SlowLimit{Floor: o.MinLimit, Ceiling: o.MaxLimit, Tolerance: o.LatencyTolerance,
			Baseline: o.LatencyBaseline}
	}
	if !o.DisableFirstByte {
		s.MinFirstByte = o.MinFirstByte
	}
	if !o.DisablePassiveHealth {
		s.Report = func(err error) {
			if p := h.get(); p != nil {
				p.Report(key, err)
			}
		}
		s.ReportRequest = func(err error) {
			switch p := h.get().(type) {
			case requestReporter:
				p.ReportRequest(key, err)
			case nil:
			default:
				p.Report(key, err)
			}
		}
	}
	return s
}

// requestReporter is a ClusterPool that judges requests' outcomes by rate
// (pool.Pool.ReportRequest); one without it gets them as Reports.
type requestReporter interface {
	ReportRequest(key client.ObjectKey, err error)
}

// stoppedError is the error of a request on a stopped Cluster (see
// reqguard.StoppedError): while a probe is out, it ends within the readyz
// bound.
func stoppedError(key client.ObjectKey, p ClusterPool) error {
	var s pool.ClusterState
	if p != nil {
		s = p.State(key)
	}
	return reqguard.StoppedError(key.String(), s, DefaultReadyzTimeout)
}
