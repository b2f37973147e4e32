package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/clusterpool/clusterpool/internal/proptest"
)

// Random sequences of Allow / Done / Discard / time advance, on virtual
// time (see internal/proptest).
// Checked against a model of the documented state machine:
//   - transitions follow only the four edges of the package doc, from the
//     state the breaker was in;
//   - the breaker opens after exactly ConsecutiveFailures counted failures
//     in a row of tickets issued while closed (RateFailure outcomes neither
//     count nor break a row), or once the failures in the rate window
//     (rolling by a tenth of Window, made at the first failure, dropped by
//     a success once it holds none) are at least FailureRate of at least
//     MinRequests outcomes;
//   - the n-th open period in a row is base·2^(n-1) ±jitter, capped; exact at the cap;
//     a Trip's is exactly the cap;
//   - an open period is never shorter than the one before it until the
//     breaker closes (issue 23: a failed probe after a Trip, or jitter,
//     used to shorten it);
//   - while open it rejects until the period ends, then grants exactly one
//     probe at a time.
func TestBreakerProperties(t *testing.T) {
	proptest.Check(t, func(rt *rapid.T) {
		s := Settings{
			ConsecutiveFailures: uint32(rapid.IntRange(1, 4).Draw(rt, "failures")),
			OpenTimeout:         time.Duration(rapid.IntRange(1, 5).Draw(rt, "base_s")) * time.Second,
			Jitter:              rapid.SampledFrom([]float64{0, 0.1, 0.2, 0.5}).Draw(rt, "jitter"),
			FailureRate:         rapid.SampledFrom([]float64{0, 0.2, 0.5, 1}).Draw(rt, "rate"),
			MinRequests:         uint32(rapid.IntRange(0, 8).Draw(rt, "min_requests")),
			Window:              time.Duration(rapid.IntRange(0, 20).Draw(rt, "window_s")) * time.Second,
			DisableFailureRate:  rapid.Bool().Draw(rt, "no_rate"),
		}
		s.MaxOpenTimeout = s.OpenTimeout * time.Duration(rapid.IntRange(1, 20).Draw(rt, "cap_x"))
		s.DisableJitter = s.Jitter == 0
		b, err := New(s)
		if err != nil {
			rt.Fatalf("New(%+v): %v", s, err)
		}
		m := &model{s: b.Settings(), b: b}
		rt.Repeat(map[string]func(*rapid.T){
			"allow":   m.allow,
			"done":    m.done,
			"discard": m.discard,
			"trip":    m.trip,
			"rate":    m.rateFailure,
			"advance": func(rt *rapid.T) {
				time.Sleep(time.Duration(rapid.Int64Range(0, int64(3*s.MaxOpenTimeout)).Draw(rt, "sleep")))
			},
			"": m.check,
		})
	})
}

type ticket struct {
	t     Ticket
	gen   int // model generation (state changes) when issued
	probe bool
}

type model struct {
	s        Settings
	b        *Breaker
	state    State
	gen      int
	failures uint32 // counted failures in a row while closed
	window   *modelWindow
	opens    uint32
	last     time.Duration // the last open period since the breaker closed
	until    time.Time
	out      []ticket
}

func (m *model) allow(rt *rapid.T) {
	tk, err := m.b.Allow()
	tr, changed := tk.Transition()
	now := time.Now()
	switch m.state {
	case StateClosed:
		if err != nil || changed {
			rt.Fatalf("closed: Allow = %v, changed %v", err, changed)
		}
		m.out = append(m.out, ticket{t: tk, gen: m.gen})
	case StateOpen:
		if now.Before(m.until) {
			if !errors.Is(err, ErrOpen) {
				rt.Fatalf("open until %v, now %v: Allow = %v, want ErrOpen", m.until, now, err)
			}
			return
		}
		if err != nil || !changed || tr.From != StateOpen || tr.To != StateHalfOpen || !tk.Probe() {
			rt.Fatalf("open period over: Allow = %v, %+v (changed %v, probe %v), want the probe", err, tr, changed, tk.Probe())
		}
		m.transition(StateHalfOpen)
		m.out = append(m.out, ticket{t: tk, gen: m.gen, probe: true})
	case StateHalfOpen:
		if m.probeOut() {
			if !errors.Is(err, ErrOpen) {
				rt.Fatalf("half-open with the probe out: Allow = %v, want ErrOpen", err)
			}
			return
		}
		if err != nil || changed || !tk.Probe() {
			rt.Fatalf("half-open, probe discarded: Allow = %v (changed %v), want a new probe", err, changed)
		}
		m.out = append(m.out, ticket{t: tk, gen: m.gen, probe: true})
	}
}

func (m *model) probeOut() bool {
	for _, t := range m.out {
		if t.probe && t.gen == m.gen {
			return true
		}
	}
	return false
}

// take removes a random outstanding ticket; ok is false if there is none.
func (m *model) take(rt *rapid.T) (ticket, bool) {
	if len(m.out) == 0 {
		return ticket{}, false
	}
	i := rapid.IntRange(0, len(m.out)-1).Draw(rt, "ticket")
	t := m.out[i]
	m.out = append(m.out[:i], m.out[i+1:]...)
	return t, true
}

var outcomes = []error{nil, errors.New("connect: connection refused"), context.DeadlineExceeded, context.Canceled}

func (m *model) done(rt *rapid.T) {
	t, ok := m.take(rt)
	if !ok {
		return
	}
	err := rapid.SampledFrom(outcomes).Draw(rt, "outcome")
	tr, changed := t.t.Done(err)
	stale := t.gen != m.gen
	failure := err != nil && (m.s.IsFailure(err) || t.probe) // a probe always ends in a decision
	var want State
	wantChange := false
	switch {
	case stale, err != nil && !failure:
	case m.state == StateClosed && !failure:
		m.failures = 0
		m.windowAdd(false)
	case m.state == StateClosed:
		m.failures++
		if m.windowAdd(true) || m.failures >= m.s.ConsecutiveFailures {
			want, wantChange = StateOpen, true
		}
	case m.state == StateHalfOpen && failure:
		want, wantChange = StateOpen, true
	case m.state == StateHalfOpen:
		want, wantChange = StateClosed, true
	}
	if changed != wantChange || (changed && (tr.From != m.state || tr.To != want)) {
		rt.Fatalf("Done(%v) in %v (stale %v, failures %d): %+v changed %v; want change %v to %v",
			err, m.state, stale, m.failures, tr, changed, wantChange, want)
	}
	if !changed {
		return
	}
	m.opened(rt, want, tr, false)
}

// trip records a Trip (a request that hung) for a random outstanding
// ticket: it opens a closed breaker at once, re-opens a half-open one, and
// the period is exactly MaxOpenTimeout.
func (m *model) trip(rt *rapid.T) {
	t, ok := m.take(rt)
	if !ok {
		return
	}
	tr, changed := t.t.Record(Trip)
	wantChange := t.gen == m.gen && m.state != StateOpen
	if changed != wantChange || (changed && (tr.From != m.state || tr.To != StateOpen)) {
		rt.Fatalf("Trip in %v (stale %v): %+v changed %v; want change %v to open",
			m.state, t.gen != m.gen, tr, changed, wantChange)
	}
	if changed {
		m.opened(rt, StateOpen, tr, true)
	}
}

// opened applies a transition to want (open or closed) to the model and
// checks the open period.
func (m *model) opened(rt *rapid.T, want State, tr Transition, trip bool) {
	if want == StateOpen {
		m.opens++
		m.checkOpenFor(rt, tr.OpenFor, trip)
		m.until = tr.At.Add(tr.OpenFor)
		m.last = tr.OpenFor
	} else {
		m.opens, m.last = 0, 0
	}
	m.transition(want)
}

func (m *model) discard(rt *rapid.T) {
	if t, ok := m.take(rt); ok {
		t.t.Discard()
	}
}

func (m *model) transition(to State) {
	m.state = to
	m.gen++
	m.failures = 0
	m.window = nil
}

// rateFailure records a RateFailure for a random outstanding ticket: it
// counts only in the window (a Failure for a probe).
func (m *model) rateFailure(rt *rapid.T) {
	t, ok := m.take(rt)
	if !ok {
		return
	}
	tr, changed := t.t.Record(RateFailure)
	var want State
	wantChange := false
	switch {
	case t.gen != m.gen:
	case m.state == StateHalfOpen:
		want, wantChange = StateOpen, true
	case m.state == StateClosed && m.windowAdd(true):
		want, wantChange = StateOpen, true
	}
	if changed != wantChange || (changed && (tr.From != m.state || tr.To != want)) {
		rt.Fatalf("RateFailure in %v (stale %v, window %+v): %+v changed %v; want change %v to %v",
			m.state, t.gen != m.gen, m.window, tr, changed, wantChange, want)
	}
	if changed {
		m.opened(rt, want, tr, false)
	}
}

// modelWindow is the rate window as documented: made at the first failure
// (its buckets age from then), rolling by a tenth of Window.
type modelWindow struct {
	start time.Time
	ages  []int64 // bucket of each outcome in the window
	fails []bool
}

// windowAdd adds an outcome of the closed state at now and reports
// whether the rate rule trips; a success drops a window left with no
// failure. Nothing while the rule is off.
func (m *model) windowAdd(failed bool) bool {
	if m.s.DisableFailureRate || (m.window == nil && !failed) {
		return false
	}
	if m.window == nil {
		m.window = &modelWindow{start: time.Now()}
	}
	w, bucket := m.window, m.s.Window/10
	age := int64(time.Since(w.start) / bucket)
	var ages []int64
	var fails []bool
	for i, a := range w.ages {
		if a > age-10 {
			ages, fails = append(ages, a), append(fails, w.fails[i])
		}
	}
	w.ages, w.fails = append(ages, age), append(fails, failed)
	n, f := m.windowCounts()
	if !failed && f == 0 {
		m.window = nil
	}
	return failed && n >= m.s.MinRequests && float64(f) >= m.s.FailureRate*float64(n)
}

// windowCounts is the window's outcomes and failures now.
func (m *model) windowCounts() (n, f uint32) {
	if m.window == nil {
		return 0, 0
	}
	age := int64(time.Since(m.window.start) / (m.s.Window / 10))
	for i, a := range m.window.ages {
		if a > age-10 {
			n++
			if m.window.fails[i] {
				f++
			}
		}
	}
	return n, f
}

// checkOpenFor checks the n-th open period against the documented bounds:
// never shorter than the last one, exactly the cap for a Trip, else the
// jittered nominal period (or the last one, if that is longer).
func (m *model) checkOpenFor(rt *rapid.T, d time.Duration, trip bool) {
	if d < m.last {
		rt.Fatalf("open period #%d = %v, shorter than the one before it (%v)", m.opens, d, m.last)
	}
	if trip {
		if d != m.s.MaxOpenTimeout {
			rt.Fatalf("open period #%d after a Trip = %v, want exactly %v", m.opens, d, m.s.MaxOpenTimeout)
		}
		return
	}
	if d == m.last {
		return // held at the last period
	}
	nominal := m.s.OpenTimeout
	for i := uint32(1); i < m.opens && nominal < m.s.MaxOpenTimeout; i++ {
		nominal *= 2
	}
	nominal = min(nominal, m.s.MaxOpenTimeout)
	if nominal == m.s.MaxOpenTimeout { // exact at the cap
		if d != nominal {
			rt.Fatalf("open period #%d = %v at the cap, want exactly %v", m.opens, d, nominal)
		}
		return
	}
	lo := time.Duration(float64(nominal) * (1 - m.s.Jitter))
	hi := min(time.Duration(float64(nominal)*(1+m.s.Jitter)), m.s.MaxOpenTimeout)
	if d < lo-1 || d > hi+1 || d > m.s.MaxOpenTimeout {
		rt.Fatalf("open period #%d = %v, want in [%v, %v] (base %v, cap %v, jitter %v)",
			m.opens, d, lo, hi, m.s.OpenTimeout, m.s.MaxOpenTimeout, m.s.Jitter)
	}
}

// check compares the breaker's Snapshot with the model. An open breaker
// whose period is over reports half-open: the next Allow is the probe.
func (m *model) check(rt *rapid.T) {
	snap := m.b.Snapshot()
	want := m.state
	if want == StateOpen && !time.Now().Before(m.until) {
		want = StateHalfOpen
	}
	if snap.State != want || snap.Opens != m.opens {
		rt.Fatalf("snapshot %+v, model state %v opens %d", snap, want, m.opens)
	}
	if want == StateOpen && !snap.OpenUntil.Equal(m.until) {
		rt.Fatalf("OpenUntil %v, want %v", snap.OpenUntil, m.until)
	}
	if m.state == StateClosed && snap.ConsecutiveFailures != m.failures {
		rt.Fatalf("ConsecutiveFailures %d, model %d", snap.ConsecutiveFailures, m.failures)
	}
	if n, f := m.windowCounts(); m.state == StateClosed && (snap.WindowRequests != n || snap.WindowFailures != f) {
		rt.Fatalf("window %d/%d failures, model %d/%d", snap.WindowFailures, snap.WindowRequests, f, n)
	}
}
