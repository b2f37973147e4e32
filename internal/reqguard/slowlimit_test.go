package reqguard

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

var slowTest = SlowLimit{Floor: 3, Ceiling: 64, Tolerance: 2, Baseline: time.Minute}

const ms = time.Millisecond

func TestNextLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit float64
		b, m  time.Duration
		want  float64
	}{
		{"as usual: rises by half a request", 10, 10 * ms, 10 * ms, 10.5},
		{"faster than usual: rises by half a request", 10, 10 * ms, 2 * ms, 10.5},
		{"within the tolerance: rises", 10, 10 * ms, 19 * ms, 10.5},
		{"at the ceiling: stays", 64, 10 * ms, 10 * ms, 64},
		{"just past the tolerance: falls a little", 40, 10 * ms, 25 * ms, 0.5*40 + 0.5*(0.8*40+1)},
		{"ten times slower: falls by a quarter", 64, 10 * ms, 100 * ms, 48.5},
		{"a thousand times slower: still a quarter (outlier filter)", 64, 10 * ms, 10 * time.Second, 48.5},
		{"ten times slower near the floor: the floor", 3.2, 10 * ms, 100 * ms, 3},
		{"at the floor: stays", 3, 10 * ms, 100 * ms, 3},
		{"no latency: as usual", 10, 10 * ms, 0, 10.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextLimit(slowTest, tc.limit, tc.b, tc.m); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("nextLimit(%v, b=%v, m=%v) = %v, want %v", tc.limit, tc.b, tc.m, got, tc.want)
			}
		})
	}
}

func TestNextBaseline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b, m    time.Duration
		windows int
		dt      time.Duration
		want    time.Duration
	}{
		{"first window: its median", 0, 12 * ms, 0, time.Hour, 12 * ms},
		{"warm-up: the mean", 10 * ms, 16 * ms, 2, time.Hour, 12 * ms},
		{"a twentieth of Baseline later: a twentieth of the way", 10 * ms, 110 * ms, 5, 3 * time.Second, 15 * ms},
		{"a whole Baseline later: an eighth of the way, at most", 10 * ms, 110 * ms, 5, 2 * time.Minute, 22500 * time.Microsecond},
		{"no time between windows: unchanged", 10 * ms, 110 * ms, 5, 0, 10 * ms},
		{"far faster than usual: down a tenth more", 100 * ms, 10 * ms, 5, 0, 90 * ms},
		{"a little faster: down by the weight only", 100 * ms, 60 * ms, 5, 3 * time.Second, 98 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextBaseline(slowTest, tc.b, tc.m, tc.windows, tc.dt); got != tc.want {
				t.Fatalf("nextBaseline(b=%v, m=%v, windows=%d, dt=%v) = %v, want %v", tc.b, tc.m, tc.windows, tc.dt, got, tc.want)
			}
		})
	}
}

// clocked feeds a gradient windows of samples, one window every step.
type clocked struct {
	g    gradient
	now  time.Time
	step time.Duration
}

// windows feeds n windows whose samples are each of samples in turn, and
// returns the cap after each window.
func (c *clocked) windows(n int, samples ...time.Duration) []int {
	var caps []int
	for range n {
		for i := range windowSamples {
			c.g = c.g.observe(slowTest, samples[i%len(samples)], c.now)
		}
		c.now = c.now.Add(c.step)
		caps = append(caps, c.g.cap(slowTest))
	}
	return caps
}

// A cluster ten times slower than its baseline: its limit falls at every
// window, to the floor within twenty windows, stays there, and recovers
// to the ceiling once its latency returns.
func TestSlowLimitFallsAndRecovers(t *testing.T) {
	c := &clocked{now: time.Unix(0, 0), step: 100 * ms}
	if caps := c.windows(warmupWindows, 10*ms); caps[len(caps)-1] != 64 {
		t.Fatalf("after the warm-up: %v, want the ceiling", caps)
	}
	caps := c.windows(20, 100*ms)
	for i := 1; i < len(caps) && caps[i-1] > 3; i++ {
		if caps[i] >= caps[i-1] {
			t.Fatalf("ten times slower: caps %v do not fall at every window", caps)
		}
	}
	if caps[len(caps)-1] != 3 {
		t.Fatalf("ten times slower: caps %v, want the floor 3 within 20 windows", caps)
	}
	if caps := c.windows(10, 100*ms); caps[len(caps)-1] != 3 {
		t.Fatalf("still slow: %v, want the floor held", caps)
	}
	caps = c.windows(130, 10*ms)
	if caps[0] != 3 || caps[1] != 4 || caps[len(caps)-1] != 64 {
		t.Fatalf("latency back to usual: caps %v, want rising from 3 by half a request a window to 64", caps)
	}
}

// A healthy cluster is never held back: medians within the tolerance,
// outliers in a minority of each window's samples (one stalled
// connection), and a first window slowed by connection setup leave the
// limit at its ceiling. Ten times its usual latency then lowers it.
func TestSlowLimitHealthyStaysAtCeiling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		warm    []time.Duration
		samples []time.Duration
	}{
		{"jitter within the tolerance", []time.Duration{10 * ms}, []time.Duration{10 * ms, 19 * ms, 5 * ms, 15 * ms}},
		{"three outliers in eight", []time.Duration{10 * ms}, []time.Duration{10 * ms, 2 * time.Second, 10 * ms, 2 * time.Second, 10 * ms, 2 * time.Second, 10 * ms, 10 * ms}},
		{"slow first answers", []time.Duration{100 * ms, 10 * ms}, []time.Duration{10 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clocked{now: time.Unix(0, 0), step: 10 * ms}
			c.windows(1, tc.warm[0])
			c.windows(warmupWindows-1, tc.warm[len(tc.warm)-1])
			for i, cp := range c.windows(200, tc.samples...) {
				if cp != 64 {
					t.Fatalf("window %d: cap %d, want the ceiling 64", i, cp)
				}
			}
			if caps := c.windows(10, 10*median(c.g.window)); caps[len(caps)-1] >= 64 {
				t.Fatalf("then ten times slower: caps %v, want falling", caps)
			}
		})
	}
}

// A stall of the caller's own process slows every request in flight, so
// a whole window: one such window among usual ones leaves the limit at its
// ceiling, however often it comes; two in a row lower it.
func TestSlowLimitIgnoresOneStalledWindow(t *testing.T) {
	c := &clocked{now: time.Unix(0, 0), step: 10 * ms}
	c.windows(warmupWindows, 10*ms)
	for i := range 50 {
		for _, cp := range append(c.windows(1, time.Second), c.windows(1, 10*ms)...) {
			if cp != 64 {
				t.Fatalf("stall %d: cap %d, want the ceiling 64", i, cp)
			}
		}
	}
	if caps := c.windows(2, time.Second); caps[0] != 64 || caps[1] >= 64 {
		t.Fatalf("two stalled windows in a row: caps %v, want the ceiling, then lower", caps)
	}
}

// A slowdown that lasts becomes the cluster's baseline, over about
// SlowLimit.Baseline whatever the number of windows: the limit then rises
// again.
func TestSlowLimitLastingSlowdownBecomesUsual(t *testing.T) {
	for _, step := range []time.Duration{100 * ms, time.Second} {
		c := &clocked{now: time.Unix(0, 0), step: step}
		c.windows(warmupWindows, 10*ms)
		slowFor := int(2 * time.Minute / step) // two time constants
		caps := c.windows(slowFor, 100*ms)
		if low := caps[slowFor/10]; low > 5 {
			t.Fatalf("step %v: cap %d a fifth of Baseline into the slowdown, want near the floor", step, low)
		}
		if last := caps[len(caps)-1]; last <= 5 {
			t.Fatalf("step %v: cap %d two Baselines into the slowdown, want risen (baseline %v)", step, last, c.g.baseline)
		}
	}
}

// read sends a Counted request on g that takes took to its headers.
func read(t *testing.T, g *Guard, took time.Duration) {
	t.Helper()
	_, f, err := g.Begin(context.Background(), Counted)
	if err != nil {
		t.Fatalf("a read: %v", err)
	}
	time.Sleep(took)
	f.FirstByte()
	f.End(nil)
}

// admit begins up to n Counted requests on g, until one is refused, and
// returns the admitted ones and the refusal.
func admit(g *Guard, n int) ([]*Flight, error) {
	var flights []*Flight
	for range n {
		_, f, err := g.Begin(context.Background(), Counted)
		if err != nil {
			return flights, err
		}
		flights = append(flights, f)
	}
	return flights, nil
}

// The Guard holds a slow cluster's Counted requests at its limit: one more
// fails at once with ErrBulkheadFull and a RetryAfter of the cluster's
// recent latency; Exempt requests are not held, nor is anything with the
// rule off.
func TestGuardSlowLimitHoldsSlowCluster(t *testing.T) {
	for _, on := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			s := Settings{MaxFirstByte: time.Minute}
			if on {
				s.Slow = slowTest
			}
			g, _ := newGuard(t, s)
			for range warmupWindows * windowSamples {
				read(t, g, 10*ms)
			}
			for range 20 * windowSamples {
				read(t, g, 100*ms)
			}
			flights, err := admit(g, 10)
			defer func() {
				for _, f := range flights {
					f.End(nil)
				}
			}()
			if !on {
				if err != nil || g.Limit() != 0 {
					t.Fatalf("rule off: %v, limit %d; want ten admitted", err, g.Limit())
				}
				return
			}
			if len(flights) != 3 || !errors.Is(err, ErrBulkheadFull) || g.Limit() != 3 {
				t.Fatalf("ten times slower: %d admitted, then %v (limit %d); want 3, then ErrBulkheadFull", len(flights), err, g.Limit())
			}
			if d, ok := pool.RetryAfter(err); !ok || d != 100*ms {
				t.Fatalf("RetryAfter = %v, %v; want the recent latency 100ms", d, ok)
			}
			_, f, err := g.Begin(context.Background(), Exempt)
			if err != nil {
				t.Fatalf("an exempt request at the limit: %v", err)
			}
			f.End(nil)
		})
	}
}

// Writes do not feed the rule: a write that waits long on a webhook says
// nothing of the cluster's speed.
func TestGuardSlowLimitIgnoresWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := newGuard(t, Settings{MaxFirstByte: time.Minute, Slow: slowTest})
		for i := range (warmupWindows + 20) * windowSamples {
			took, class := 10*ms, Counted
			if i >= warmupWindows*windowSamples {
				took, class = time.Second, CountedWrite
			}
			_, f, err := g.Begin(context.Background(), class)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(took)
			f.FirstByte()
			f.End(nil)
		}
		if l := g.Limit(); l != 64 {
			t.Fatalf("after slow writes: limit %d, want the ceiling 64", l)
		}
		for range 4 * windowSamples {
			_, f, _ := g.Begin(context.Background(), Counted)
			time.Sleep(time.Second)
			f.FirstByte()
			f.End(nil)
		}
		if l := g.Limit(); l >= 64 {
			t.Fatalf("after slow reads: limit %d, want below the ceiling", l)
		}
	})
}

func TestSlowLimitNormalized(t *testing.T) {
	for _, tc := range []struct{ in, want SlowLimit }{
		{SlowLimit{Floor: 3}, SlowLimit{}},
		{SlowLimit{Ceiling: 8}, SlowLimit{Floor: 1, Ceiling: 8, Tolerance: 1, Baseline: time.Nanosecond}},
		{SlowLimit{Floor: 9, Ceiling: 8, Tolerance: math.NaN(), Baseline: time.Second}, SlowLimit{Floor: 8, Ceiling: 8, Tolerance: 1, Baseline: time.Second}},
		{slowTest, slowTest},
	} {
		if got := tc.in.normalized(); got != tc.want {
			t.Errorf("%+v.normalized() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
