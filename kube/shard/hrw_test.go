package shard

import (
	"math"
	"slices"
	"testing"
)

func TestOwnerIgnoresOrderAndEmpty(t *testing.T) {
	keys := testKeys(300)
	m := members(5)
	rev := slices.Clone(m)
	slices.Reverse(rev)
	for _, k := range keys {
		if Owner(m, k) != Owner(rev, k) {
			t.Fatalf("%v: owner depends on the order of members", k)
		}
	}
	if Owner(nil, keys[0]) != "" {
		t.Fatal("owner among no members")
	}
}

// A membership change moves only the keys of the member that came or went,
// and shares are balanced.
func TestOwnerMovesOnlyTheChangedMembersKeys(t *testing.T) {
	keys := testKeys(benchClusters)
	for n := 2; n <= 8; n++ {
		before, after := members(n), members(n+1)
		joiner := after[n]
		share := map[string]int{}
		moved := 0
		for _, k := range keys {
			b, a := Owner(before, k), Owner(after, k)
			share[a]++
			if b != a {
				moved++
				if a != joiner {
					t.Fatalf("n=%d: %v moved from %s to %s, not to the joiner", n, k, b, a)
				}
			}
			// Leaving is the reverse: only the joiner's keys move back.
		}
		ideal := float64(len(keys)) / float64(n+1)
		for m, c := range share {
			if math.Abs(float64(c)-ideal) > 0.35*ideal {
				t.Errorf("n=%d: %s owns %d, ideal %.0f", n+1, m, c, ideal)
			}
		}
		if moved != share[joiner] {
			t.Fatalf("n=%d: moved %d, joiner owns %d", n, moved, share[joiner])
		}
	}
}

func BenchmarkOwner(b *testing.B) {
	m, k := members(4), testKeys(1)[0]
	for b.Loop() {
		Owner(m, k)
	}
}
