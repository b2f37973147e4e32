package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"pgregory.net/rapid"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/proptest"
)

// Dial outcomes of the property test's scripted dialer.
const (
	dialOK         = iota // succeeds after a delay below MaxWait·2
	dialErr               // fails after such a delay
	dialHang              // until its context ends (DialTimeout, Remove, Close)
	dialPanic             // panics at once
	dialSlow              // succeeds after a delay between MaxWait and DialTimeout
	dialIgnored           // fails with errIgnored, which the classifier does not count
	dialClassPanic        // fails with errClassPanic, on which the classifier panics
	dialNil               // returns a nil client and no error
	dialStuck             // ignores its context; returns a client 2·DialTimeout after it started
)

var (
	errIgnored    = errors.New("ignored by the classifier")
	errClassPanic = errors.New("the classifier panics on this")
)

// propIsFailure is the property test's classifier: it ignores errIgnored
// and panics on errClassPanic.
func propIsFailure(err error) bool {
	if errors.Is(err, errClassPanic) {
		panic("classifier bug")
	}
	return err != nil && !errors.Is(err, errIgnored) && !errors.Is(err, context.Canceled)
}

type plannedDial struct {
	kind  int
	delay time.Duration
}

// propDialer plays a plan of outcomes, the n-th dial of a key taking the
// n-th entry (so that a case replays the same way), and records the most
// dials it saw running at once, per key and in all.
type propDialer struct {
	*fakeDialer
	plan    []plannedDial
	closing atomic.Bool // Close began: no dialer may be called from now on
	late    atomic.Int32

	mu               sync.Mutex
	next             map[string]int
	running          map[string]int
	total            int
	maxKey, maxTotal int
}

func (d *propDialer) dial(ctx context.Context, key string) (*client, error) {
	if d.closing.Load() {
		d.late.Add(1)
	}
	d.mu.Lock()
	pd := d.plan[d.next[key]%len(d.plan)]
	d.next[key]++
	d.running[key]++
	d.total++
	d.maxKey, d.maxTotal = max(d.maxKey, d.running[key]), max(d.maxTotal, d.total)
	d.mu.Unlock()
	counted := true
	uncount := func() {
		d.mu.Lock()
		if counted {
			d.running[key]--
			d.total--
			counted = false
		}
		d.mu.Unlock()
	}
	defer uncount()
	switch pd.kind {
	case dialPanic:
		panic("scripted panic")
	case dialHang:
		<-ctx.Done()
		return nil, ctx.Err()
	case dialNil:
		return nil, nil
	case dialStuck:
		// Past its deadline the pool has settled the dial and freed its
		// slot: from then on it no longer counts against the bounds.
		// (A nanosecond early: at the deadline itself a new dial may start
		// before this goroutine runs.)
		dl, _ := ctx.Deadline()
		time.Sleep(time.Until(dl) - time.Nanosecond)
		uncount()
		time.Sleep(pd.delay)
		return d.newClient(key, d.n.Add(1)), nil
	}
	t := time.NewTimer(pd.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	switch pd.kind {
	case dialErr:
		return nil, errRefused
	case dialIgnored:
		return nil, errIgnored
	case dialClassPanic:
		return nil, errClassPanic
	}
	return d.newClient(key, d.n.Add(1)), nil
}

// getRecord is one Get of the property test and how it ended.
type getRecord struct {
	key      string
	bound    time.Duration // the longest it may take
	closed   bool          // the pool was closed before it started
	canceled bool          // its context was canceled before it started
	done     bool
	start    time.Time
	elapsed  time.Duration
	c        *client
	err      error
	retryAt  time.Time // of an ErrWaitTimeout
}

var propKeys = []string{"a", "b", "c"}

// Random sequences of Get (with no deadline, a deadline, or a canceled
// context), Report and ReportRequest (also right after Remove), Remove, Probe, Connect,
// Redial, Close and time advance, over a dialer whose dials succeed, fail, hang, panic, are slow,
// fail with an error the classifier ignores or panics on, return (nil,
// nil), or ignore their context; OnClose panics for every other client.
// On virtual time. Invariants, checked after every step and at the end:
//   - dials of one cluster running at once ≤ MaxConcurrentDials, across the
//     pool ≤ MaxTotalDials + MaxSlowDials (a dialer that ignores its
//     context and outlives its deadline no longer counts: the pool settled
//     its dial);
//   - a half-open breaker always has its probe out (every probe ends in a
//     decision); Report after Remove creates no state and no dial;
//   - no Get takes longer than min(MaxWait, its deadline) (exactly: virtual
//     time has no scheduling slack);
//   - every Get returns a client of its key, or a documented error;
//   - a cached client is never closed; an open breaker's next probe is
//     within MaxOpenTimeout;
//   - breaker transitions follow only legal edges (counted by the
//     transitions metric);
//   - an open period is never shorter than the one before it until the
//     breaker closes or Remove resets it (issue 23: a refused probe after
//     a hung dial used to shorten it; Redial keeps it);
//   - Connect never shortens an open breaker's backoff; Redial never keeps
//     the client nor forgets the cluster;
//   - no dial starts (no dialer is called) once Close began (issue 23:
//     dialers that honour ctx freed slots that started queued dials);
//   - with a SubscribeRequeue subscription open and the Gets marked by
//     Requeued (half the cases), an event of the key comes between a Get
//     sent away with ErrWaitTimeout and its RetryAt;
//   - after Close no semaphore permit is held, every client made was closed
//     exactly once, and no goroutine is left (the bubble would deadlock).
func TestPoolProperties(t *testing.T) {
	proptest.Check(t, func(rt *rapid.T) {
		ms := func(lo, hi int, label string) time.Duration {
			return time.Duration(rapid.IntRange(lo, hi).Draw(rt, label)) * time.Millisecond
		}
		opts := Options[string, *client]{
			MaxWait:            ms(1, 100, "max_wait_ms"),
			DialTimeout:        ms(200, 2000, "dial_timeout_ms"), // above MaxWait: slow dials fit between
			MaxConcurrentDials: int64(rapid.IntRange(1, 2).Draw(rt, "per_cluster")),
			MaxSlowDials:       int64(rapid.IntRange(1, 3).Draw(rt, "slow")),
			Breaker: breaker.Settings{
				IsFailure:           propIsFailure,
				ConsecutiveFailures: uint32(rapid.IntRange(1, 3).Draw(rt, "failures")),
				OpenTimeout:         ms(50, 1000, "open_ms"),
				DisableJitter:       rapid.Bool().Draw(rt, "no_jitter"),
			},
		}
		opts.MaxTotalDials = opts.MaxConcurrentDials + int64(rapid.IntRange(0, 3).Draw(rt, "extra_total"))
		opts.Breaker.MaxOpenTimeout = opts.Breaker.OpenTimeout * time.Duration(rapid.IntRange(1, 8).Draw(rt, "cap_x"))
		reader := sdkmetric.NewManualReader()
		opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		opts.OnClose = func(_ string, c *client) {
			c.closed.Add(1)
			if c.id%2 == 0 {
				panic("OnClose bug")
			}
		}

		d := &propDialer{fakeDialer: newFake(), running: map[string]int{}, next: map[string]int{}}
		for i := range 16 {
			pd := plannedDial{kind: rapid.IntRange(dialOK, dialStuck).Draw(rt, fmt.Sprint("dial", i))}
			switch pd.kind {
			case dialStuck:
				pd.delay = opts.DialTimeout // after its deadline
			case dialIgnored, dialClassPanic:
				pd.delay = time.Duration(rapid.Int64Range(0, int64(2*opts.MaxWait)).Draw(rt, "delay"))
			case dialOK, dialErr:
				pd.delay = time.Duration(rapid.Int64Range(0, int64(2*opts.MaxWait)).Draw(rt, "delay"))
			case dialSlow:
				pd.delay = time.Duration(rapid.Int64Range(int64(opts.MaxWait)+1, int64(opts.DialTimeout)-1).Draw(rt, "delay"))
			}
			d.plan = append(d.plan, pd)
		}
		p, err := New(d.dial, opts)
		if err != nil {
			rt.Fatalf("New: %v", err)
		}
		periods := watchOpenPeriods(p)
		defer p.Close()                                                                     // also when a check fails: the bubble must empty
		requeues := logRequeues(context.Background(), p, rapid.Bool().Draw(rt, "requeued")) // ends with Close
		var closeAt time.Time                                                               // the first Close
		markClose := func() {
			d.closing.Store(true) // every dial started so far reached its dialer (synctest.Wait)
			if closeAt.IsZero() {
				closeAt = time.Now()
			}
		}

		var mu sync.Mutex
		var gets []*getRecord
		closed := false
		rt.Repeat(map[string]func(*rapid.T){
			"get": func(rt *rapid.T) {
				g := &getRecord{key: rapid.SampledFrom(propKeys).Draw(rt, "key"), bound: opts.MaxWait, closed: closed}
				ctx, cancel := requeues.ctx(), context.CancelFunc(func() {})
				switch rapid.IntRange(0, 2).Draw(rt, "ctx") {
				case 1:
					dl := time.Duration(rapid.Int64Range(0, int64(2*opts.MaxWait)).Draw(rt, "deadline"))
					ctx, cancel = context.WithTimeout(ctx, dl)
					g.bound = min(g.bound, dl)
				case 2:
					ctx, cancel = context.WithCancel(ctx)
					cancel()
					g.canceled = true
				}
				mu.Lock()
				gets = append(gets, g)
				mu.Unlock()
				go func() {
					defer cancel()
					start := time.Now()
					c, err := p.Get(ctx, g.key)
					mu.Lock()
					g.done, g.start, g.elapsed, g.c, g.err = true, start, time.Since(start), c, err
					g.noteRetry()
					mu.Unlock()
				}()
			},
			"report": func(rt *rapid.T) {
				p.Report(rapid.SampledFrom(propKeys).Draw(rt, "key"),
					rapid.SampledFrom([]error{nil, errRefused, context.Canceled, errIgnored, errClassPanic}).Draw(rt, "err"))
			},
			"report-request": func(rt *rapid.T) {
				p.ReportRequest(rapid.SampledFrom(propKeys).Draw(rt, "key"),
					rapid.SampledFrom([]error{nil, errRefused, context.Canceled, errIgnored, errClassPanic}).Draw(rt, "err"))
			},
			"remove": func(rt *rapid.T) { p.Remove(rapid.SampledFrom(propKeys).Draw(rt, "key")) },
			"remove-report": func(rt *rapid.T) {
				k := rapid.SampledFrom(propKeys).Draw(rt, "key")
				p.Remove(k)
				for range opts.Breaker.ConsecutiveFailures {
					p.Report(k, errRefused)
					p.ReportRequest(k, errRefused)
				}
				if st := p.State(k); st.Known && (st.Breaker != breaker.StateClosed || st.ConsecutiveFailures != 0) {
					rt.Fatalf("Report after Remove(%s) changed its state: %+v", k, st)
				}
			},
			"probe":   func(rt *rapid.T) { p.Probe(rapid.SampledFrom(propKeys).Draw(rt, "key")) },
			"connect": func(rt *rapid.T) { checkConnect(rt, p, rapid.SampledFrom(propKeys).Draw(rt, "key")) },
			"redial":  func(rt *rapid.T) { checkRedial(rt, p, rapid.SampledFrom(propKeys).Draw(rt, "key")) },
			"close": func(rt *rapid.T) {
				if rapid.IntRange(0, 9).Draw(rt, "close?") == 0 { // rarely: the rest of the case runs closed
					markClose()
					p.Close()
					closed = true
				}
			},
			"advance": func(rt *rapid.T) {
				time.Sleep(time.Duration(rapid.Int64Range(0, int64(2*opts.DialTimeout)).Draw(rt, "sleep")))
			},
			"": func(rt *rapid.T) {
				synctest.Wait()
				d.checkNoneAfterClose(rt)
				checkDialBounds(rt, d, opts)
				mu.Lock()
				for _, g := range gets {
					if g.done {
						checkGet(rt, g)
					}
				}
				mu.Unlock()
				checkEntries(rt, p, opts)
				periods.check(rt)
			},
		})

		time.Sleep(opts.MaxWait) // every Get still waiting reaches its bound
		synctest.Wait()
		mu.Lock()
		for _, g := range gets {
			if !g.done {
				rt.Fatalf("Get(%s) still waiting after MaxWait", g.key)
			}
		}
		mu.Unlock()
		markClose()
		if err := p.Close(); err != nil && !errors.Is(err, ErrAbandoned) {
			rt.Fatalf("Close: %v", err)
		}
		time.Sleep(2 * opts.DialTimeout) // dialers that ignore their context return
		synctest.Wait()
		checkNoPermitLeak(rt, p)
		mu.Lock()
		requeues.checkComesBack(rt, gets, closeAt)
		mu.Unlock()
		d.checkClosedOnce(rt)
		checkTransitions(rt, reader)
		periods.check(rt)
		d.checkNoneAfterClose(rt)
	})
}

// checkNoneAfterClose fails if a dialer was called once Close began.
func (d *propDialer) checkNoneAfterClose(rt *rapid.T) {
	if n := d.late.Load(); n != 0 {
		rt.Fatalf("%d dials started after Close began", n)
	}
}

func checkDialBounds(rt *rapid.T, d *propDialer, opts Options[string, *client]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.maxKey > int(opts.MaxConcurrentDials) || d.maxTotal > int(opts.MaxTotalDials+opts.MaxSlowDials) {
		rt.Fatalf("dials at once: %d per cluster (max %d), %d in all (max %d+%d)",
			d.maxKey, opts.MaxConcurrentDials, d.maxTotal, opts.MaxTotalDials, opts.MaxSlowDials)
	}
}

// checkGet checks one finished Get against its bound and the documented
// errors.
func checkGet(rt *rapid.T, g *getRecord) {
	if g.elapsed > g.bound {
		rt.Fatalf("Get(%s) took %v, bound %v", g.key, g.elapsed, g.bound)
	}
	switch {
	case g.err == nil:
		if g.c == nil || g.c.key != g.key {
			rt.Fatalf("Get(%s) returned client %+v without error", g.key, g.c)
		}
		if g.closed { // a canceled context may still get a hit
			rt.Fatalf("Get(%s) returned a client after Close", g.key)
		}
	case g.closed && !errors.Is(g.err, ErrClosed):
		rt.Fatalf("Get(%s) after Close: %v, want ErrClosed", g.key, g.err)
	case errors.Is(g.err, context.Canceled):
		if !g.canceled {
			rt.Fatalf("Get(%s): context.Canceled without a canceled context", g.key)
		}
	case g.err == context.DeadlineExceeded: // the caller's own, returned as is
		if g.bound != 0 {
			rt.Fatalf("Get(%s): bare DeadlineExceeded with a deadline %v away", g.key, g.bound)
		}
	default:
		var pe *Error
		if !errors.As(g.err, &pe) || pe.Cluster != g.key {
			rt.Fatalf("Get(%s): undocumented error %T %v", g.key, g.err, g.err)
		}
		switch pe.Kind {
		case ErrWaitTimeout, ErrCircuitOpen, ErrClosed, ErrRemoved, ErrDialFailed:
		default:
			rt.Fatalf("Get(%s): unknown kind %v", g.key, pe.Kind)
		}
	}
}

// checkEntries: a cached client is open; an open breaker probes within
// MaxOpenTimeout.
func checkEntries(rt *rapid.T, p *Pool[string, *client], opts Options[string, *client]) {
	p.entries.Range(func(k, v any) bool {
		e := v.(*entry[string, *client])
		e.mu.Lock()
		err, ph := e.invariants(time.Now()), e.phase()
		e.mu.Unlock()
		if err != nil || ph == phaseGone {
			rt.Fatalf("cluster %s (%v): %v", k, ph, err)
		}
		return true
	})
	for _, k := range propKeys {
		if c, ok := p.Peek(k); ok && c.closed.Load() != 0 {
			rt.Fatalf("cluster %s: the cached client was closed", k)
		}
		st := p.State(k)
		if st.Breaker == breaker.StateHalfOpen && !st.Dialing {
			rt.Fatalf("cluster %s: half-open with no probe out (wedged): %+v", k, st)
		}
		if st.Breaker != breaker.StateOpen {
			continue
		}
		if until := time.Until(st.NextProbe); until <= 0 || until > opts.Breaker.MaxOpenTimeout {
			rt.Fatalf("cluster %s: open, next probe in %v (cap %v)", k, until, opts.Breaker.MaxOpenTimeout)
		}
	}
}
