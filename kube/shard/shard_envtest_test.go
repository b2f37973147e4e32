package shard

import (
	"context"
	"slices"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// TestReplicasOnRealApiserver runs 3, then 4 replicas (each a manager with
// its own identity and its own fault proxy in front of one management
// apiserver) over 60 Cluster objects, and checks ownership after a join, a
// crash that leaves the Lease behind, a partition and graceful stops; an
// observer checks that no two replicas ever owned one cluster at once.
func TestReplicasOnRealApiserver(t *testing.T) {
	needEnvtest(t)
	hc, err := rest.HTTPClientFor(mgmtCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer utilnet.CloseIdleConnectionsFor(hc.Transport) // its connections' goroutines must end before goleak looks
	admin, err := client.New(mgmtCfg, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	fleet, keys := createClusters(t, admin, 60)
	obs := newObserver()
	obsCtx, obsCancel := context.WithCancel(context.Background())
	defer obsCancel()
	r := make([]*replica, 4)
	for i := range 3 {
		r[i] = startReplica(t, fleet, "replica-"+string(rune('a'+i)), obs, obsCtx)
	}

	// Steady state: every cluster owned by exactly one replica.
	s1 := waitSteady(t, keys, r[0], r[1], r[2])
	for i := range 3 {
		if n := len(ownersOf(s1, r[i].name)); n == 0 {
			t.Fatalf("%s owns nothing", r[i].name)
		}
	}

	// A 4th replica takes its share, from the others, and nothing moves
	// between the others.
	r[3] = startReplica(t, fleet, "replica-d", obs, obsCtx)
	s2 := waitSteady(t, keys, r...)
	moved := 0
	for _, k := range keys {
		if s1[k] != s2[k] {
			moved++
			if s2[k] != r[3].name {
				t.Errorf("%v moved from %s to %s, not to the new replica", k, s1[k], s2[k])
			}
		}
	}
	if got := len(ownersOf(s2, r[3].name)); moved != got || moved == 0 || moved > len(keys)/2 {
		t.Fatalf("join moved %d clusters, the new replica owns %d; want about a quarter of %d", moved, got, len(keys))
	}
	t.Logf("join 3→4: %d of %d clusters moved (ideal 1/4: %d)", moved, len(keys), len(keys)/4)

	// A replica stops without deleting its Lease: the others own its
	// clusters again within LeaseDuration + hand-over.
	victim := ownersOf(s2, r[2].name)
	stopped := time.Now()
	r[2].stop(t, true)
	s3 := waitSteady(t, keys, r[0], r[1], r[3])
	var last time.Time
	for _, o := range []*replica{r[0], r[1], r[3]} {
		if g := obs.lastGain(victim, o.name); g.After(last) {
			last = g
		}
	}
	if took := last.Sub(stopped); took > 2*envD {
		t.Errorf("the stopped replica's clusters were owned again after %v, want ≤ LeaseDuration + hand-over = %v", took, 2*envD)
	} else {
		t.Logf("crash: %d clusters owned again after %v", len(victim), took.Round(time.Millisecond))
	}
	for _, k := range keys {
		if s2[k] != r[2].name && s3[k] != s2[k] {
			t.Errorf("%v moved from %s to %s although its owner stayed", k, s2[k], s3[k])
		}
	}

	// A replica cut off from the apiserver stops owning within its lease
	// duration; the others take over.
	cut := time.Now()
	r[1].proxy.SetMode(faultproxy.Hold)
	waitSteady(t, keys, r[0], r[3])
	end, open := obs.lastEnd(r[1].name)
	if open || end.Sub(cut) > envD {
		t.Errorf("cut-off replica owned until %v after the cut (still owning: %v), want ≤ %v", end.Sub(cut), open, envD)
	} else {
		t.Logf("partition: stopped owning %v after the cut", end.Sub(cut).Round(time.Millisecond))
	}
	// Healed, it rejoins (after a new hand-over).
	r[1].proxy.SetMode(faultproxy.Pass)
	waitSteady(t, keys, r[0], r[1], r[3])

	// Graceful stops delete the Leases; the crashed replica's stays.
	for _, i := range []int{0, 1, 3} {
		r[i].stop(t, false)
	}
	if got, want := leaseNames(t, admin, fleet), []string{group + "-" + r[2].name}; !slices.Equal(got, want) {
		t.Errorf("Leases left: %v, want only the crashed replica's %v", got, want)
	}
	obs.verify(t, obsCancel)
}
