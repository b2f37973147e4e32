package pool

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// ClusterState's probe times follow every dial that ends and every outcome
// Report feeds the breaker; ProbeFailures goes on counting while the
// breaker is open, ConsecutiveFailures does not; Remove forgets them.
func TestStateProbeTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		if s := p.State("a"); !s.LastProbe.IsZero() || s.ProbeFailures != 0 {
			t.Fatalf("unknown key: %+v, want zero", s)
		}
		p.Connect("a")
		synctest.Wait()
		if s := p.State("a"); !s.LastProbe.IsZero() {
			t.Fatalf("dial in flight: LastProbe %v, want zero", s.LastProbe)
		}
		time.Sleep(time.Second)
		f.next(t).fail(errRefused)
		synctest.Wait()
		failedAt := time.Now()
		s := p.State("a")
		if !s.LastProbe.Equal(failedAt) || !s.LastProbeSuccess.IsZero() || s.ProbeFailures != 1 {
			t.Fatalf("after a failed dial: %+v, want LastProbe %v, no success, 1 failure", s, failedAt)
		}

		time.Sleep(time.Second)
		p.Connect("a")
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		okAt := time.Now()
		if s := p.State("a"); !s.Connected || !s.LastProbe.Equal(okAt) || !s.LastProbeSuccess.Equal(okAt) || s.ProbeFailures != 0 {
			t.Fatalf("after a dial succeeded: %+v, want connected, both times %v, 0 failures", s, okAt)
		}

		// Reported failures count until the breaker opens; after that the
		// open breaker takes no Report, but its failed probes count on.
		for i := range uint32(breaker.DefaultConsecutiveFailures) {
			time.Sleep(time.Second)
			p.Report("a", errRefused)
			if s := p.State("a"); s.ProbeFailures != i+1 || !s.LastProbe.Equal(time.Now()) || !s.LastProbeSuccess.Equal(okAt) {
				t.Fatalf("after %d reported failures: %+v", i+1, s)
			}
		}
		s = p.State("a")
		if s.Connected || s.ConsecutiveFailures != 0 || s.Opens == 0 {
			t.Fatalf("breaker did not open after %d failures: %+v", breaker.DefaultConsecutiveFailures, s)
		}
		time.Sleep(time.Until(s.NextProbe))
		synctest.Wait()
		f.next(t).fail(errRefused)
		synctest.Wait()
		if s := p.State("a"); s.ProbeFailures != breaker.DefaultConsecutiveFailures+1 || !s.LastProbe.Equal(time.Now()) {
			t.Fatalf("failed half-open probe: %+v, want %d failures at %v", s, breaker.DefaultConsecutiveFailures+1, time.Now())
		}

		// An Ignored outcome is not a probe.
		q := newPool(t, newFake(), Options[string, *client]{Breaker: breaker.Settings{IsFailure: func(error) bool { return false }}})
		q.Connect("b")
		synctest.Wait()
		q.Report("b", errors.New("not found"))
		if s := q.State("b"); !s.LastProbe.IsZero() || s.ProbeFailures != 0 {
			t.Fatalf("ignored outcome counted as a probe: %+v", s)
		}
		q.Remove("b")

		p.Remove("a")
		if s := p.State("a"); !s.LastProbe.IsZero() || s.ProbeFailures != 0 || !s.LastProbeSuccess.IsZero() {
			t.Fatalf("after Remove: %+v, want zero probe times", s)
		}
	})
}
