package pool

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// The timer loop fires timers in the order they are due, at their time,
// never a stopped one; it runs only while a timer is scheduled, and after
// close nothing fires or is scheduled.
func TestTimerLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		var tm timers
		tm.init(&wg)
		start := time.Now()
		var mu sync.Mutex
		var fired []int
		at := func(i int, d time.Duration) *timer {
			return tm.schedule(start.Add(d), func(*timer) {
				if got := time.Since(start); got != d {
					t.Errorf("timer %d fired after %v, want %v", i, got, d)
				}
				mu.Lock()
				fired = append(fired, i)
				mu.Unlock()
			})
		}
		at(3, 3*time.Second)
		at(1, time.Second)
		stopped := at(2, 2*time.Second)
		at(4, 4*time.Second)
		tm.stop(stopped)
		tm.stop(stopped) // twice: nothing
		time.Sleep(5 * time.Second)
		synctest.Wait()
		wg.Wait()
		if want := []int{1, 3, 4}; !slices.Equal(fired, want) {
			t.Fatalf("fired %v, want %v", fired, want)
		}
		tm.mu.Lock()
		idle := tm.running == nil
		tm.mu.Unlock()
		if !idle {
			t.Fatal("the loop runs with nothing scheduled")
		}
		at(5, 6*time.Second) // starts the loop again
		tm.close()
		if at(6, 7*time.Second) != nil {
			t.Fatal("scheduled after close")
		}
		time.Sleep(3 * time.Second)
		wg.Wait()
		if want := []int{1, 3, 4}; !slices.Equal(fired, want) {
			t.Fatalf("after close: fired %v, want %v", fired, want)
		}
	})
}

// probeBlocker is a SpanProcessor whose OnStart blocks on the half-open
// probe's dial span until release is closed.
type probeBlocker struct {
	entered chan struct{}
	release chan struct{}
}

func (b *probeBlocker) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	for _, a := range s.Attributes() {
		if a.Key == tracing.ProbeKey && a.Value.AsBool() {
			close(b.entered)
			<-b.release
		}
	}
}

func (*probeBlocker) OnEnd(sdktrace.ReadOnlySpan)      {}
func (*probeBlocker) Shutdown(context.Context) error   { return nil }
func (*probeBlocker) ForceFlush(context.Context) error { return nil }

// A timer's func runs on a goroutine of its own: while a span processor
// hangs in the span of cluster a's probe (started by the probe's timer),
// cluster b's dial deadline still fires on time.
func TestBlockedTimerHoldsUpNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bp := &probeBlocker{entered: make(chan struct{}), release: make(chan struct{})}
		f := newFake()
		f.stubborn.Store(true) // only the pool's deadline ends b's dial
		p := newPool(t, f, Options[string, *client]{DialTimeout: 2 * time.Second,
			Breaker:        breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, DisableJitter: true},
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp))})
		p.Connect("a")
		synctest.Wait()
		f.next(t).fail(errRefused) // a opens; its probe is due in 1s
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		p.Connect("b") // b's dial hangs; the pool ends it at 2.5s
		synctest.Wait()
		hung := f.next(t)
		time.Sleep(500 * time.Millisecond)
		<-bp.entered // a's probe span hangs from 1s on
		time.Sleep(1500*time.Millisecond + time.Nanosecond)
		synctest.Wait()
		if s := p.State("b"); s.Dialing || s.Breaker != breaker.StateOpen {
			t.Errorf("b at its dial deadline, a's probe span hanging: %+v; want the dial ended (a Trip)", s)
		}
		close(bp.release)
		synctest.Wait()
		hung.succeed() // the stubborn dialer returns: its client goes to OnClose
		f.next(t).succeed()
		synctest.Wait()
	})
}
