package grayproxy

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// The spreader faults a fraction rate of any prefix of the requests
// (within two), never more in a row than ceil(rate/(1-rate)), and the same
// seed gives the same sequence.
func TestSpreaderProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := rapid.SampledFrom([]float64{0.05, 0.2, 0.4, 0.5, 0.6, 2.0 / 3, 0.75, 0.9, 0.99}).Draw(t, "rate")
		seed := rapid.Uint64().Draw(t, "seed")
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		limit := int(math.Ceil(rate/(1-rate) - 1e-9))
		a, b := newSpreader(rate, seed), newSpreader(rate, seed)
		faults, run, most := 0, 0, 0
		for i := range n {
			f, c := a.next()
			if g, d := b.next(); g != f || d != c {
				t.Fatalf("request %d: two spreaders of seed %d differ", i, seed)
			}
			if f {
				faults++
				run++
				most = max(most, run)
			} else {
				run = 0
			}
			if d := float64(faults) - float64(i+1)*rate; math.Abs(d) > 2 {
				t.Fatalf("after %d requests: %d faults, want %.1f ± 2", i+1, faults, float64(i+1)*rate)
			}
		}
		if most > limit {
			t.Fatalf("%d faults in a row at rate %v, want at most %d", most, rate, limit)
		}
	})
}

// At 60 %, a long sequence has exactly the share of faults, no three in a
// row, and two seeds give different sequences (interleaved, not periodic).
func TestSpreaderSixtyPercent(t *testing.T) {
	seq := func(seed uint64) []bool {
		s := newSpreader(0.6, seed)
		out := make([]bool, 1000)
		for i := range out {
			out[i], _ = s.next()
		}
		return out
	}
	a, b := seq(1), seq(2)
	faults, differ := 0, 0
	for i := range a {
		if a[i] {
			faults++
		}
		if a[i] != b[i] {
			differ++
		}
		if i >= 2 && a[i] && a[i-1] && a[i-2] {
			t.Fatalf("three faults in a row ending at %d", i)
		}
	}
	if faults < 598 || faults > 602 {
		t.Fatalf("%d faults of 1000 at 0.6", faults)
	}
	if differ < 100 {
		t.Fatalf("seeds 1 and 2 differ in %d of 1000 requests: not drawn from the seed", differ)
	}
}

// Rate 1 faults every request; the coins are both sides.
func TestSpreaderAll(t *testing.T) {
	s := newSpreader(1, 7)
	heads := 0
	for range 200 {
		f, c := s.next()
		if !f {
			t.Fatal("rate 1 passed a request")
		}
		if c {
			heads++
		}
	}
	if heads < 50 || heads > 150 {
		t.Fatalf("%d heads of 200 coins", heads)
	}
}
