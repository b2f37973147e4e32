package reqguard

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// waitFor plays a request of class c that the cluster answers after
// latency, unless the guard cancels it first; it returns the error the
// caller sees and ends the flight as kube's transport does.
func waitFor(g *Guard, c Class, latency time.Duration) error {
	ctx, f, err := g.Begin(context.Background(), c)
	if err != nil {
		return err
	}
	select {
	case <-time.After(latency):
		f.FirstByte()
		f.End(nil)
		return nil
	case <-ctx.Done():
		err := f.Err(ctx.Err())
		f.End(err)
		return err
	}
}

// answerEvery answers a fast request every period until stop is closed.
func answerEvery(g *Guard, period time.Duration, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(period):
			_, f, err := g.Begin(context.Background(), Counted)
			if err != nil {
				return
			}
			f.FirstByte()
			f.End(nil)
		}
	}
}

// Issue 33: a request answered slowly while the same cluster answers
// others is not a hang: it outlives its first-byte deadline, is reported
// as the success it is, and its latency does not stretch the deadline of
// the next requests. With nothing else answering, the same request is cut
// at its deadline, as before.
func TestSlowAnswerWhileTheClusterAnswersOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := newGuard(t, Settings{MinFirstByte: time.Second, MaxFirstByte: time.Minute})
		stop := make(chan struct{})
		go answerEvery(g, 300*time.Millisecond, stop)
		if err := waitFor(g, Counted, 10*time.Second); err != nil {
			t.Fatalf("a 10 s answer while the cluster answers others every 300 ms: %v", err)
		}
		close(stop)
		synctest.Wait()
		for _, err := range r.list() {
			if err != nil {
				t.Fatalf("reported %v", err)
			}
		}
		if d := g.FirstByteDeadline(); d != time.Second {
			t.Errorf("deadline after the slow answer = %v, want the floor: a slow answer is not the cluster's latency", d)
		}
		start := time.Now()
		if err := waitFor(g, Counted, 10*time.Second); !errors.Is(err, ErrFirstByteTimeout) || time.Since(start) != time.Second {
			t.Fatalf("with nothing else answering: %v after %v, want ErrFirstByteTimeout after 1s", err, time.Since(start))
		}
	})
}

// probeCounter is a probe that answers after latency (never if < 0) and
// counts its calls.
type probeCounter struct {
	calls   atomic.Int32
	latency time.Duration
	err     error
}

func (p *probeCounter) probe(ctx context.Context) error {
	p.calls.Add(1)
	if p.latency < 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(p.latency):
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Issue 33: a write that waits on a webhook while nothing else is sent to
// the cluster is kept as long as the cluster answers the probe, sent once
// it has waited half its deadline, at most once per half deadline; a read
// is never given the probe's benefit.
func TestSlowWriteIsKeptWhileTheClusterAnswersTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := newGuard(t, Settings{MaxInFlight: 1, MinFirstByte: 2 * time.Second, MaxFirstByte: time.Minute})
		p := &probeCounter{latency: 5 * time.Millisecond}
		g.SetProbe(p.probe)
		for range 3 {
			if err := waitFor(g, CountedWrite, 10*time.Second); err != nil {
				t.Fatalf("a 10 s write to a cluster that answers its probe: %v", err)
			}
		}
		if n := p.calls.Load(); n < 3 || n > 3*11 {
			t.Errorf("%d probes for 30 s of slow writes, want one per second (half the deadline) at most", n)
		}
		for _, err := range r.list() {
			if err != nil {
				t.Fatalf("reported %v", err)
			}
		}
		if d := g.FirstByteDeadline(); d != 2*time.Second {
			t.Errorf("deadline after slow writes = %v, want the floor", d)
		}
		// The bulkhead does not hold a write the probe answered for.
		_, f, err := g.Begin(context.Background(), CountedWrite)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // past lateAfter, the probe answered at 1 s
		if !g.Responsive() {
			t.Error("a write waiting on a webhook of a cluster that answers its probe holds the bulkhead")
		}
		f.End(nil) // its caller gave up: no latency learned
		start := time.Now()
		if err := waitFor(g, Counted, 10*time.Second); !errors.Is(err, ErrFirstByteTimeout) || time.Since(start) != 2*time.Second {
			t.Fatalf("a read with only the probe answering: %v after %v, want ErrFirstByteTimeout after 2s", err, time.Since(start))
		}
	})
}

// A cluster that hangs every request, its probe included, or whose probe
// fails, has its writes cut at their deadline, as before; so has a
// cluster with no probe. Stop ends the probe in flight.
func TestHungWritesAreCutAtTheirDeadline(t *testing.T) {
	for name, probe := range map[string]*probeCounter{
		"probe hangs": {latency: -1}, "probe fails": {latency: time.Millisecond, err: errors.New("HTTP 500")}, "no probe": nil,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, r := newGuard(t, Settings{MinFirstByte: 2 * time.Second, MaxFirstByte: time.Minute})
				if probe != nil {
					g.SetProbe(probe.probe)
				}
				start := time.Now()
				if err := waitFor(g, CountedWrite, time.Minute); !errors.Is(err, ErrFirstByteTimeout) || time.Since(start) != 2*time.Second {
					t.Fatalf("a hung write: %v after %v, want ErrFirstByteTimeout after 2s", err, time.Since(start))
				}
				if got := r.list(); len(got) != 1 || !errors.Is(got[0], ErrFirstByteTimeout) {
					t.Fatalf("reported %v, want one timeout", got)
				}
				if probe != nil && probe.calls.Load() != 1 {
					t.Errorf("%d probes, want 1", probe.calls.Load())
				}
				_, f, _ := g.Begin(context.Background(), CountedWrite)
				time.Sleep(600 * time.Millisecond) // half the halved deadline: the probe goes out
				g.Stop()
				synctest.Wait() // the probe in flight, if any, has ended
				f.End(nil)
			})
		})
	}
}
