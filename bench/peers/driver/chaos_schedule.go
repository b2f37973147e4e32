package main

import (
	"math/rand/v2"
	"slices"
	"time"
)

// The chaos run's fault classes.
const (
	faultAPIServerStop    = "apiserver-stop"    // SIGSTOP a workload apiserver, SIGCONT after Length
	faultAPIServerRestart = "apiserver-restart" // kill it, start it again on the same port and etcd after Length
	faultBlackhole        = "blackhole"         // the cluster's proxy stalls every stream for Length
	faultReset            = "reset"             // the proxy resets every connection for Length
	faultFirstByte        = "first-byte"        // 10 s to each new connection's first byte, for Length
	faultTrickle          = "trickle"           // the apiserver's bytes trickle, for Length
	faultTokenRotate      = "token-rotate"      // a new token in the Secret; the old ones revoked Length later
	faultCertRotate       = "cert-rotate"       // a new client certificate in the Secret
	faultSecretDelete     = "secret-delete"     // the kubeconfig Secret deleted, restored after Length
	faultSecretGarbage    = "secret-garbage"    // the Secret's kubeconfig garbage, fixed after Length
	faultRecreate         = "cluster-recreate"  // the Cluster deleted, created again (same name) after Length
	faultAdd              = "cluster-add"       // a new Cluster
	faultInfraFlip        = "infra-flip"        // infrastructureProvisioned false, true again after Length
	faultMgmtRestart      = "mgmt-restart"      // the management apiserver killed, started again after Length
	faultManagerKill      = "manager-kill"      // the manager process killed and started again (once per run)
)

// chaosClass is a fault class with its length range.
type chaosClass struct {
	Name     string
	Min, Max time.Duration
}

// chaosClasses are the classes the schedule draws from (manager-kill is
// placed once, apart).
var chaosClasses = []chaosClass{
	{faultAPIServerStop, 5 * time.Second, 60 * time.Second},
	{faultAPIServerRestart, 5 * time.Second, 20 * time.Second},
	{faultBlackhole, 10 * time.Second, 60 * time.Second},
	{faultReset, 10 * time.Second, 60 * time.Second},
	{faultFirstByte, 10 * time.Second, 60 * time.Second},
	{faultTrickle, 10 * time.Second, 60 * time.Second},
	{faultTokenRotate, 5 * time.Second, 5 * time.Second},
	{faultCertRotate, 0, 0},
	{faultSecretDelete, 5 * time.Second, 30 * time.Second},
	{faultSecretGarbage, 5 * time.Second, 30 * time.Second},
	{faultRecreate, 5 * time.Second, 20 * time.Second},
	{faultAdd, 0, 0},
	{faultInfraFlip, 5 * time.Second, 30 * time.Second},
	{faultMgmtRestart, 3 * time.Second, 15 * time.Second},
}

// apiserverClasses target a workload apiserver (Target is its index);
// fleetClasses the whole fleet (Target -1); the others one Cluster (Target
// is its index; for cluster-add, the index it gets).
var (
	apiserverClasses = []string{faultAPIServerStop, faultAPIServerRestart}
	fleetClasses     = []string{faultMgmtRestart, faultManagerKill}
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
// until d, the classes from a shuffled bag of all of them (every class
// once before any comes again), each length from its class's range, on a
// target that no fault of the same kind holds then (an apiserver has one
// process fault at a time, a Cluster one fault of its own, the management
// apiserver one restart; a class without a free target waits in the bag);
// the manager-kill once, at a time in [d/4, d/2). m Clusters exist at the
// start; added ones get the next indexes and are no other fault's target.
// It depends on seed, m, k and d only.
func chaosSchedule(seed uint64, m, k int, d time.Duration) []fault {
	r := rand.New(rand.NewPCG(seed, 0x636861))
	busy := map[[2]int]time.Duration{} // {kind, target} → busy until
	var out, bag []fault
	next := m
	for at := time.Duration(0); at < d; at += between(r, 10*time.Second, 20*time.Second) {
		if len(bag) < len(chaosClasses) {
			bag = append(bag, shuffled(r)...)
		}
		for i, f := range bag {
			kind, n := targetKind(f.Class, m, k)
			if f.Class == faultAdd {
				f.Target = next
			} else if f.Target = freeTarget(r, busy, kind, n, at); f.Target < 0 {
				continue
			}
			if f.Class == faultAdd {
				next++
			}
			f.At = at
			busy[[2]int{kind, f.Target}] = f.end()
			if kind == 2 {
				f.Target = -1
			}
			out = append(out, f)
			bag = slices.Delete(bag, i, i+1)
			break
		}
	}
	kill := fault{Class: faultManagerKill, At: d/4 + between(r, 0, d/4), Target: -1}
	out = append(out, kill)
	slices.SortStableFunc(out, func(a, b fault) int { return int(a.At - b.At) })
	for i := range out {
		out[i].ID = i
	}
	return out
}

// shuffled returns one fault of each class in a random order, with its
// length drawn.
func shuffled(r *rand.Rand) []fault {
	out := make([]fault, len(chaosClasses))
	for i, c := range chaosClasses {
		out[i] = fault{Class: c.Name, Length: between(r, c.Min, c.Max)}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// targetKind is the kind of target of class (0 a Cluster, 1 a workload
// apiserver, 2 the fleet) and how many there are.
func targetKind(class string, m, k int) (kind, n int) {
	switch {
	case slices.Contains(apiserverClasses, class):
		return 1, k
	case slices.Contains(fleetClasses, class):
		return 2, 1
	}
	return 0, m
}

// freeTarget draws a target of kind among n that is not busy at at; -1 if
// none is free.
func freeTarget(r *rand.Rand, busy map[[2]int]time.Duration, kind, n int, at time.Duration) int {
	var free []int
	for t := range n {
		if busy[[2]int{kind, t}] <= at {
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
