package grayproxy

import (
	"math"
	"math/rand/v2"
	"sync"
)

// million is the spreader's unit: rates are kept in faults per million
// requests, so that the sum of many never drifts.
const million = 1_000_000

// spreader decides, request after request, which requests are faulted: a
// fraction rate of them, spread as evenly as the rate allows, in an order
// drawn from a seed. It is error diffusion with a random threshold: each
// request adds rate (in millionths) to what is owed, and a request is faulted once the
// owed amount reaches a threshold drawn between one half and one and a
// half, which keeps the faults of any prefix of n requests within two of
// n times rate. Faults in a row are capped at the fewest the rate allows,
// ceil(rate / (1 - rate)): never two in a row below one half, never three
// below two thirds (a rate of 0.6 is never three 500s in a row).
type spreader struct {
	mu    sync.Mutex
	rate  int64      // faults per million requests
	limit int        // most faults in a row; 0 for no limit (rate 1)
	owed  int64      // faults owed, in millionths
	run   int        // faults in a row so far
	rng   *rand.Rand // the thresholds and the coins
}

// newSpreader returns the spreader of rate in (0, 1] and seed.
func newSpreader(rate float64, seed uint64) *spreader {
	r := min(max(int64(math.Round(rate*million)), 1), million)
	s := &spreader{rate: r, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	if r < million {
		s.limit = int(math.Ceil(rate/(1-rate) - 1e-9)) // 2/3 is 2, not 3
	}
	return s
}

// next reports whether the next request is faulted and, if it is, a coin
// drawn from the seed (Errors picks 500 or 503 with it).
func (s *spreader) next() (fault, coin bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == 0 {
		return true, s.rng.IntN(2) == 1
	}
	s.owed += s.rate
	threshold := million/2 + s.rng.Int64N(million)
	if s.owed < threshold || s.run >= s.limit {
		s.run = 0
		return false, false
	}
	s.owed -= million
	s.run++
	return true, s.rng.IntN(2) == 1
}
