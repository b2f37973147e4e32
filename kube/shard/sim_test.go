package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The protocol under a simulated apiserver: a linearizable store of Leases,
// requests with random (sometimes very long) latencies that fail at
// RenewDeadline, replies lost after a write took effect, partitions, late
// timers, crashes that leave the Lease behind, graceful leaves and restarts
// under the same name. After every change of any replica's state, at most
// one replica may own each key: ownership only starts at such instants
// (between them it can only end, at a fence), so this checks every instant.

const simRI = 500 * time.Millisecond // RenewInterval

type simEvent struct {
	at  time.Time
	seq int
	fn  func()
}

type sim struct {
	t      *testing.T
	rng    *rand.Rand
	now    time.Time
	queue  []simEvent
	seq    int
	store  map[string]leaseInfo // holder -> lease
	ver    int
	keys   []client.ObjectKey
	reps   []*simReplica
	calm   time.Time // no faults from here on
	checks int
}

type simReplica struct {
	name        string
	o           *ownership
	up          bool
	incarnation int       // bumped on crash or leave: drops the old process's callbacks
	cutUntil    time.Time // requests sent before this fail
}

func (s *sim) after(d time.Duration, fn func()) {
	s.seq++
	ev := simEvent{at: s.now.Add(d), seq: s.seq, fn: fn}
	i, _ := slices.BinarySearchFunc(s.queue, ev, func(a, b simEvent) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	s.queue = slices.Insert(s.queue, i, ev)
}

// latency is a request's latency: mostly short, with a long tail.
func (s *sim) latency() time.Duration {
	if s.now.Before(s.calm) && s.rng.IntN(20) == 0 {
		return time.Duration(s.rng.IntN(4000)) * time.Millisecond
	}
	return time.Duration(1+s.rng.IntN(40)) * time.Millisecond
}

func (s *sim) faulty(p int) bool { return s.now.Before(s.calm) && s.rng.IntN(100) < p }

// round runs one renewal of r, as Sharder.renewal does, with a deadline of
// RenewDeadline from its start.
func (s *sim) round(r *simReplica) {
	inc := r.incarnation
	start := s.now
	deadline := start.Add(tRD)
	alive := func() bool { return r.up && r.incarnation == inc }
	fail := func() {
		s.after(max(deadline.Sub(s.now), 0), func() {
			if alive() {
				s.nextRound(r, start)
			}
		})
	}
	if start.Before(r.cutUntil) || s.faulty(3) {
		fail()
		return
	}
	s.after(s.latency(), func() { // the write reaches the store
		s.ver++
		s.store[r.name] = leaseInfo{holder: r.name, version: fmt.Sprint(s.ver), duration: tD}
		if s.faulty(3) { // the reply is lost
			fail()
			return
		}
		s.after(s.latency(), func() { // the reply, then the list request
			listSent := s.now
			s.after(s.latency(), func() { // the list is served
				leases := make([]leaseInfo, 0, len(s.store))
				for _, l := range s.store {
					leases = append(leases, l)
				}
				s.after(s.latency(), func() { // the list's reply
					if !alive() {
						return
					}
					if s.now.After(deadline) {
						s.nextRound(r, start)
						return
					}
					s.change(r, r.o.completed(round{start: start, listSent: listSent, end: s.now, leases: leases, keys: s.keys, keysOK: true}, s.now))
					s.nextRound(r, start)
				})
			})
		})
	})
}

func (s *sim) nextRound(r *simReplica, prevStart time.Time) {
	s.after(max(prevStart.Add(simRI).Sub(s.now), 0), func() {
		if r.up {
			s.round(r)
		}
	})
}

// change checks the invariant after r's state changed and schedules r's
// timer (late by up to 300 ms before the calm).
func (s *sim) change(r *simReplica, evs []Event) {
	s.check()
	if next := r.o.next(); !next.IsZero() {
		inc := r.incarnation
		late := time.Duration(0)
		if s.now.Before(s.calm) {
			late = time.Duration(s.rng.IntN(300)) * time.Millisecond
		}
		s.after(max(next.Sub(s.now), 0)+late, func() {
			if r.up && r.incarnation == inc {
				s.change(r, r.o.advance(s.now))
			}
		})
	}
	_ = evs
}

func (s *sim) check() {
	s.checks++
	for _, k := range s.keys {
		var owners []string
		for _, r := range s.reps {
			if r.up && r.o.owns(k, s.now) {
				owners = append(owners, r.name)
			}
		}
		if len(owners) > 1 {
			s.t.Fatalf("at %v: %v owned by %v", s.now.Sub(t0), k, owners)
		}
	}
}

func (s *sim) start(r *simReplica) {
	r.up = true
	r.incarnation++
	r.o = newOwnership(r.name, tRD, tD)
	s.round(r)
}

// fault applies a random fault to a random replica.
func (s *sim) fault() {
	r := s.reps[s.rng.IntN(len(s.reps))]
	switch s.rng.IntN(4) {
	case 0: // crash, Lease left behind
		if r.up {
			r.up = false
			r.incarnation++
		}
	case 1: // graceful leave: stop owning, then delete the Lease
		if r.up {
			r.o.fence(s.now)
			r.up = false
			r.incarnation++
			s.after(s.latency(), func() { delete(s.store, r.name) })
		}
	case 2: // partition
		r.cutUntil = s.now.Add(time.Duration(s.rng.IntN(8000)) * time.Millisecond)
	case 3: // (re)start under the same name
		if !r.up {
			s.start(r)
		}
	}
}

func runSim(t *testing.T, seed uint64) {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 7)), now: t0, store: map[string]leaseInfo{}, keys: testKeys(24)}
	end := t0.Add(60 * time.Second)
	s.calm = t0.Add(40 * time.Second)
	for i := range 4 {
		r := &simReplica{name: fmt.Sprintf("r%d", i)}
		s.reps = append(s.reps, r)
		s.after(time.Duration(s.rng.IntN(3000))*time.Millisecond, func() { s.start(r) })
	}
	for at := time.Second; at < 40*time.Second; at += time.Duration(500+s.rng.IntN(2500)) * time.Millisecond {
		s.after(at, s.fault)
	}
	s.after(41*time.Second, func() { // everyone up for the calm
		for _, r := range s.reps {
			if !r.up {
				s.start(r)
			}
		}
	})
	for len(s.queue) > 0 && s.queue[0].at.Before(end) {
		ev := s.queue[0]
		s.queue = s.queue[1:]
		s.now = ev.at
		ev.fn()
	}
	// After the calm every key has exactly one owner.
	for _, k := range s.keys {
		n := 0
		for _, r := range s.reps {
			if r.o.owns(k, s.now) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("seed %d: after 19 s without faults %v has %d owners", seed, k, n)
		}
	}
	if s.checks < 100 {
		t.Fatalf("seed %d: only %d checks", seed, s.checks)
	}
}

func TestSimNoDoubleOwnership(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runSim(t, seed) })
	}
}
