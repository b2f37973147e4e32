package chaos

import (
	"math/rand/v2"
	"slices"
	"time"
)

// fault is one fault of the schedule.
type fault struct {
	ID     int           `json:"id"`
	Class  string        `json:"class"`
	At     time.Duration `json:"at_ns"`     // since the first fault's window opened
	Length time.Duration `json:"length_ns"` // until it is undone (0: nothing to undo)
	Target int           `json:"target"`
}

// end is when f is undone, since the window opened.
func (f fault) end() time.Duration { return f.At + f.Length }

// chaosSchedule draws the faults of a run: one every 10 to 20 s from 0
// until d, the classes from a shuffled bag of the registry's drawn ones
// (every class once before any comes again), each length from its class's
// range, on a target that no fault of the same kind holds then (an
// apiserver has one process fault at a time, a Cluster one fault of its
// own, the management planes one restart; a class without a free target
// waits in the bag); each class placed apart (manager-kill) once, at a
// time in [d/4, d/2). m Clusters exist at the start; added ones get the
// next indexes and are no other fault's target. It depends on seed, m, k,
// d and the registry only. A schedule is one for every plane: each fault
// is applied to all of them at once.
func chaosSchedule(seed uint64, m, k int, d time.Duration) []fault {
	r := rand.New(rand.NewPCG(seed, 0x636861))
	busy := map[[2]int]time.Duration{} // {kind, target} → busy until
	drawn := drawnClasses()
	var out, bag []fault
	next := m
	for at := time.Duration(0); at < d; at += between(r, 10*time.Second, 20*time.Second) {
		if len(bag) < len(drawn) {
			bag = append(bag, shuffled(r, drawn)...)
		}
		for i, f := range bag {
			kind, n := targetKind(f.Class, m, k)
			if kind == targetNew {
				f.Target = next
				next++
			} else if f.Target = freeTarget(r, busy, kind, n, at); f.Target < 0 {
				continue
			}
			f.At = at
			busy[[2]int{int(kind), f.Target}] = f.end()
			if kind == targetFleet {
				f.Target = -1
			}
			out = append(out, f)
			bag = slices.Delete(bag, i, i+1)
			break
		}
	}
	for _, c := range chaosClasses {
		if c.Apart {
			out = append(out, fault{Class: c.Name, At: d/4 + between(r, 0, d/4), Target: -1})
		}
	}
	slices.SortStableFunc(out, func(a, b fault) int { return int(a.At - b.At) })
	for i := range out {
		out[i].ID = i
	}
	return out
}

// shuffled returns one fault of each of classes in a random order, with
// its length drawn.
func shuffled(r *rand.Rand, classes []faultClass) []fault {
	out := make([]fault, len(classes))
	for i, c := range classes {
		out[i] = fault{Class: c.Name, Length: between(r, c.Min, c.Max)}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// targetKind is the kind of target of class (the registry's) and how many
// there are.
func targetKind(class string, m, k int) (kind faultTarget, n int) {
	c, _ := classOf(class) // the schedule draws from the registry only
	switch c.Target {
	case targetAPIServer:
		return targetAPIServer, k
	case targetFleet:
		return targetFleet, 1
	case targetNew:
		return targetNew, 0
	}
	return targetCluster, m
}

// freeTarget draws a target of kind among n that is not busy at at; -1 if
// none is free.
func freeTarget(r *rand.Rand, busy map[[2]int]time.Duration, kind faultTarget, n int, at time.Duration) int {
	var free []int
	for t := range n {
		if busy[[2]int{int(kind), t}] <= at {
			free = append(free, t)
		}
	}
	if len(free) == 0 {
		return -1
	}
	return free[r.IntN(len(free))]
}

// between draws a duration in [lo, hi], to the millisecond.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64((hi-lo)/time.Millisecond)+1))*time.Millisecond
}
