// Package load runs the steady request load of bench/peers' scale runs and
// summarizes latencies. It links nothing but the standard library, so that
// the client-go floor (bench/peers/floor) and the controller-runtime peers
// measure themselves with the same code.
package load

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// The names under which a load window's summaries are reported (the
// figures' "timings"): every call, and the calls that failed.
const (
	GetName    = protocol.LoadGetName
	FailedName = protocol.LoadFailedName
)

// Dist summarizes one timing's samples, in milliseconds (bench/peers/protocol).
type Dist = protocol.Dist

// Summarize returns the summary of ds (the zero Dist when empty): the
// q-th percentile is the sample at index ⌊len·q/100⌋ of the sorted samples.
// It sorts ds in place.
func Summarize(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	at := func(q int) float64 { return ms(ds[min(len(ds)-1, len(ds)*q/100)]) }
	return Dist{N: len(ds), Mean: ms(sum) / float64(len(ds)), P50: at(50), P90: at(90), P99: at(99), Max: ms(ds[len(ds)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Result is one load window's latencies: of every call, and of the calls
// that failed (also in All).
type Result struct {
	All, Failed []time.Duration
}

// Dists returns r's summaries by name: GetName, and FailedName if a call
// failed.
func (r Result) Dists() map[string]Dist {
	out := map[string]Dist{GetName: Summarize(slices.Clone(r.All))}
	if len(r.Failed) > 0 {
		out[FailedName] = Summarize(slices.Clone(r.Failed))
	}
	return out
}

// Run calls get(ctx, k) for k = 0, 1, 2, … at rate calls per second for
// window, open loop: call k starts k/rate after the first, whether or not
// the calls before it ended (one that is late starts at once), so that a
// slow call shows in the latencies instead of slowing the load down. Each
// call's context ends after timeout; a call that returns an error, or
// returns after its timeout, failed. Run stops starting calls when ctx
// ends, and returns once every call it started has returned.
func Run(ctx context.Context, rate float64, window, timeout time.Duration, get func(ctx context.Context, k int) error) Result {
	var (
		mu  sync.Mutex
		res Result
		wg  sync.WaitGroup
	)
	if rate <= 0 || window <= 0 {
		return res
	}
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for k := 0; ; k++ {
		at := time.Duration(float64(k) / rate * float64(time.Second))
		if at >= window {
			break
		}
		t.Reset(time.Until(start.Add(at)))
		select {
		case <-ctx.Done():
			wg.Wait()
			return res
		case <-t.C:
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			began := time.Now()
			err := get(cctx, k)
			d := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			res.All = append(res.All, d)
			if err != nil || d > timeout {
				res.Failed = append(res.Failed, d)
			}
		})
	}
	wg.Wait()
	return res
}
