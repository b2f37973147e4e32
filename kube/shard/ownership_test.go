package shard

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	tD  = 4 * time.Second // LeaseDuration
	tRD = 3 * time.Second // RenewDeadline
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func testKeys(n int) []client.ObjectKey {
	keys := make([]client.ObjectKey, n)
	for i := range keys {
		keys[i] = client.ObjectKey{Namespace: "fleet", Name: fmt.Sprintf("c%03d", i)}
	}
	return keys
}

// roundAt is a round of 10 ms starting at ms, listing leases.
func roundAt(ms int, keys []client.ObjectKey, leases ...leaseInfo) round {
	return round{start: at(ms), listSent: at(ms + 5), end: at(ms + 10), leases: leases, keys: keys, keysOK: true}
}

// complete applies r as completed at its end.
func complete(o *ownership, r round) []Event { return o.completed(r, r.end) }

func li(holder, version string) leaseInfo {
	return leaseInfo{holder: holder, version: version, duration: tD}
}

func count(evs []Event, typ EventType) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func ownedBy(o *ownership, keys []client.ObjectKey, now time.Time) int {
	n := 0
	for _, k := range keys {
		if o.owns(k, now) {
			n++
		}
	}
	return n
}

func TestJoinWaitsLeaseDurationThenClaims(t *testing.T) {
	keys := testKeys(20)
	o := newOwnership("a", tRD, tD)
	if evs := complete(o, roundAt(0, keys, li("a", "1"))); len(evs) != 0 {
		t.Fatalf("first round: %v, want no change during the hand-over", evs)
	}
	if n := ownedBy(o, keys, at(3999)); n != 0 {
		t.Fatalf("owns %d keys before joinedAt+LeaseDuration", n)
	}
	if got, want := o.next(), at(3000); !got.Equal(want) {
		t.Fatalf("next = %v, want the fence %v (before the hand-over ends)", got, want)
	}
	// Renewals go on; the claim happens at joinedAt + LeaseDuration.
	for ms := 1000; ms <= 3000; ms += 1000 {
		if ms == 3000 {
			if got, want := o.next(), at(10).Add(tD); !got.Equal(want) {
				t.Fatalf("next = %v, want the end of the hand-over %v", got, want)
			}
		}
		if evs := complete(o, roundAt(ms, keys, li("a", fmt.Sprint(ms)))); len(evs) != 0 {
			t.Fatalf("round at %d ms: %v", ms, evs)
		}
	}
	evs := o.advance(at(4010))
	if count(evs, Gained) != len(keys) {
		t.Fatalf("claim: %d gained, want all %d (single member)", count(evs, Gained), len(keys))
	}
	for _, ev := range evs {
		if !ev.Time.Equal(at(4010)) {
			t.Fatalf("gained at %v, want %v", ev.Time, at(4010))
		}
	}
	if n := ownedBy(o, keys, at(4010)); n != len(keys) {
		t.Fatalf("owns %d, want %d", n, len(keys))
	}
}

// claimed returns an ownership of self that has claimed at 4010 ms, valid
// until 5000 ms, the others live until 4010 ms unless they renew.
func claimed(t *testing.T, self string, keys []client.ObjectKey, others ...string) *ownership {
	t.Helper()
	o := newOwnership(self, tRD, tD)
	leases := []leaseInfo{li(self, "s0")}
	for _, m := range others {
		leases = append(leases, li(m, m+"0"))
	}
	complete(o, roundAt(0, keys, leases...))
	leases[0].version = "s1"
	complete(o, roundAt(2000, keys, leases...))
	o.advance(at(4010))
	if !o.claiming {
		t.Fatal("not claiming after the hand-over")
	}
	return o
}

func TestFenceAtRenewDeadline(t *testing.T) {
	keys := testKeys(20)
	o := claimed(t, "a", keys)
	// Last completed round started at 2000 ms: valid until 5000 ms.
	if n := ownedBy(o, keys, at(4999)); n != len(keys) {
		t.Fatalf("owns %d before the fence, want %d", n, len(keys))
	}
	if n := ownedBy(o, keys, at(5000)); n != 0 {
		t.Fatalf("owns %d at the fence instant without advance, want 0", n)
	}
	evs := o.advance(at(5500)) // a late timer
	if count(evs, Lost) != len(keys) {
		t.Fatalf("fence: %d lost, want %d", count(evs, Lost), len(keys))
	}
	for _, ev := range evs {
		if !ev.Time.Equal(at(5000)) {
			t.Fatalf("lost at %v, want the fence instant %v", ev.Time, at(5000))
		}
	}
	// A round that completes after the fence starts a new term: hand over again.
	evs = complete(o, roundAt(7000, keys, li("a", "s2")))
	if len(evs) != 0 || ownedBy(o, keys, at(7010)) != 0 {
		t.Fatalf("rejoin: %v, owns %d; want nothing before the hand-over", evs, ownedBy(o, keys, at(7010)))
	}
	complete(o, roundAt(9000, keys, li("a", "s3")))
	if got := o.advance(at(11010)); count(got, Gained) != len(keys) {
		t.Fatalf("after the new hand-over: %d gained, want %d", count(got, Gained), len(keys))
	}
}

func TestLateRoundStartsNewTerm(t *testing.T) {
	keys := testKeys(10)
	o := claimed(t, "a", keys)
	// Started in time but answered after the validity ran out (5000 ms).
	r := round{start: at(4000), listSent: at(4500), end: at(5100), leases: []leaseInfo{li("a", "s9")}, keys: keys, keysOK: true}
	evs := complete(o, r)
	if count(evs, Lost) != len(keys) || !evs[0].Time.Equal(at(5000)) {
		t.Fatalf("late round: %v, want every key lost at 5000 ms", evs)
	}
	if ownedBy(o, keys, at(5100)) != 0 || !o.joinedAt.Equal(at(5100)) {
		t.Fatalf("late round must start a new term at 5100 ms, joinedAt %v", o.joinedAt)
	}
}

func TestJoinerTakesOnlyItsKeys(t *testing.T) {
	keys := testKeys(200)
	o := claimed(t, "a", keys, "b")
	before := map[client.ObjectKey]bool{}
	for _, k := range keys {
		before[k] = o.owns(k, at(4010))
	}
	evs := complete(o, roundAt(3500, keys, li("a", "s2"), li("b", "b1"), li("c", "c0")))
	if count(evs, Gained) != 0 {
		t.Fatalf("a joiner made a gain %v elsewhere", evs)
	}
	for _, ev := range evs {
		if !before[ev.Key] || Owner([]string{"a", "b", "c"}, ev.Key) != "c" {
			t.Fatalf("lost %v, which is not a key moving from a to c", ev.Key)
		}
	}
	if want := countOwner(keys, []string{"a", "b", "c"}, "c", before); count(evs, Lost) != want || want == 0 {
		t.Fatalf("lost %d, want %d (a's keys that c wins)", count(evs, Lost), want)
	}
}

func countOwner(keys []client.ObjectKey, members []string, m string, among map[client.ObjectKey]bool) int {
	n := 0
	for _, k := range keys {
		if among[k] && Owner(members, k) == m {
			n++
		}
	}
	return n
}

func TestExpiredMemberIsTakenOverAfterLeaseDuration(t *testing.T) {
	keys := testKeys(100)
	o := claimed(t, "a", keys, "b") // b's version b0 first seen at 10 ms
	// b never renews again: live while a list is sent before 4010 ms.
	evs := complete(o, roundAt(3990, keys, li("a", "s2"), li("b", "b0")))
	if count(evs, Gained) != 0 {
		t.Fatalf("took over b before its lease ran out: %v", evs)
	}
	evs = complete(o, roundAt(4010, keys, li("a", "s3"), li("b", "b0")))
	if g := count(evs, Gained); g == 0 || g != countOwner(keys, []string{"a", "b"}, "b", all(keys)) {
		t.Fatalf("after b expired: %d gained, want b's %d", g, countOwner(keys, []string{"a", "b"}, "b", all(keys)))
	}
	if got := o.members; len(got) != 1 || got[0] != "a" {
		t.Fatalf("members %v, want [a]", got)
	}
}

func TestRenewedMemberStaysAndDeletedLeaves(t *testing.T) {
	keys := testKeys(100)
	o := claimed(t, "a", keys, "b")
	// b renews (new version), first read at 4000 ms: live until 8000 ms.
	complete(o, roundAt(3990, keys, li("a", "s2"), li("b", "b1")))
	if evs := complete(o, roundAt(6000, keys, li("a", "s3"), li("b", "b1"))); count(evs, Gained) != 0 {
		t.Fatalf("took over a member that renewed: %v", evs)
	}
	// b deletes its Lease: its keys are taken at once.
	evs := complete(o, roundAt(6100, keys, li("a", "s4")))
	if count(evs, Gained) != countOwner(keys, []string{"a", "b"}, "b", all(keys)) {
		t.Fatalf("after b left: %d gained", count(evs, Gained))
	}
}

func TestStaleLeaseOfUnknownMemberCountsFromFirstSight(t *testing.T) {
	keys := testKeys(50)
	o := newOwnership("a", tRD, tD)
	// "z" crashed long ago, but a has never seen it: a cannot know how long
	// its version has stood, so it waits a full LeaseDuration.
	complete(o, roundAt(0, keys, li("a", "1"), li("z", "old")))
	if got := o.members; len(got) != 2 {
		t.Fatalf("members %v, want a and z", got)
	}
	complete(o, roundAt(2000, keys, li("a", "2"), li("z", "old")))
	o.advance(at(4010))
	if n, want := ownedBy(o, keys, at(4010)), countOwner(keys, []string{"a", "z"}, "a", all(keys)); n != want {
		t.Fatalf("owns %d, want a's %d while z may be live", n, want)
	}
	complete(o, roundAt(4020, keys, li("a", "3"), li("z", "old")))
	if n := ownedBy(o, keys, at(4030)); n != len(keys) {
		t.Fatalf("owns %d after z expired, want all %d", n, len(keys))
	}
}

func all(keys []client.ObjectKey) map[client.ObjectKey]bool {
	m := map[client.ObjectKey]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}
